#include "job/config_keys.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <climits>
#include <set>
#include <sstream>
#include <vector>

#include "support/display_text.hpp"

namespace hookhost {
namespace fs = std::filesystem;

fs::path config_path(const ConfigEntry& e, const std::optional<fs::path>& file) {
  fs::path value = e.value;
  if (file && e.source.line > 0 && value.is_relative()) return file->parent_path() / value;
  return value;
}

namespace {

// ---- value checks shared by several keys ----

std::optional<bool> parse_bool(const std::string& v) {
  static const std::set<std::string> yes{"true", "yes", "on", "1"}, no{"false", "no", "off", "0"};
  if (yes.count(v)) return true;
  if (no.count(v)) return false;
  return std::nullopt;
}

bool boolean(const KeyReading& r) {
  auto b = parse_bool(r.entry.value);
  if (!b)
    throw ConfigError(r.at + "expected true or false; got '" + display_text(r.entry.value) + "'",
                      r.entry.key);
  return *b;
}

// A logger level, the same words in [run] and [hook.NAME] (spdlog's names).
std::string log_level(const ConfigEntry& e, const std::string& at) {
  static const std::set<std::string> levels{"trace", "debug",    "info", "warn",
                                            "error", "critical", "off"};
  if (!levels.count(e.value))
    throw ConfigError(at + "expected one of trace, debug, info, warn, error, critical, off; got '" +
                          display_text(e.value) + "'",
                      e.key);
  return e.value;
}

// A non-negative integer in [low, high]; anything else names the range.
unsigned long long run_integer(const ConfigEntry& e, const std::string& at, unsigned long long low,
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

Isolation isolation_value(const KeyReading& r) {
  if (r.entry.value == "in_process") return Isolation::in_process;
  if (r.entry.value == "process") return Isolation::process;
  throw ConfigError(
      r.at + "expected in_process or process; got '" + display_text(r.entry.value) + "'",
      r.entry.key);
}

FailurePolicy policy_value(const KeyReading& r) {
  auto policy = parse_policy(r.entry.value);
  if (!policy)
    throw ConfigError(
        r.at + "expected " + policy_choices() + "; got '" + display_text(r.entry.value) + "'",
        r.entry.key);
  return *policy;
}

// The trimmed items of a comma-separated value, empty ones included (the caller says why not).
std::vector<std::string> comma_items(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) items.push_back(trim_blanks(item));
  return items;
}

// The isolation settings of the section read: a hook's own, or the [run] defaults.
IsolationConfig& isolation_of(const KeyReading& r) {
  return r.hook ? r.hook->isolation : r.config.isolation;
}

// ---- [run] and [hook.NAME] ----

void read_log_level(const KeyReading& r) {
  std::string level = log_level(r.entry, r.at);
  if (r.hook)
    r.hook->log_level = std::move(level);
  else
    r.config.log_level = std::move(level);
}

void read_on_error(const KeyReading& r) {
  const FailurePolicy policy = policy_value(r);
  if (r.hook)
    r.hook->on_error = policy;
  else
    r.config.on_error = policy;
}

void read_isolation(const KeyReading& r) {
  isolation_of(r).isolation = isolation_value(r);
}

void read_isolation_group(const KeyReading& r) {
  const std::string& value = r.entry.value;
  // A plain name, so it reads back well in messages; empty means a runner of its own.
  const bool valid =
      value.size() <= 64 && std::all_of(value.begin(), value.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '_' || c == '-' || c == '.';
      });
  if (!valid)
    throw ConfigError(r.at +
                          "expected a group name of at most 64 letters, digits, _, - or . "
                          "(or nothing, for a runner of its own); got '" +
                          display_text(value) + "'",
                      r.entry.key);
  isolation_of(r).isolation_group = value;
}

void read_call_timeout_ms(const KeyReading& r) {
  isolation_of(r).call_timeout_ms = run_integer(r.entry, r.at, 0, 86400000, " (0: no limit)");
}

void read_memory_limit_mb(const KeyReading& r) {
  isolation_of(r).memory_limit_mb = run_integer(r.entry, r.at, 0, 1048576, " (0: no limit)");
}

void read_on_crash(const KeyReading& r) {
  auto policy = parse_crash_policy(r.entry.value);
  if (!policy)
    throw ConfigError(
        r.at + "expected restart, disable, stop or fail; got '" + display_text(r.entry.value) + "'",
        r.entry.key);
  isolation_of(r).on_crash = *policy;
}

void read_max_restarts(const KeyReading& r) {
  isolation_of(r).max_restarts = static_cast<uint32_t>(run_integer(r.entry, r.at, 0, 1000, ""));
}

void read_confine(const KeyReading& r) {
  const std::string& v = r.entry.value;
  // all-untrusted chooses hooks by their plugin, so it is the job's choice, not one hook's.
  const char* choices =
      r.hook ? "off, sandboxed or required" : "off, sandboxed, all-untrusted or required";
  Confinement mode;
  if (v == "off")
    mode = Confinement::off;
  else if (v == "sandboxed")
    mode = Confinement::sandboxed;
  else if (v == "required")
    mode = Confinement::required;
  else if (v == "all-untrusted" && !r.hook)
    mode = Confinement::all_untrusted;
  else
    throw ConfigError(r.at + "expected " + choices + "; got '" + display_text(v) + "'" +
                          (v == "all-untrusted" ? " (all-untrusted is a [run] setting)" : ""),
                      r.entry.key);
  isolation_of(r).confine = mode;
}

// A comma-separated list of files or folders; "none" (or nothing) for an empty list.
std::vector<fs::path> path_list(const KeyReading& r) {
  std::vector<fs::path> paths;
  if (r.entry.value.empty() || r.entry.value == "none") return paths;
  for (const std::string& item : comma_items(r.entry.value)) {
    if (item.empty())
      throw ConfigError(r.at +
                            "expected a comma-separated list of paths (or none); got an empty "
                            "item in '" +
                            display_text(r.entry.value) + "'",
                        r.entry.key);
    ConfigEntry one = r.entry;
    one.value = item;
    paths.push_back(config_path(one, r.file).lexically_normal());
  }
  return paths;
}

void read_allow_read(const KeyReading& r) {
  isolation_of(r).allow_read = path_list(r);
}

void read_allow_write(const KeyReading& r) {
  isolation_of(r).allow_write = path_list(r);
}

void read_allow_network(const KeyReading& r) {
  isolation_of(r).allow_network = boolean(r);
}

void read_allow_processes(const KeyReading& r) {
  isolation_of(r).allow_processes = boolean(r);
}

void read_grant(const KeyReading& r) {
  const std::string& v = r.entry.value;
  if (v != "none" && v != "declared")
    throw ConfigError(r.at + "expected none or declared; got '" + display_text(v) + "'",
                      r.entry.key);
  isolation_of(r).grant_declared = v == "declared";
}

void read_limit_cpu_secs(const KeyReading& r) {
  isolation_of(r).limit_cpu_secs = run_integer(r.entry, r.at, 0, 31536000, " (0: no limit)");
}

void read_limit_file_mb(const KeyReading& r) {
  isolation_of(r).limit_file_mb = run_integer(r.entry, r.at, 0, 16777216, " (0: no limit)");
}

void read_limit_open_files(const KeyReading& r) {
  // Below 16 the runner itself (channels, pipes, the plugin's copy) has too few to work.
  isolation_of(r).limit_open_files = run_integer(r.entry, r.at, 0, 1048576, " (0: no limit)");
  if (*isolation_of(r).limit_open_files != 0 && *isolation_of(r).limit_open_files < 16)
    throw ConfigError(r.at +
                          "must be 0 (no limit) or at least 16, which the runner needs for "
                          "itself; got '" +
                          display_text(r.entry.value) + "'",
                      r.entry.key);
}

void read_limit_processes(const KeyReading& r) {
  isolation_of(r).limit_processes = run_integer(r.entry, r.at, 0, 4194304, " (0: no limit)");
}

// ---- [run] ----

void read_plugin_dir(const KeyReading& r) {
  if (r.entry.value.empty()) throw ConfigError(r.at + "must name a folder", r.entry.key);
  // The first --set replaces the file's folders; later ones add to it.
  const bool is_override = r.entry.source.line == 0;
  if (is_override && !r.plugin_dir_overridden) r.config.plugin_dirs.clear();
  r.plugin_dir_overridden = r.plugin_dir_overridden || is_override;
  r.config.plugin_dirs.push_back(config_path(r.entry, r.file));
}

void read_run_dir(const KeyReading& r) {
  if (r.entry.value.empty()) throw ConfigError(r.at + "must not be empty", r.entry.key);
  r.config.run_dir = config_path(r.entry, r.file);
}

void read_max_state_mb(const KeyReading& r) {
  // One instance's state_put limit; a checkpoint holds every instance's state.
  r.config.max_state_bytes = static_cast<std::size_t>(run_integer(r.entry, r.at, 1, 4096, " (MiB)"))
                             << 20;
}

void read_checkpoint_dir(const KeyReading& r) {
  // Kept as written: a relative folder belongs to the run directory, wherever that is.
  if (r.entry.value.empty()) throw ConfigError(r.at + "must name a folder", r.entry.key);
  if (r.entry.value.size() > 4096)
    throw ConfigError(r.at + "is longer than 4096 bytes", r.entry.key);
  r.config.checkpoint_dir = r.entry.value;
}

void read_keep_checkpoints(const KeyReading& r) {
  r.config.keep_checkpoints =
      static_cast<uint32_t>(run_integer(r.entry, r.at, 0, 1000000, " (0 keeps every checkpoint)"));
}

void read_checkpoint_wait(const KeyReading& r) {
  r.config.checkpoint_wait = boolean(r);
}

void read_time_every_n_steps(const KeyReading& r) {
  r.config.time_every_n_steps = static_cast<uint32_t>(
      run_integer(r.entry, r.at, 1, 1000000, " (1 times every before_run and after_run call)"));
}

void read_allow_insecure_plugins(const KeyReading& r) {
  r.config.allow_insecure_plugins = boolean(r);
}

void read_allowed_plugins(const KeyReading& r) {
  std::vector<std::string>& allowed = r.config.allowed_plugins;
  allowed.clear();
  for (const std::string& id : comma_items(r.entry.value)) {
    if (id.empty())
      throw ConfigError(r.at +
                            "expected a comma-separated list of plugin ids; got an empty "
                            "item in '" +
                            display_text(r.entry.value) + "'",
                        r.entry.key);
    allowed.push_back(id);
  }
  if (allowed.empty())
    throw ConfigError(r.at +
                          "must list at least one plugin id (leave the key out to allow "
                          "every plugin)",
                      r.entry.key);
}

void read_untrusted(const KeyReading& r) {
  r.config.untrusted = isolation_value(r);
}

void read_distributed(const KeyReading& r) {
  if (r.entry.value == "none") {
    r.config.distributed = Distribution::none;
  } else if (r.entry.value == "mpi") {
    r.config.distributed = Distribution::mpi;
  } else {
    throw ConfigError(r.at +
                          "expected none (one process) or mpi (started with mpirun -np N); "
                          "got '" +
                          display_text(r.entry.value) + "'",
                      r.entry.key);
  }
  r.config.distributed_source = r.entry.source;
}

void read_collective_timeout_ms(const KeyReading& r) {
  r.config.collective_timeout_ms = static_cast<uint32_t>(run_integer(
      r.entry, r.at, 1, 86400000, " (how long hh.dist/1 waits for the other processes)"));
}

// ---- [hook.NAME] ----

void read_plugin(const KeyReading& r) {
  if (r.entry.value.empty()) throw ConfigError(r.at + "must name a plugin id", r.entry.key);
  r.hook->plugin = r.entry.value;
}

void read_enabled(const KeyReading& r) {
  r.hook->enabled = boolean(r);
}

void read_order(const KeyReading& r) {
  const std::string& value = r.entry.value;
  int order = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, order);
  if (value.empty() || ec != std::errc() || ptr != end)
    throw ConfigError(r.at + "must be an integer between " + std::to_string(INT_MIN) + " and " +
                          std::to_string(INT_MAX) + "; got '" + display_text(value) + "'",
                      r.entry.key);
  r.hook->order = order;
}

void read_ranks(const KeyReading& r) {
  const ConfigEntry& e = r.entry;
  RankSelection ranks;
  if (e.value == "chief") {
    ranks.kind = RankSelection::Kind::chief;
  } else if (e.value != "all") {
    ranks.kind = RankSelection::Kind::listed;
    for (const std::string& item : comma_items(e.value)) {
      int rank = -1;
      const char* end = item.data() + item.size();
      auto [ptr, ec] = std::from_chars(item.data(), end, rank);
      if (item.empty() || ec != std::errc() || ptr != end || rank < 0)
        throw ConfigError(r.at +
                              "expected chief, all, or a comma-separated list of ranks (integers "
                              ">= 0, 0 is the chief); got '" +
                              display_text(e.value) + "'",
                          e.key);
      ranks.listed.push_back(rank);
    }
    if (ranks.listed.empty())
      throw ConfigError(r.at + "expected chief, all, or a comma-separated list of ranks; got ''",
                        e.key);
    std::sort(ranks.listed.begin(), ranks.listed.end());
    ranks.listed.erase(std::unique(ranks.listed.begin(), ranks.listed.end()), ranks.listed.end());
  }
  r.hook->ranks = std::move(ranks);
}

void read_sha256(const KeyReading& r) {
  std::string hex = r.entry.value;
  std::transform(hex.begin(), hex.end(), hex.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw ConfigError(r.at +
                          "expected 64 hexadecimal digits (the output of 'sha256sum "
                          "PLUGIN.so'); got '" +
                          display_text(r.entry.value) + "'",
                      r.entry.key);
  r.hook->sha256 = hex;
}

void read_resume_state(const KeyReading& r) {
  const std::string& v = r.entry.value;
  if (v == "same_build")
    r.hook->resume_state = ResumeState::same_build;
  else if (v == "any_build")
    r.hook->resume_state = ResumeState::any_build;
  else
    throw ConfigError(r.at + "expected same_build or any_build; got '" + display_text(v) + "'",
                      r.entry.key);
}

// The step filters and the observer keys: kept with the plugin's parameters, where
// split_step_filter() and split_observer_keys() take them unless the plugin declares one.
void read_plugin_or_host_key(const KeyReading& r) {
  r.hook->params.erase(r.entry.key);
  r.hook->params.emplace(r.entry.key, r.entry.value);
}

constexpr unsigned kBoth = kRunSection | kHookSection;
constexpr bool kRepeats = true;
constexpr KeyOwner kUnlessDeclared = KeyOwner::host_unless_declared;

constexpr std::array kKeys = {
    ConfigKey{kHookSection, "plugin", read_plugin, "the plugin id (default: NAME)"},
    ConfigKey{kHookSection, "enabled", read_enabled, "true or false (default true)"},
    ConfigKey{kHookSection, "order", read_order,
              "call order, lower first (default 0; equal: config order)"},
    ConfigKey{kRunSection, "plugin_dir", read_plugin_dir,
              "a plugin folder, searched after --plugin-dir; may repeat (default: "
              "HOOKHOST_PLUGIN_PATH, then the built-in plugins)",
              kRepeats},
    ConfigKey{kRunSection, "run_dir", read_run_dir,
              "where outputs and checkpoints go (default: hookhost-run in the current folder)"},
    ConfigKey{kBoth, "log_level", read_log_level,
              "this hook's log level: trace, debug, info, warn, error, critical or off (default: "
              "[run] log_level, info)"},
    ConfigKey{kBoth, "on_error", read_on_error,
              "what a hook error leads to: disable, continue, stop or fail (default: [run] "
              "on_error, disable)"},
    ConfigKey{kRunSection, "max_state_mb", read_max_state_mb,
              "the largest state one hook instance may store, in MiB, 1 to 4096 (default 16)"},
    ConfigKey{
        kRunSection, "checkpoint_dir", read_checkpoint_dir,
        "where checkpoints go; a relative folder is in the run directory (default checkpoints)"},
    ConfigKey{kRunSection, "keep_checkpoints", read_keep_checkpoints,
              "how many checkpoints to keep, newest by step; 0 keeps all (default 5)"},
    ConfigKey{kRunSection, "checkpoint_wait", read_checkpoint_wait,
              "true: a checkpoint asked for during a write waits for it, so every one is written; "
              "false: the newest replaces one waiting, the step never waits (default true)"},
    ConfigKey{
        kRunSection, "time_every_n_steps", read_time_every_n_steps,
        "before_run and after_run are timed on one step in this many, 1 to 1000000 (default 64)"},
    ConfigKey{kRunSection, "allow_insecure_plugins", read_allow_insecure_plugins,
              "true loads plugins that fail the trust rules (default false)"},
    ConfigKey{kRunSection, "allowed_plugins", read_allowed_plugins,
              "comma-separated plugin ids, the only ones hooks may use (default: every id)"},
    ConfigKey{kBoth, "isolation", read_isolation,
              "in_process, or process: a runner process of its own (default: [run] isolation, "
              "in_process)"},
    ConfigKey{kBoth, "isolation_group", read_isolation_group,
              "share one runner with the hooks of this group (isolation = process; default: a "
              "runner each)"},
    ConfigKey{kBoth, "call_timeout_ms", read_call_timeout_ms,
              "a call's time limit; a sandboxed call over it is killed (default 0: none; 60000 "
              "with isolation = process)"},
    ConfigKey{kBoth, "memory_limit_mb", read_memory_limit_mb,
              "the runner's memory limit in MiB (isolation = process; default 0: none)"},
    ConfigKey{kBoth, "on_crash", read_on_crash,
              "what a lost runner leads to: restart, disable, stop or fail (isolation = process; "
              "default restart)"},
    ConfigKey{kBoth, "max_restarts", read_max_restarts,
              "restarts before the hook is disabled, 0 to 1000 (default 3)"},
    ConfigKey{kRunSection, "untrusted", read_untrusted,
              "process: a hook whose isolation is set nowhere runs in a runner when its plugin "
              "imports process-wide calls (default in_process)"},
    ConfigKey{kBoth, "confine", read_confine,
              "off, sandboxed or required: confine a sandboxed hook to its capability policy "
              "(default: [run] confine, sandboxed)"},
    ConfigKey{kBoth, "allow_read", read_allow_read,
              "comma-separated files or folders a confined hook may read; grants its plugin's "
              "declared reads beneath them (default none)"},
    ConfigKey{kBoth, "allow_write", read_allow_write,
              "comma-separated files or folders a confined hook may write; grants its plugin's "
              "declared writes beneath them (default none)"},
    ConfigKey{kBoth, "allow_network", read_allow_network,
              "true lets a confined hook open network sockets, false refuses them (default: "
              "false, or as its plugin declares with grant = declared)"},
    ConfigKey{kBoth, "allow_processes", read_allow_processes,
              "true lets a confined hook start processes, false refuses them (default: false, or "
              "as its plugin declares with grant = declared)"},
    ConfigKey{kBoth, "grant", read_grant,
              "none, or declared: a confined hook gets every need its plugin declares (default "
              "none: a need no allow_* key grants refuses the hook)"},
    ConfigKey{kBoth, "limit_cpu_secs", read_limit_cpu_secs,
              "the CPU seconds of a confined hook's runner (default 0: no limit)"},
    ConfigKey{kBoth, "limit_file_mb", read_limit_file_mb,
              "the largest file a confined hook's runner may write, in MiB (default 0: no limit)"},
    ConfigKey{kBoth, "limit_open_files", read_limit_open_files,
              "the open files of a confined hook's runner, 0 or at least 16 (default 0: no limit)"},
    ConfigKey{
        kBoth, "limit_processes", read_limit_processes,
        "the processes of the job's user a confined hook's runner may start (default 0: no limit)"},
    ConfigKey{kRunSection, "distributed", read_distributed,
              "none, or mpi for a job started by mpirun -np N (default none)"},
    ConfigKey{kRunSection, "collective_timeout_ms", read_collective_timeout_ms,
              "how long a hook's hh.dist/1 collective waits for the other processes, 1 to 86400000 "
              "(default 60000)"},
    ConfigKey{
        kHookSection, "ranks", read_ranks,
        "in a distributed job: chief, all, or ranks such as 0,2 (default: the plugin's placement)"},
    ConfigKey{kHookSection, "sha256", read_sha256,
              "the plugin file's SHA-256: the job refuses any other file (default: none)"},
    ConfigKey{kHookSection, "resume_state", read_resume_state,
              "same_build: a state another build of the plugin saved is not resumed (a warning "
              "says so); any_build: it is (default same_build)"},
    ConfigKey{kHookSection, "every_n_steps", read_plugin_or_host_key,
              "call before_run and after_run only on global steps that are multiples of N "
              "(default: every step)",
              false, kUnlessDeclared},
    ConfigKey{kHookSection, "at_steps", read_plugin_or_host_key,
              "call before_run and after_run only on these global steps, comma-separated (default: "
              "every step)",
              false, kUnlessDeclared},
    ConfigKey{
        kHookSection, "first_n", read_plugin_or_host_key,
        "call before_run and after_run only on the first N steps of this run (default: every step)",
        false, kUnlessDeclared},
    ConfigKey{kHookSection, "mode", read_plugin_or_host_key,
              "step, or observe: the hook runs behind the step, on a worker thread (default: the "
              "plugin's mode)",
              false, kUnlessDeclared},
    ConfigKey{kHookSection, "queue", read_plugin_or_host_key,
              "the steps an observer's queue holds, 1 to 65536 (mode = observe; default 8)", false,
              kUnlessDeclared},
    ConfigKey{kHookSection, "policy", read_plugin_or_host_key,
              "block or skip: what a step does when an observer's queue is full (default block)",
              false, kUnlessDeclared},
};

// kHostHookKeys (hookhost/host/hook_keys.hpp: discovery refuses plugin parameters with these
// names) is this table's [hook.NAME] keys that are always the host's.
constexpr bool hook_keys_match() {
  std::size_t hook_keys = 0;
  for (const ConfigKey& key : kKeys) {
    if (!(key.sections & kHookSection) || key.owner != KeyOwner::host) continue;
    ++hook_keys;
    if (std::find(kHostHookKeys.begin(), kHostHookKeys.end(), key.name) == kHostHookKeys.end())
      return false;
  }
  return hook_keys == kHostHookKeys.size();
}
static_assert(hook_keys_match(), "kHostHookKeys must list exactly the host's own [hook.NAME] keys");

}  // namespace

std::span<const ConfigKey> config_keys() {
  return kKeys;
}

const ConfigKey* find_config_key(std::string_view section, std::string_view name) {
  const unsigned in = section == "run"                 ? kRunSection
                      : section.rfind("hook.", 0) == 0 ? kHookSection
                                                       : 0u;
  for (const ConfigKey& key : kKeys)
    if ((key.sections & in) && key.name == name) return &key;
  return nullptr;
}

bool key_may_repeat(std::string_view section, std::string_view name) {
  const ConfigKey* key = find_config_key(section, name);
  return key && key->may_repeat;
}

std::string config_key_list(KeySections section) {
  std::string list;
  for (const ConfigKey& key : kKeys) {
    if (!(key.sections & section)) continue;
    if (!list.empty()) list += ", ";
    list += key.name;
  }
  return list;
}

}  // namespace hookhost
