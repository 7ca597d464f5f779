// Small text helpers the host's messages and parsers share, so that one rule (what counts as blank,
// how a hook is named in a message) holds everywhere.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace hookhost {

// ASCII white space, as std::isspace sees it in the "C" locale.
inline constexpr std::string_view kWhiteSpace = " \t\r\n\v\f";

// `text` without the leading and trailing characters found in `blanks`.
inline std::string_view trim(std::string_view text, std::string_view blanks = kWhiteSpace) {
  const auto first = text.find_first_not_of(blanks);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(blanks) - first + 1);
}

// The items (anything a std::string_view can view) with `separator` between each two of them; ""
// for none.
template <typename Items>
std::string join(const Items& items, std::string_view separator) {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out.append(separator);
    out.append(std::string_view(item));
    first = false;
  }
  return out;
}

// The same for a list written in place: join({"a", "b"}, ", ").
inline std::string join(const std::vector<std::string>& items, std::string_view separator) {
  return join<std::vector<std::string>>(items, separator);
}

// How every message names a hook: "hook 'NAME' (plugin 'ID', FILE)", or without ", FILE" when
// `plugin_file` is empty.
inline std::string describe_hook(std::string_view instance, std::string_view plugin_id,
                                 std::string_view plugin_file = {}) {
  std::string out = "hook '";
  out.append(instance).append("' (plugin '").append(plugin_id).append("'");
  if (!plugin_file.empty()) out.append(", ").append(plugin_file);
  return out.append(")");
}

// `text` into a C buffer of `capacity` bytes (> 0), cut to fit and always terminated: how the host
// fills a buffer the ABI hands it (an hh_error's message, a path a plugin asked for).
inline void copy_cut(std::string_view text, char* out, std::size_t capacity) {
  const std::size_t n = std::min(text.size(), capacity - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

// Text a plugin handed over (a C string, possibly unterminated within reach), for a message or the
// log: cut at `max` bytes (marked "..."); "" for null.
inline std::string bounded_text(const char* text, std::size_t max) {
  if (!text) return {};
  const std::size_t n = ::strnlen(text, max + 1);
  return n > max ? std::string(text, max) + "..." : std::string(text, n);
}

}  // namespace hookhost
