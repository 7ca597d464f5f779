#include "job/ini_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "job/config_keys.hpp"
#include "support/display_text.hpp"
#include "support/text.hpp"
#include "support/unique_fd.hpp"

namespace hookhost {
namespace fs = std::filesystem;

namespace {

// The INI rule: spaces and tabs are the only blanks (other control characters are refused).
constexpr std::string_view kIniBlanks = " \t";

}  // namespace

std::string trim_blanks(std::string_view s) {
  return std::string(trim(s, kIniBlanks));
}

namespace {

bool is_name_char(unsigned char c) {
  return std::isalnum(c) || c == '_' || c == '-';
}

bool valid_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), is_name_char);
}

const char* const kSections = "[run], [workload] and [hook.NAME]";
const char* const kNameRule = "letters, digits, '_' and '-'";

// Checks a section name; returns what is wrong with it, or nothing.
std::string section_problem(const std::string& section) {
  if (section == "run" || section == "workload") return {};
  if (section.rfind("hook.", 0) == 0) {
    const std::string name = section.substr(5);
    if (name.empty()) return "[hook.] has no instance name: write [hook.NAME]";
    // Appended, not "[" + text: GCC 12 at -O3 warns falsely (-Wrestrict) on that form.
    std::string problem = "[";
    if (!valid_name(name))
      return problem.append(display_text(section)).append("]: a hook instance name uses only ") +
             kNameRule;
    return {};
  }
  std::string problem = "unknown section [";
  return problem.append(display_text(section)).append("] (sections are ") + kSections + ")";
}

}  // namespace

// Reads the whole config file, refusing anything but a regular file of at most kMaxConfigBytes
// (a FIFO or /dev/zero would block or never end).
std::string read_config_text(const fs::path& file) {
  const std::string name = display_text(file.string());
  const UniqueFd f(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!f) throw ConfigError(name + ": cannot open the config file (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(f.get(), &st) != 0)
    throw ConfigError(name + ": cannot read the config file (" + std::strerror(errno) + ")");
  if (S_ISDIR(st.st_mode)) throw ConfigError(name + ": is a folder; --config takes an INI file");
  if (!S_ISREG(st.st_mode))
    throw ConfigError(name +
                      ": is not a regular file (a device, FIFO or socket); --config takes an INI "
                      "file");
  const auto too_big = [&] {
    return ConfigError(name + ": the config file is larger than " +
                       std::to_string(kMaxConfigBytes / 1024) + " KiB; is it the right file?");
  };
  if (static_cast<std::uintmax_t>(st.st_size) > kMaxConfigBytes) throw too_big();
  std::string text;
  char buffer[16384];
  for (;;) {
    const ssize_t n = ::read(f.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw ConfigError(name + ": cannot read the config file (" + std::strerror(errno) + ")");
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > kMaxConfigBytes) throw too_big();  // it grew while being read
  }
  return text;
}

namespace {

bool is_blank(char c) {
  return kIniBlanks.find(c) != std::string_view::npos;
}

// What to write instead of an ambiguous ';' or '#' (shown with the value it was found in).
std::string comment_rule(const std::string& raw) {
  return " (a comment after a value needs a space or tab before its ';' or '#': 'value  ; "
         "comment'); to keep the character in the value, quote it: \"" +
         display_text(raw) + "\"";
}

// The value after '=': plain text, or "..." with \" and \\ as escapes. Outside quotes, a ';' or
// '#' after a space or tab starts a comment (the common INI rule, so documented examples such as
// 'distributed = mpi   ; or none' read as meant); one with no space before it ('a;b') is refused,
// since readers disagree on whether it starts a comment. Quoting keeps both characters.
std::string parse_value(std::string_view after_eq, const std::string& at) {
  const std::string raw = trim_blanks(after_eq);
  if (raw.empty() || raw.front() != '"') {
    for (std::size_t i = 0; i < after_eq.size(); ++i) {
      if (after_eq[i] != ';' && after_eq[i] != '#') continue;
      if (i > 0 && is_blank(after_eq[i - 1])) return trim_blanks(after_eq.substr(0, i));
      throw ConfigError(at + "'" + after_eq[i] + "' in a value is ambiguous" + comment_rule(raw));
    }
    return raw;
  }
  std::string value;
  std::size_t i = 1;
  for (; i < raw.size() && raw[i] != '"'; ++i) {
    if (raw[i] == '\\' && i + 1 < raw.size() && (raw[i + 1] == '"' || raw[i + 1] == '\\')) ++i;
    value += raw[i];
  }
  if (i >= raw.size())
    throw ConfigError(at +
                      "the quoted value has no closing '\"' (write \"...\", with \\\" for a "
                      "quote inside)");
  const std::string_view after_quote = std::string_view(raw).substr(i + 1);
  const std::string tail = trim_blanks(after_quote);
  const bool comment =
      !tail.empty() && (tail[0] == ';' || tail[0] == '#') && is_blank(after_quote[0]);
  if (!tail.empty() && !comment)
    throw ConfigError(at + "text after the closing quote: '" + display_text(tail) +
                      "' (a comment after a value starts with a space or tab, then ';' or '#')");
  return value;
}

}  // namespace

std::vector<ConfigEntry> parse_ini(const std::string& text, const std::string& origin) {
  std::string_view rest = text;
  if (rest.substr(0, 3) == "\xEF\xBB\xBF") rest.remove_prefix(3);  // a UTF-8 byte-order mark
  std::vector<ConfigEntry> entries;
  std::map<std::string, int> section_lines;
  std::map<std::string, int> key_lines;  // "section\nkey" -> first line
  std::string section;
  ConfigSource section_source;
  int n = 0;
  while (!rest.empty()) {
    const std::size_t nl = std::min(rest.find('\n'), rest.size());
    std::string_view raw = rest.substr(0, nl);
    rest.remove_prefix(std::min(nl + 1, rest.size()));
    ++n;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);  // CRLF line endings
    const ConfigSource here{origin, n};
    const std::string at_line = here.describe() + ": ";
    for (std::size_t i = 0; i < raw.size(); ++i) {
      const auto c = static_cast<unsigned char>(raw[i]);
      if ((c >= 0x20 || c == '\t') && c != 0x7f) continue;
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", c);
      // Name the section and, when the character is in a value, its key (a NUL byte in a value
      // is the usual case: a file saved in UTF-16, or a binary file).
      const std::size_t eq = raw.find('=');
      const bool in_value = eq != std::string_view::npos && eq < i;
      const std::string key = in_value ? trim_blanks(raw.substr(0, eq)) : std::string();
      std::string place;
      if (!section.empty() && trim_blanks(raw).front() != '[') place = "[" + section + "]";
      if (in_value && valid_name(key)) place += (place.empty() ? "" : " ") + key;
      throw ConfigError(at_line + (place.empty() ? "" : place + ": ") + "control character " + hex +
                            (in_value ? " in the value" : " in the line") +
                            "; a config file is plain text (is it UTF-16, or no config file?)",
                        key);
    }
    std::string line = trim_blanks(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;

    if (line[0] == '[') {
      // "[run]   ; comment": the comment goes, the header stays.
      if (const auto close = line.find(']');
          close != std::string::npos && close + 1 < line.size()) {
        const std::string tail = trim_blanks(std::string_view(line).substr(close + 1));
        if (is_blank(line[close + 1]) && (tail[0] == ';' || tail[0] == '#')) line.erase(close + 1);
      }
      if (line.back() != ']')
        throw ConfigError(at_line + "malformed section header '" + display_text(line) +
                          "': expected " + kSections + " alone on the line");
      const std::string name = line.substr(1, line.size() - 2);
      if (name != trim_blanks(name) || name.find_first_of(" \t") != std::string::npos)
        throw ConfigError(at_line + "spaces in the section header '" + display_text(line) +
                          "': write it without spaces, e.g. [hook.NAME]");
      if (std::string problem = section_problem(name); !problem.empty())
        throw ConfigError(at_line + problem);
      auto [it, inserted] = section_lines.emplace(name, n);
      if (!inserted)
        throw ConfigError(at_line + "section [" + name + "] appears twice (first at line " +
                          std::to_string(it->second) +
                          "); instance names must be unique: merge the sections or rename one");
      section = name;
      section_source = here;
      entries.push_back(ConfigEntry{section, "", "", here, here});
      continue;
    }

    const auto eq = line.find('=');
    if (eq == std::string::npos)
      throw ConfigError(at_line + "expected 'key = value' or a [section], got '" +
                        display_text(line) + "'");
    const std::string key = trim_blanks(std::string_view(line).substr(0, eq));
    if (key.empty())
      throw ConfigError(at_line + (section.empty() ? "" : "[" + section + "]: ") +
                        "'=' with no key before it; write 'key = value'");
    if (section.empty())
      throw ConfigError(at_line + "key '" + display_text(key) +
                        "' is outside any section; put it under " + kSections);
    const std::string at = at_line + "[" + section + "] " + display_text(key) + ": ";
    if (!valid_name(key))
      throw ConfigError(at + "a key uses only " + kNameRule + " (no spaces)", key);
    std::string value = parse_value(std::string_view(line).substr(eq + 1), at);
    if (!key_may_repeat(section, key)) {
      auto [it, inserted] = key_lines.emplace(section + "\n" + key, n);
      if (!inserted)
        throw ConfigError(at + "given twice (first at line " + std::to_string(it->second) +
                              "); give each key once",
                          key);
    }
    entries.push_back(ConfigEntry{section, key, std::move(value), here, section_source});
  }
  return entries;
}

ConfigEntry parse_override(const std::string& text, const std::string& via) {
  const auto eq = text.find('=');
  const std::string path = eq == std::string::npos ? "" : trim_blanks(text.substr(0, eq));
  const auto dot = path.rfind('.');
  const ConfigSource source{via + " " + display_text(text), 0};
  if (eq == std::string::npos || dot == std::string::npos || dot == 0 || dot + 1 == path.size())
    throw ConfigError(source.describe() +
                      ": expected SECTION.KEY=VALUE, e.g. --set hook.progress.every_n_secs=1 or "
                      "--set run.log_level=debug");
  ConfigEntry e{path.substr(0, dot), path.substr(dot + 1), trim_blanks(text.substr(eq + 1)), source,
                source};
  if (std::string problem = section_problem(e.section); !problem.empty())
    throw ConfigError(source.describe() + ": " + problem);
  if (!valid_name(e.key))
    throw ConfigError(source.describe() + ": [" + e.section + "] " + display_text(e.key) +
                          ": a key uses only " + kNameRule,
                      e.key);
  return e;
}

}  // namespace hookhost
