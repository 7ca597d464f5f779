// Text helpers for hook messages.
#pragma once

#include <charconv>
#include <string>

namespace hookhost {

// A number as printf's %g (and a default std::ostream) prints it, e.g. in "invalid x=-1.5":
// 6 significant digits, no trailing zeros. Locale-independent.
inline std::string format_number(double value) {
  char buffer[32];  // the longest %g text, "-1.79769e+308", has 13 characters
  const auto result =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::general, 6);
  return std::string(buffer, result.ptr);
}

}  // namespace hookhost
