// JSON string literals for hooks that write JSON (JSON Lines logs, reports): no JSON library is
// needed for the one part that is easy to get wrong, the escaping of text a hook did not write.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hookhost {

namespace json_detail {

inline void append_u_escape(std::string& out, unsigned value) {
  static const char kHex[] = "0123456789abcdef";
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(value >> shift) & 0xF];
}

// The length of the valid UTF-8 sequence at `text[i]`, or 0 when there is none (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF).
inline std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  std::size_t length;
  unsigned min_code, code;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, min_code = 0x80, code = lead & 0x1Fu;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, min_code = 0x800, code = lead & 0x0Fu;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, min_code = 0x10000, code = lead & 0x07u;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3Fu);
  }
  if (code < min_code || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

}  // namespace json_detail

// Appends `text` to `out` as a quoted JSON string: '"' and '\' escaped, control characters as \n,
// \t, ... or \u00XX, and each byte that is not part of valid UTF-8 as \ufffd (the replacement
// character), so the result is valid JSON whatever the text holds.
inline void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const std::size_t length = json_detail::utf8_length(text, i);
      if (length == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out.append(text.substr(i, length));
        i += length;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20)
          json_detail::append_u_escape(out, c);
        else
          out += static_cast<char>(c);
    }
    ++i;
  }
  out += '"';
}

// The same, returned.
inline std::string json_string(std::string_view text) {
  std::string out;
  append_json_string(out, text);
  return out;
}

}  // namespace hookhost
