// The job file's INI grammar and the --set overrides, read into entries that say where each came
// from. What the keys mean is config_keys.hpp's.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "hookhost/host/config.hpp"

namespace hookhost {

// One key (or, with an empty key, a section header) with where it came from.
struct ConfigEntry {
  std::string section;
  std::string key;
  std::string value;
  ConfigSource source;
  ConfigSource section_source;  // the [section] header, or the --set that made the section
};

// `s` without the INI blanks (spaces and tabs) at either end.
std::string trim_blanks(std::string_view s);

// Reads the whole config file, refusing anything but a regular file of at most kMaxConfigBytes
// (a FIFO or /dev/zero would block or never end).
std::string read_config_text(const std::filesystem::path& file);

// The INI grammar, strictly: every line is blank, a comment ('#' or ';' first), a [section] or
// 'key = value', the last two optionally followed by a comment (a space or tab, then ';' or '#');
// anything else is an error naming the line. A section or key given twice is refused (but for
// the keys that may repeat). (Boost's config-file parser cuts values at '#', reports no line
// numbers and lets a repeated key silently win.)
std::vector<ConfigEntry> parse_ini(const std::string& text, const std::string& origin);

// One --set SECTION.KEY=VALUE; the value is literal.
ConfigEntry parse_override(const std::string& text, const std::string& via = "--set");

}  // namespace hookhost
