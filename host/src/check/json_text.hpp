// JSON string literals for the check's --json report: no JSON library is in the dependencies, and
// a report is only worth parsing when every string in it is valid JSON.
#pragma once

#include <string>
#include <string_view>

namespace hookhost::check {

// `text` as a quoted JSON string: '"' and '\' escaped, control characters as \n, \t, ... or
// \u00XX, and every byte that is not part of valid UTF-8 replaced by U+FFFD, so the result is
// valid JSON whatever a plugin wrote.
std::string json_quote(std::string_view text);

}  // namespace hookhost::check
