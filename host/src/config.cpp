#include "hookhost/host/config.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace hookhost {
namespace po = boost::program_options;
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
  std::string origin =
      it != workload_sources.end() ? it->second.describe() : (file ? file->string() : "(default)");
  return origin + ": [workload]" + (key.empty() ? "" : " " + key) + ": ";
}

namespace {

struct Entry {
  std::string section;
  std::string key;
  std::string value;
  ConfigSource source;
  ConfigSource section_source;  // the [section] header, or the --set that made the section
};

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// Line numbers for sections and keys: Boost's parser reports values, not where they were. Also
// catches what the parser would merge silently (a section given twice) or reject without a line.
struct LineIndex {
  std::map<std::string, int> section_line;            // "hook.a" -> line
  std::map<std::string, std::vector<int>> key_lines;  // "hook.a.k" -> lines, in order
};

LineIndex index_lines(const std::string& text, const std::string& file) {
  LineIndex index;
  std::istringstream in(text);
  std::string raw, section;
  int n = 0;
  while (std::getline(in, raw)) {
    ++n;
    std::string line = trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']')
        throw ConfigError(file + ":" + std::to_string(n) + ": malformed section header '" + line +
                          "' (expected [name])");
      section = trim(line.substr(1, line.size() - 2));
      auto [it, inserted] = index.section_line.emplace(section, n);
      if (!inserted)
        throw ConfigError(file + ":" + std::to_string(n) + ": section [" + section +
                          "] appears twice (first at line " + std::to_string(it->second) +
                          "); instance names must be unique: merge the sections or rename one");
      continue;
    }
    const auto eq = line.find('=');
    if (eq == std::string::npos)
      throw ConfigError(file + ":" + std::to_string(n) + ": expected 'key = value', got '" + line +
                        "'");
    const std::string key = trim(line.substr(0, eq));
    if (section.empty())
      throw ConfigError(file + ":" + std::to_string(n) + ": key '" + key +
                        "' is outside any section; put it under [run], [workload] or [hook.NAME]");
    index.key_lines[section + "." + key].push_back(n);
  }
  return index;
}

std::vector<Entry> read_file_entries(const fs::path& file) {
  std::ifstream in(file);
  if (!in)
    throw ConfigError(file.string() + ": cannot open the config file (" + std::strerror(errno) +
                      ")");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const LineIndex index = index_lines(text, file.string());

  std::istringstream stream(text);
  po::options_description none;
  po::parsed_options parsed(&none);
  try {
    parsed = po::parse_config_file(stream, none, /*allow_unregistered=*/true);
  } catch (const po::error& e) {
    throw ConfigError(file.string() + ": " + e.what());
  }
  std::map<std::string, size_t> seen;
  std::vector<Entry> entries;
  for (const auto& option : parsed.options) {
    const std::string& full = option.string_key;
    Entry entry;
    // The section is everything up to the last dot that names a known section header.
    for (const auto& [section, _] : index.section_line)
      if (full.size() > section.size() + 1 && full.compare(0, section.size(), section) == 0 &&
          full[section.size()] == '.' && section.size() > entry.section.size())
        entry.section = section;
    entry.key = full.substr(entry.section.size() + 1);
    entry.value = option.value.empty() ? "" : option.value.front();
    entry.source.origin = file.string();
    entry.section_source = ConfigSource{file.string(), index.section_line.at(entry.section)};
    auto lines = index.key_lines.find(full);
    size_t occurrence = seen[full]++;
    if (lines != index.key_lines.end() && occurrence < lines->second.size())
      entry.source.line = lines->second[occurrence];
    entries.push_back(std::move(entry));
  }
  // Sections with no keys still exist (e.g. [hook.progress] with all defaults).
  for (const auto& [section, line] : index.section_line) {
    bool has_keys = std::any_of(entries.begin(), entries.end(),
                                [&](const Entry& e) { return e.section == section; });
    if (!has_keys)
      entries.push_back(Entry{section, "", "", ConfigSource{file.string(), line},
                              ConfigSource{file.string(), line}});
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.source.line < b.source.line; });
  return entries;
}

Entry parse_override(const std::string& text) {
  const auto eq = text.find('=');
  const std::string path = eq == std::string::npos ? "" : trim(text.substr(0, eq));
  const auto dot = path.rfind('.');
  if (eq == std::string::npos || dot == std::string::npos || dot == 0 || dot + 1 == path.size())
    throw ConfigError("--set " + text +
                      ": expected SECTION.KEY=VALUE, e.g. --set hook.progress.every_n_secs=1 or "
                      "--set run.log_level=debug");
  const ConfigSource source{"--set " + text, 0};
  return Entry{path.substr(0, dot), path.substr(dot + 1), trim(text.substr(eq + 1)), source,
               source};
}

std::optional<bool> parse_bool(const std::string& v) {
  static const std::set<std::string> yes{"true", "yes", "on", "1"}, no{"false", "no", "off", "0"};
  if (yes.count(v)) return true;
  if (no.count(v)) return false;
  return std::nullopt;
}

bool valid_instance_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-';
  });
}

}  // namespace

JobConfig load_job_config(const std::optional<fs::path>& file,
                          const std::vector<std::string>& overrides) {
  JobConfig cfg;
  cfg.file = file;
  std::vector<Entry> entries;
  if (file) entries = read_file_entries(*file);
  for (const auto& text : overrides) {
    Entry e = parse_override(text);
    // An override replaces every value the file gave for that key.
    entries.erase(
        std::remove_if(entries.begin(), entries.end(),
                       [&](const Entry& x) { return x.section == e.section && x.key == e.key; }),
        entries.end());
    entries.push_back(std::move(e));
  }

  std::set<std::string> run_keys_seen;
  for (const Entry& e : entries) {
    const std::string at = e.source.describe() + ": [" + e.section + "] " + e.key + ": ";
    if (e.section == "run") {
      if (e.key.empty()) continue;
      if (e.key != "plugin_dir" && !run_keys_seen.insert(e.key).second)
        throw ConfigError(at + "given more than once; give it once", e.key);
      if (e.key == "plugin_dir") {
        cfg.plugin_dirs.emplace_back(e.value);
      } else if (e.key == "run_dir") {
        if (e.value.empty()) throw ConfigError(at + "must not be empty", e.key);
        cfg.run_dir = e.value;
      } else if (e.key == "log_level") {
        static const std::set<std::string> levels{"trace", "debug",    "info", "warn",
                                                  "error", "critical", "off"};
        if (!levels.count(e.value))
          throw ConfigError(at +
                                "expected one of trace, debug, info, warn, error, critical, off; "
                                "got '" +
                                e.value + "'",
                            e.key);
        cfg.log_level = e.value;
      } else if (e.key == "on_error") {
        auto policy = parse_policy(e.value);
        if (!policy)
          throw ConfigError(at + "expected disable, stop or fail; got '" + e.value + "'", e.key);
        cfg.on_error = *policy;
      } else {
        throw ConfigError(at + "unknown key (the [run] keys are plugin_dir, run_dir, log_level, "
                               "on_error)",
                          e.key);
      }
    } else if (e.section == "workload") {
      if (e.key.empty()) continue;
      if (e.key == "name") {
        cfg.workload = e.value;
      } else {
        cfg.workload_params.emplace(e.key, e.value);
        cfg.workload_sources.emplace(e.key, e.source);
      }
    } else if (e.section.rfind("hook.", 0) == 0) {
      const std::string name = e.section.substr(5);
      if (!valid_instance_name(name))
        throw ConfigError(e.section_source.describe() + ": [" + e.section +
                          "]: a hook instance name uses only letters, digits, '_' and '-'");
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
      hook.key_sources.emplace(e.key, e.source);
      if (e.key == "plugin") {
        if (e.value.empty()) throw ConfigError(at + "must name a plugin id", e.key);
        hook.plugin = e.value;
      } else if (e.key == "enabled") {
        auto b = parse_bool(e.value);
        if (!b) throw ConfigError(at + "expected true or false; got '" + e.value + "'", e.key);
        hook.enabled = *b;
      } else if (e.key == "order") {
        try {
          size_t used = 0;
          hook.order = std::stoi(e.value, &used);
          if (used != e.value.size()) throw std::invalid_argument("trailing");
        } catch (const std::exception&) {
          throw ConfigError(at + "expected an integer; got '" + e.value + "'", e.key);
        }
      } else if (e.key == "on_error") {
        auto policy = parse_policy(e.value);
        if (!policy)
          throw ConfigError(at + "expected disable, stop or fail; got '" + e.value + "'", e.key);
        hook.on_error = *policy;
      } else {
        hook.params.emplace(e.key, e.value);
      }
    } else {
      throw ConfigError(e.section_source.describe() + ": unknown section [" + e.section +
                        "] (sections are [run], [workload] and [hook.NAME])");
    }
  }
  return cfg;
}

}  // namespace hookhost
