#include "hookhost/host/config.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <set>
#include <sstream>

#include "job/display_text.hpp"
#include "support/text.hpp"
#include "support/unique_fd.hpp"

namespace hookhost {
namespace fs = std::filesystem;

std::string ConfigSource::describe() const {
  if (origin.empty()) return "(default)";
  return line > 0 ? origin + ":" + std::to_string(line) : origin;
}

std::string JobConfig::where(const HookConfig& hook, const std::string& key) const {
  auto it = hook.key_sources.find(key);
  const ConfigSource& src = it != hook.key_sources.end() ? it->second : hook.section_source;
  return src.describe() + ": [hook." + hook.name + "]" + (key.empty() ? "" : " " + key) + ": ";
}

std::string JobConfig::where_workload(const std::string& key) const {
  auto it = workload_sources.find(key);
  std::string origin = it != workload_sources.end()
                           ? it->second.describe()
                           : (workload_section ? workload_section->describe()
                                               : (file ? file->string() : "(default)"));
  return origin + ": [workload]" + (key.empty() ? "" : " " + key) + ": ";
}

namespace {

// One key (or, with an empty key, a section header) with where it came from.
struct Entry {
  std::string section;
  std::string key;
  std::string value;
  ConfigSource source;
  ConfigSource section_source;  // the [section] header, or the --set that made the section
};

// The INI rule: spaces and tabs are the only blanks (other control characters are refused).
constexpr std::string_view kIniBlanks = " \t";

std::string trim_blanks(std::string_view s) {
  return std::string(trim(s, kIniBlanks));
}

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

bool repeatable(const std::string& section, const std::string& key) {
  return section == "run" && key == "plugin_dir";
}

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

// The INI grammar, strictly: every line is blank, a comment ('#' or ';' first), a [section] or
// 'key = value', the last two optionally followed by a comment (a space or tab, then ';' or '#');
// anything else is an error naming the line. (Boost's config-file parser cuts
// values at '#', reports no line numbers and lets a repeated key silently win.)
std::vector<Entry> parse_ini(const std::string& text, const std::string& origin) {
  std::string_view rest = text;
  if (rest.substr(0, 3) == "\xEF\xBB\xBF") rest.remove_prefix(3);  // a UTF-8 byte-order mark
  std::vector<Entry> entries;
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
      entries.push_back(Entry{section, "", "", here, here});
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
    if (!repeatable(section, key)) {
      auto [it, inserted] = key_lines.emplace(section + "\n" + key, n);
      if (!inserted)
        throw ConfigError(at + "given twice (first at line " + std::to_string(it->second) +
                              "); give each key once",
                          key);
    }
    entries.push_back(Entry{section, key, std::move(value), here, section_source});
  }
  return entries;
}

Entry parse_override(const std::string& text) {
  const auto eq = text.find('=');
  const std::string path = eq == std::string::npos ? "" : trim_blanks(text.substr(0, eq));
  const auto dot = path.rfind('.');
  const ConfigSource source{"--set " + display_text(text), 0};
  if (eq == std::string::npos || dot == std::string::npos || dot == 0 || dot + 1 == path.size())
    throw ConfigError(source.describe() +
                      ": expected SECTION.KEY=VALUE, e.g. --set hook.progress.every_n_secs=1 or "
                      "--set run.log_level=debug");
  Entry e{path.substr(0, dot), path.substr(dot + 1), trim_blanks(text.substr(eq + 1)), source,
          source};
  if (std::string problem = section_problem(e.section); !problem.empty())
    throw ConfigError(source.describe() + ": " + problem);
  if (!valid_name(e.key))
    throw ConfigError(source.describe() + ": [" + e.section + "] " + display_text(e.key) +
                          ": a key uses only " + kNameRule,
                      e.key);
  return e;
}

std::optional<bool> parse_bool(const std::string& v) {
  static const std::set<std::string> yes{"true", "yes", "on", "1"}, no{"false", "no", "off", "0"};
  if (yes.count(v)) return true;
  if (no.count(v)) return false;
  return std::nullopt;
}

// A relative path from a config file is taken from the file's folder, so a job file works from
// any current folder (cron); one from the command line is taken from the current folder.
fs::path config_path(const Entry& e, const std::optional<fs::path>& file) {
  fs::path value = e.value;
  if (file && e.source.line > 0 && value.is_relative()) return file->parent_path() / value;
  return value;
}

}  // namespace

namespace {

// A logger level, the same words in [run] and [hook.NAME] (spdlog's names).
std::string log_level(const Entry& e, const std::string& at) {
  static const std::set<std::string> levels{"trace", "debug",    "info", "warn",
                                            "error", "critical", "off"};
  if (!levels.count(e.value))
    throw ConfigError(at + "expected one of trace, debug, info, warn, error, critical, off; got '" +
                          display_text(e.value) + "'",
                      e.key);
  return e.value;
}

// A non-negative [run] integer in [low, high]; anything else names the range.
unsigned long long run_integer(const Entry& e, const std::string& at, unsigned long long low,
                               unsigned long long high, const char* note) {
  std::size_t used = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(e.value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != e.value.size() || e.value[0] == '-' || value < low || value > high)
    throw ConfigError(at + "must be an integer between " + std::to_string(low) + " and " +
                          std::to_string(high) + note + "; got '" + display_text(e.value) + "'",
                      e.key);
  return value;
}

// The isolation keys, the same in [run] (defaults) and [hook.NAME]. False for another key.
bool isolation_key(const Entry& e, const std::string& at, IsolationConfig& into) {
  if (e.key == "isolation") {
    if (e.value == "in_process") {
      into.isolation = Isolation::in_process;
    } else if (e.value == "process") {
      into.isolation = Isolation::process;
    } else {
      throw ConfigError(at + "expected in_process or process; got '" + display_text(e.value) + "'",
                        e.key);
    }
  } else if (e.key == "call_timeout_ms") {
    into.call_timeout_ms = run_integer(e, at, 0, 86400000, " (0: no limit)");
  } else if (e.key == "memory_limit_mb") {
    into.memory_limit_mb = run_integer(e, at, 0, 1048576, " (0: no limit)");
  } else if (e.key == "on_crash") {
    auto policy = parse_crash_policy(e.value);
    if (!policy)
      throw ConfigError(
          at + "expected restart, disable, stop or fail; got '" + display_text(e.value) + "'",
          e.key);
    into.on_crash = *policy;
  } else if (e.key == "max_restarts") {
    into.max_restarts = static_cast<uint32_t>(run_integer(e, at, 0, 1000, ""));
  } else if (e.key == "isolation_group") {
    // A plain name, so it reads back well in messages; empty means a runner of its own.
    const bool valid =
        e.value.size() <= 64 && std::all_of(e.value.begin(), e.value.end(), [](unsigned char c) {
          return std::isalnum(c) || c == '_' || c == '-' || c == '.';
        });
    if (!valid)
      throw ConfigError(at +
                            "expected a group name of at most 64 letters, digits, _, - or . "
                            "(or nothing, for a runner of its own); got '" +
                            display_text(e.value) + "'",
                        e.key);
    into.isolation_group = e.value;
  } else {
    return false;
  }
  return true;
}

// The trimmed items of a comma-separated value, empty ones included (the caller says why not).
std::vector<std::string> comma_items(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) items.push_back(trim_blanks(item));
  return items;
}

RankSelection parse_ranks(const Entry& e, const std::string& at) {
  RankSelection ranks;
  if (e.value == "chief") {
    ranks.kind = RankSelection::Kind::chief;
    return ranks;
  }
  if (e.value == "all") return ranks;
  ranks.kind = RankSelection::Kind::listed;
  for (const std::string& item : comma_items(e.value)) {
    int rank = -1;
    const char* end = item.data() + item.size();
    auto [ptr, ec] = std::from_chars(item.data(), end, rank);
    if (item.empty() || ec != std::errc() || ptr != end || rank < 0)
      throw ConfigError(at +
                            "expected chief, all, or a comma-separated list of ranks (integers "
                            ">= 0, 0 is the chief); got '" +
                            display_text(e.value) + "'",
                        e.key);
    ranks.listed.push_back(rank);
  }
  if (ranks.listed.empty())
    throw ConfigError(at + "expected chief, all, or a comma-separated list of ranks; got ''",
                      e.key);
  std::sort(ranks.listed.begin(), ranks.listed.end());
  ranks.listed.erase(std::unique(ranks.listed.begin(), ranks.listed.end()), ranks.listed.end());
  return ranks;
}

}  // namespace

bool RankSelection::includes(int rank) const {
  switch (kind) {
    case Kind::chief: return rank == 0;
    case Kind::all: return true;
    case Kind::listed: return std::binary_search(listed.begin(), listed.end(), rank);
  }
  return false;
}

std::string RankSelection::text() const {
  if (kind == Kind::chief) return "chief";
  if (kind == Kind::all) return "all";
  // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) on `"," + to_string(rank)`.
  std::string out;
  for (int rank : listed) {
    if (!out.empty()) out += ',';
    out += std::to_string(rank);
  }
  return out;
}

JobConfig load_job_config(const std::optional<fs::path>& file,
                          const std::vector<std::string>& overrides) {
  JobConfig cfg;
  cfg.file = file;
  std::vector<Entry> entries;
  if (file) entries = parse_ini(read_config_text(*file), display_text(file->string()));
  std::map<std::string, std::string> overridden;  // "section\nkey" -> the first --set of it
  for (const auto& text : overrides) {
    Entry e = parse_override(text);
    const std::string id = e.section + "\n" + e.key;
    auto [first, inserted] = overridden.emplace(id, e.source.origin);
    if (!inserted && !repeatable(e.section, e.key))
      throw ConfigError(e.source.describe() + ": [" + e.section + "] " + e.key +
                            ": given twice on the command line (first as " + first->second +
                            "); give it once",
                        e.key);
    entries.push_back(std::move(e));
  }

  // Overrides come after the file's entries, so they replace its values; the file's values are
  // still checked.
  bool plugin_dir_overridden = false;
  for (const Entry& e : entries) {
    const std::string at = e.source.describe() + ": [" + e.section + "] " + e.key + ": ";
    const bool is_override = e.source.line == 0;
    if (e.section == "run") {
      if (e.key.empty()) continue;
      if (e.key == "plugin_dir") {
        if (e.value.empty()) throw ConfigError(at + "must name a folder", e.key);
        if (is_override && !plugin_dir_overridden) cfg.plugin_dirs.clear();
        plugin_dir_overridden = plugin_dir_overridden || is_override;
        cfg.plugin_dirs.push_back(config_path(e, file));
      } else if (e.key == "run_dir") {
        if (e.value.empty()) throw ConfigError(at + "must not be empty", e.key);
        cfg.run_dir = config_path(e, file);
      } else if (e.key == "log_level") {
        cfg.log_level = log_level(e, at);
      } else if (e.key == "on_error") {
        auto policy = parse_policy(e.value);
        if (!policy)
          throw ConfigError(
              at + "expected " + policy_choices() + "; got '" + display_text(e.value) + "'", e.key);
        cfg.on_error = *policy;
      } else if (e.key == "max_state_mb") {
        // One instance's state_put limit; a checkpoint holds every instance's state.
        cfg.max_state_bytes = static_cast<std::size_t>(run_integer(e, at, 1, 4096, " (MiB)")) << 20;
      } else if (e.key == "checkpoint_dir") {
        // Kept as written: a relative folder belongs to the run directory, wherever that is.
        if (e.value.empty()) throw ConfigError(at + "must name a folder", e.key);
        if (e.value.size() > 4096) throw ConfigError(at + "is longer than 4096 bytes", e.key);
        cfg.checkpoint_dir = e.value;
      } else if (e.key == "keep_checkpoints") {
        cfg.keep_checkpoints =
            static_cast<uint32_t>(run_integer(e, at, 0, 1000000, " (0 keeps every checkpoint)"));
      } else if (e.key == "time_every_n_steps") {
        cfg.time_every_n_steps = static_cast<uint32_t>(
            run_integer(e, at, 1, 1000000, " (1 times every before_run and after_run call)"));
      } else if (isolation_key(e, at, cfg.isolation)) {
      } else if (e.key == "untrusted") {
        if (e.value == "in_process") {
          cfg.untrusted = Isolation::in_process;
        } else if (e.value == "process") {
          cfg.untrusted = Isolation::process;
        } else {
          throw ConfigError(
              at + "expected in_process or process; got '" + display_text(e.value) + "'", e.key);
        }
      } else if (e.key == "distributed") {
        if (e.value == "none") {
          cfg.distributed = Distribution::none;
        } else if (e.value == "mpi") {
          cfg.distributed = Distribution::mpi;
        } else {
          throw ConfigError(at +
                                "expected none (one process) or mpi (started with mpirun -np N); "
                                "got '" +
                                display_text(e.value) + "'",
                            e.key);
        }
        cfg.distributed_source = e.source;
      } else if (e.key == "collective_timeout_ms") {
        cfg.collective_timeout_ms = static_cast<uint32_t>(
            run_integer(e, at, 1, 86400000, " (how long hh.dist/1 waits for the other processes)"));
      } else if (e.key == "allow_insecure_plugins") {
        auto b = parse_bool(e.value);
        if (!b)
          throw ConfigError(at + "expected true or false; got '" + display_text(e.value) + "'",
                            e.key);
        cfg.allow_insecure_plugins = *b;
      } else if (e.key == "allowed_plugins") {
        cfg.allowed_plugins.clear();
        for (const std::string& id : comma_items(e.value)) {
          if (id.empty())
            throw ConfigError(at +
                                  "expected a comma-separated list of plugin ids; got an empty "
                                  "item in '" +
                                  display_text(e.value) + "'",
                              e.key);
          cfg.allowed_plugins.push_back(id);
        }
        if (cfg.allowed_plugins.empty())
          throw ConfigError(at + "must list at least one plugin id (leave the key out to allow "
                                 "every plugin)",
                            e.key);
      } else {
        throw ConfigError(
            at + "unknown key (the [run] keys are plugin_dir, run_dir, log_level, "
                 "on_error, max_state_mb, checkpoint_dir, keep_checkpoints, time_every_n_steps, "
                 "allow_insecure_plugins, allowed_plugins, isolation, isolation_group, "
                 "call_timeout_ms, memory_limit_mb, on_crash, max_restarts, "
                 "untrusted, distributed, collective_timeout_ms)",
            e.key);
      }
    } else if (e.section == "workload") {
      if (!cfg.workload_section || e.key.empty()) cfg.workload_section = e.section_source;
      if (e.key.empty()) continue;
      if (e.key == "name") {
        cfg.workload = e.value;
        cfg.workload_sources.insert_or_assign(e.key, e.source);
      } else {
        // The data file, like every path in a config file, is taken from the file's folder.
        const std::string value =
            e.key == "data" && !e.value.empty() ? config_path(e, file).string() : e.value;
        cfg.workload_params.erase(e.key);
        cfg.workload_params.emplace(e.key, value);
        cfg.workload_sources.insert_or_assign(e.key, e.source);
      }
    } else {  // hook.NAME: section_problem() accepted nothing else
      const std::string name = e.section.substr(5);
      auto it = std::find_if(cfg.hooks.begin(), cfg.hooks.end(),
                             [&](const HookConfig& h) { return h.name == name; });
      if (it == cfg.hooks.end()) {
        HookConfig h;
        h.name = name;
        h.plugin = name;
        h.section_source = e.section_source;
        cfg.hooks.push_back(std::move(h));
        it = std::prev(cfg.hooks.end());
      }
      HookConfig& hook = *it;
      if (e.key.empty()) continue;
      hook.key_sources.insert_or_assign(e.key, e.source);
      if (e.key == "plugin") {
        if (e.value.empty()) throw ConfigError(at + "must name a plugin id", e.key);
        hook.plugin = e.value;
      } else if (e.key == "enabled") {
        auto b = parse_bool(e.value);
        if (!b)
          throw ConfigError(at + "expected true or false; got '" + display_text(e.value) + "'",
                            e.key);
        hook.enabled = *b;
      } else if (e.key == "order") {
        int order = 0;
        const char* end = e.value.data() + e.value.size();
        auto [ptr, ec] = std::from_chars(e.value.data(), end, order);
        if (e.value.empty() || ec != std::errc() || ptr != end)
          throw ConfigError(at + "must be an integer between " + std::to_string(INT_MIN) + " and " +
                                std::to_string(INT_MAX) + "; got '" + display_text(e.value) + "'",
                            e.key);
        hook.order = order;
      } else if (e.key == "on_error") {
        auto policy = parse_policy(e.value);
        if (!policy)
          throw ConfigError(
              at + "expected " + policy_choices() + "; got '" + display_text(e.value) + "'", e.key);
        hook.on_error = *policy;
      } else if (isolation_key(e, at, hook.isolation)) {
      } else if (e.key == "ranks") {
        hook.ranks = parse_ranks(e, at);
      } else if (e.key == "sha256") {
        std::string hex = e.value;
        std::transform(hex.begin(), hex.end(), hex.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
          throw ConfigError(at +
                                "expected 64 hexadecimal digits (the output of 'sha256sum "
                                "PLUGIN.so'); got '" +
                                display_text(e.value) + "'",
                            e.key);
        hook.sha256 = hex;
      } else if (e.key == "log_level") {
        hook.log_level = log_level(e, at);
      } else {
        hook.params.erase(e.key);
        hook.params.emplace(e.key, e.value);
      }
    }
  }
  return cfg;
}

const char* isolation_name(Isolation isolation) {
  return isolation == Isolation::process ? "process" : "in_process";
}

}  // namespace hookhost
