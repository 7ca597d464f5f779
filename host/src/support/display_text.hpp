// Text from outside the host (file names, plugin ids, descriptions, messages, config values) made
// safe to print: a plugin or a file name must not be able to move the cursor, clear the terminal
// or forge log lines.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hookhost {

// The longest text display_text() keeps by default, in bytes.
inline constexpr std::size_t kDisplayTextLimit = 256;

// `text` with control characters escaped (\n, \r, \t, \e, else \xNN) and, past `limit` bytes, cut
// at a character boundary and ended with "...(N more bytes)". Printable text, including UTF-8,
// is unchanged.
std::string display_text(std::string_view text, std::size_t limit = kDisplayTextLimit);

}  // namespace hookhost
