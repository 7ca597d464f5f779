#include "hookhost/host/config.hpp"

#include <algorithm>
#include <iterator>
#include <map>

#include "job/config_keys.hpp"
#include "job/ini_reader.hpp"
#include "support/display_text.hpp"

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

// The file's entries, then the overrides: an override replaces the file's value, yet the file's
// value is still checked.
std::vector<ConfigEntry> read_entries(const std::optional<fs::path>& file,
                                      const std::vector<std::string>& overrides) {
  std::vector<ConfigEntry> entries;
  if (file) entries = parse_ini(read_config_text(*file), display_text(file->string()));
  std::map<std::string, std::string> overridden;  // "section\nkey" -> the first --set of it
  for (const auto& text : overrides) {
    ConfigEntry e = parse_override(text);
    const std::string id = e.section + "\n" + e.key;
    auto [first, inserted] = overridden.emplace(id, e.source.origin);
    if (!inserted && !key_may_repeat(e.section, e.key))
      throw ConfigError(e.source.describe() + ": [" + e.section + "] " + e.key +
                            ": given twice on the command line (first as " + first->second +
                            "); give it once",
                        e.key);
    entries.push_back(std::move(e));
  }
  return entries;
}

// [workload]: its name, and that workload's parameters (checked when the job makes it).
void read_workload_entry(const ConfigEntry& e, const std::optional<fs::path>& file,
                         JobConfig& cfg) {
  if (!cfg.workload_section || e.key.empty()) cfg.workload_section = e.section_source;
  if (e.key.empty()) return;
  if (e.key == "name") {
    cfg.workload = e.value;
  } else {
    // The data file, like every path in a config file, is taken from the file's folder.
    const std::string value =
        e.key == "data" && !e.value.empty() ? config_path(e, file).string() : e.value;
    cfg.workload_params.erase(e.key);
    cfg.workload_params.emplace(e.key, value);
  }
  cfg.workload_sources.insert_or_assign(e.key, e.source);
}

// The hook an entry of [hook.NAME] belongs to, made at its first entry.
HookConfig& hook_of(const ConfigEntry& e, JobConfig& cfg) {
  const std::string name = e.section.substr(5);
  auto it = std::find_if(cfg.hooks.begin(), cfg.hooks.end(),
                         [&](const HookConfig& h) { return h.name == name; });
  if (it != cfg.hooks.end()) return *it;
  HookConfig& hook = cfg.hooks.emplace_back();
  hook.name = name;
  hook.plugin = name;
  hook.section_source = e.section_source;
  return hook;
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

namespace {

void apply_entries(const std::vector<ConfigEntry>& entries, JobConfig& cfg) {
  const std::optional<fs::path>& file = cfg.file;
  bool plugin_dir_overridden = false;
  for (const ConfigEntry& e : entries) {
    if (e.section == "workload") {
      read_workload_entry(e, file, cfg);
      continue;
    }
    // Otherwise [run] or [hook.NAME]: parse_ini() and parse_override() accept nothing else.
    HookConfig* hook = e.section == "run" ? nullptr : &hook_of(e, cfg);
    if (e.key.empty()) continue;
    if (hook) hook->key_sources.insert_or_assign(e.key, e.source);
    const std::string at = e.source.describe() + ": [" + e.section + "] " + e.key + ": ";
    if (const ConfigKey* key = find_config_key(e.section, e.key)) {
      key->read(KeyReading{e, at, file, cfg, hook, plugin_dir_overridden});
    } else if (hook) {  // the plugin's parameter, checked against its schema by the job
      hook->params.erase(e.key);
      hook->params.emplace(e.key, e.value);
    } else {
      throw ConfigError(
          at + "unknown key (the [run] keys are " + config_key_list(kRunSection) + ")", e.key);
    }
  }
}

}  // namespace

JobConfig load_job_config(const std::optional<fs::path>& file,
                          const std::vector<std::string>& overrides) {
  JobConfig cfg;
  cfg.file = file;
  apply_entries(read_entries(file, overrides), cfg);
  return cfg;
}

void apply_hook_overrides(JobConfig& cfg, const std::vector<std::string>& overrides,
                          const std::string& via) {
  std::vector<ConfigEntry> entries;
  for (const auto& text : overrides) {
    ConfigEntry e = parse_override(text, via);
    if (!e.section.starts_with("hook."))
      throw ConfigError(e.source.describe() + ": only [hook.NAME] keys change while a job runs",
                        e.key);
    entries.push_back(std::move(e));
  }
  apply_entries(entries, cfg);
}

const char* isolation_name(Isolation isolation) {
  return isolation == Isolation::process ? "process" : "in_process";
}

const char* confinement_name(Confinement confinement) {
  switch (confinement) {
    case Confinement::off: return "off";
    case Confinement::sandboxed: return "sandboxed";
    case Confinement::all_untrusted: return "all-untrusted";
    case Confinement::required: return "required";
  }
  return "?";
}

}  // namespace hookhost
