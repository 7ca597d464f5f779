// Log lines that cannot forge other lines or drive the terminal: the formatter every hookhost
// logger that writes to a terminal uses (the program's, the test harness's echo, the Python
// package's), so plugin text is escaped the same way everywhere.
#pragma once

#include <spdlog/pattern_formatter.h>

#include <memory>
#include <string>

namespace hookhost {

// The longest log message an escaped line keeps, in bytes (longer ones end "...(N more bytes)").
inline constexpr std::size_t kLogMessageLimit = 4096;

// spdlog's pattern formatter for `pattern`, in which the flag %* is the message with control
// characters escaped (\n, \r, \t, \e, else \xNN; UTF-8 unchanged) and cut at kLogMessageLimit.
// Hooks log through clones of the logger, so their texts, and any file name or value in a
// message, reach the terminal as text. Use %* where a plain pattern has %v.
std::unique_ptr<spdlog::formatter> escaped_log_formatter(const std::string& pattern);

}  // namespace hookhost
