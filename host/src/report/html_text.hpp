// Text from the run (hook names, tags, configuration values, reasons) made safe inside HTML and
// SVG, as element content and as a quoted attribute value.
#pragma once

#include <string>
#include <string_view>

namespace hookhost {

inline std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      case '\0': out += "\xEF\xBF\xBD"; break;  // U+FFFD: NUL is not allowed in HTML text
      default: out += c;
    }
  }
  return out;
}

}  // namespace hookhost
