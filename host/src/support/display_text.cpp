#include "support/display_text.hpp"

#include <cstdio>

namespace hookhost {

std::string display_text(std::string_view text, std::size_t limit) {
  std::size_t keep = text.size();
  if (keep > limit) {
    keep = limit;
    // Do not cut a UTF-8 sequence: back up over continuation bytes (10xxxxxx).
    while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  }
  std::string out;
  out.reserve(keep + 16);
  for (std::size_t i = 0; i < keep; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case 0x1b: out += "\\e"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char hex[5];
          std::snprintf(hex, sizeof hex, "\\x%02x", c);
          out += hex;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  if (keep < text.size()) out += "...(" + std::to_string(text.size() - keep) + " more bytes)";
  return out;
}

}  // namespace hookhost
