#include "hookhost/host/job.hpp"

#include <stdlib.h>

#include <spdlog/spdlog.h>
#include <boost/dll/runtime_symbol_info.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "distributed/state_transfer.hpp"
#include "hookhost/host/loader.hpp"
#include "job/display_text.hpp"
#include "job/rank_placement.hpp"
#include "job/run_dir_lock.hpp"
#include "job/signal_bridge.hpp"
#include "plugins/trust.hpp"
#include "sandbox/process_dispatch.hpp"
#include "storage/checkpoint.hpp"
#include "support/find_on_path.hpp"
#include "support/text.hpp"
#include "workloads/registry.hpp"

namespace hookhost {
namespace fs = std::filesystem;

fs::path builtin_plugin_dir() {
  // <bin>/../lib/hookhost/plugins: the same layout in a build tree and in an installation, so no
  // path is compiled in. An embedding program finds the installed hookhost program on PATH.
  const auto plugins_beside = [](const fs::path& program) {
    return program.parent_path() / ".." / "lib" / "hookhost" / "plugins";
  };
  std::error_code ec;
  const fs::path self = boost::dll::program_location(ec);
  const fs::path first = ec ? fs::path("lib/hookhost/plugins") : plugins_beside(self);
  if (fs::is_directory(first, ec)) return fs::weakly_canonical(first, ec);
  if (const auto installed = find_on_path("hookhost")) {
    const fs::path candidate = plugins_beside(fs::weakly_canonical(*installed, ec));
    if (fs::is_directory(candidate, ec)) return candidate.lexically_normal();
  }
  return first;
}

std::vector<fs::path> plugin_search_path(const std::vector<fs::path>& first,
                                         const std::vector<fs::path>& config) {
  std::vector<fs::path> dirs = first;
  dirs.insert(dirs.end(), config.begin(), config.end());
  if (const char* env = std::getenv("HOOKHOST_PLUGIN_PATH")) {
    const std::vector<fs::path> listed = split_folder_list(env);
    dirs.insert(dirs.end(), listed.begin(), listed.end());
  }
  dirs.push_back(builtin_plugin_dir());
  std::vector<fs::path> unique;
  std::set<fs::path> seen;
  for (const auto& d : dirs) {
    std::error_code ec;
    fs::path key = fs::weakly_canonical(d, ec);
    if (seen.insert(ec ? d : key).second) unique.push_back(d);
  }
  return unique;
}

namespace {

// A temporary folder removed with everything in it when this goes.
struct ScratchFolder {
  fs::path path;
  ScratchFolder() = default;
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  ~ScratchFolder() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

}  // namespace

struct Job::Parts {
  JobOptions options;
  Communicator* comm = nullptr;  // a distributed job's processes; null for one process
  int rank = 0;
  std::shared_ptr<spdlog::logger> log;
  fs::path run_dir;
  ScratchFolder scratch;  // check_only: the hooks' run_dir; removed after the hooks are gone
  std::unique_ptr<RunDirLock> lock;  // held from before the first file is touched to the end
  std::unique_ptr<Session> session;
  std::unique_ptr<Runtime> runtime;
  // An absolute checkpoint folder that --fresh moved aside: (the folder, where it went).
  std::optional<std::pair<fs::path, fs::path>> checkpoints_aside;
};

namespace {

// The exit status of every process when an internal error ends a distributed job (EX_SOFTWARE).
constexpr int kInternalErrorExit = 70;

// A hook's isolation settings: its own, else the [run] ones, else the built-in defaults.
struct EffectiveIsolation {
  Isolation isolation = Isolation::in_process;
  uint64_t call_timeout_ms = 0;
  uint64_t memory_limit_mb = 0;
  CrashPolicy on_crash = CrashPolicy::restart;
  uint32_t max_restarts = 3;
  std::string group;  // the isolation group (sandboxed hooks only), or empty
};

EffectiveIsolation effective_isolation(const JobConfig& cfg, const HookConfig& hook,
                                       const DiscoveredPlugin& plugin, spdlog::logger& log) {
  const IsolationConfig& own = hook.isolation;
  const IsolationConfig& run = cfg.isolation;
  EffectiveIsolation e;
  e.isolation = own.isolation.value_or(run.isolation.value_or(e.isolation));
  // [run] untrusted only fills in an isolation set nowhere: an explicit one is the operator's call.
  // Imports that could not be read count as suspect: "unknown" is not "none".
  const auto& calls = plugin.process_wide_calls;
  if (!own.isolation && !run.isolation && cfg.untrusted == Isolation::process &&
      (!calls || !calls->empty())) {
    e.isolation = Isolation::process;
    const std::string what =
        calls ? "imports " + join(*calls, ", ") : "has imports that could not be read";
    log.info("{} {}: running it with isolation = process because [run] untrusted = process",
             describe_hook(hook.name, display_text(plugin.metadata.id)), what);
  }
  // A sandboxed hook that hangs is contained by its limit only: it has one unless set to 0.
  const uint64_t default_timeout_ms =
      e.isolation == Isolation::process ? kSandboxedCallTimeoutMs : 0;
  e.call_timeout_ms =
      own.call_timeout_ms.value_or(run.call_timeout_ms.value_or(default_timeout_ms));
  if (e.isolation == Isolation::process && e.call_timeout_ms == 0)
    log.warn(
        "{} runs with isolation = process and call_timeout_ms = 0: a call that hangs there hangs "
        "the whole job; remove the key for the default limit ({} ms) or set one",
        describe_hook(hook.name, display_text(plugin.metadata.id)), kSandboxedCallTimeoutMs);
  e.memory_limit_mb = own.memory_limit_mb.value_or(run.memory_limit_mb.value_or(0));
  e.on_crash = own.on_crash.value_or(run.on_crash.value_or(e.on_crash));
  e.max_restarts = own.max_restarts.value_or(run.max_restarts.value_or(e.max_restarts));
  e.group = own.isolation_group.value_or(run.isolation_group.value_or(""));
  if (e.isolation == Isolation::in_process) {
    // A group in [run] applies to the sandboxed hooks only; one named on the hook itself is a
    // mistake for an in-process hook.
    if (own.isolation_group && !own.isolation_group->empty())
      throw ConfigError(cfg.where(hook, "isolation_group") + "hook '" + hook.name +
                            "' runs in process, so it has no runner to share: set isolation = "
                            "process for it, or remove isolation_group",
                        "isolation_group");
    e.group.clear();
  }
  return e;
}

// The plugin folders as messages show them: "A, B, C".
std::string folder_list(const std::vector<fs::path>& folders) {
  std::vector<std::string> names;
  for (const auto& folder : folders) names.push_back(display_text(folder.string()));
  return join(names, ", ");
}

// Rewrites a ConfigError from a lower layer so it starts with the file, line, section and key.
[[noreturn]] void rethrow_at(const ConfigError& e, const std::string& where) {
  throw ConfigError(where + e.what(), e.key());
}

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

}  // namespace

// The first of `keys` that `message` names as a whole word, e.g. "num_steps" in "invalid
// num_steps=-3"; empty when none. Lets a plugin's refusal in create() point at the key's line.
std::string key_named_in(const std::string& message,
                         const std::multimap<std::string, std::string>& keys) {
  std::string best;
  size_t best_pos = std::string::npos;
  for (const auto& [key, value] : keys) {
    for (size_t pos = message.find(key); pos != std::string::npos;
         pos = message.find(key, pos + 1)) {
      const bool starts = pos == 0 || !is_identifier_char(message[pos - 1]);
      const size_t end = pos + key.size();
      const bool ends = end == message.size() || !is_identifier_char(message[end]);
      if (starts && ends) {
        if (pos < best_pos) best = key, best_pos = pos;
        break;
      }
    }
  }
  return best;
}

// What Boost's value parsing in resolve_params() lets through or reports without the valid range:
// integers beyond 64 bits, NaN and infinite numbers, empty items in a list. Throws ConfigError with
// the key; the caller adds the file, line and section.
void check_param_texts(const PluginMetadata& schema,
                       const std::multimap<std::string, std::string>& raw) {
  for (const auto& [key, text] : raw) {
    const ParamSpec* spec = schema.find_param(key);
    if (!spec) continue;  // resolve_params() names the unknown key and lists the valid ones
    const std::string got = ", got '" + display_text(text) + "'";
    switch (spec->type) {
      case HH_PARAM_TYPE_INT: {
        const bool integer_shaped =
            !text.empty() &&
            std::all_of(text.begin() + (text[0] == '-' || text[0] == '+'), text.end(),
                        [](unsigned char c) { return std::isdigit(c); }) &&
            text.find_first_of("0123456789") != std::string::npos;
        int64_t value = 0;
        const char* first = text.data() + (text[0] == '+');
        if (integer_shaped && std::from_chars(first, text.data() + text.size(), value).ec ==
                                  std::errc::result_out_of_range)
          throw ConfigError("must be an integer between " +
                                std::to_string(std::numeric_limits<int64_t>::min()) + " and " +
                                std::to_string(std::numeric_limits<int64_t>::max()) + got,
                            key);
        break;
      }
      case HH_PARAM_TYPE_FLOAT: {
        double value = 0;
        const char* end = text.data() + text.size();
        auto [ptr, ec] = std::from_chars(text.data() + (text[0] == '+'), end, value);
        if (ptr == end && (ec == std::errc::result_out_of_range || !std::isfinite(value)))
          throw ConfigError("must be a finite number (not NaN or infinite)" + got, key);
        break;
      }
      case HH_PARAM_TYPE_STRING_LIST: {
        if (text.find_first_not_of(" \t") == std::string::npos) break;  // an empty list
        size_t start = 0, item = 1;
        for (;; ++item) {
          const size_t comma = std::min(text.find(',', start), text.size());
          if (text.find_first_not_of(" \t", start) >= comma)
            throw ConfigError("item " + std::to_string(item) +
                                  " of the comma-separated list is empty" + got +
                                  "; remove the extra comma",
                              key);
          if (comma == text.size()) break;
          start = comma + 1;
        }
        break;
      }
      default: break;
    }
  }
}

namespace {

// Checks a hook's or the workload's parameters against `schema`; errors name the key's line.
ResolvedParams resolve_checked(const PluginMetadata& schema, const std::string& instance,
                               const std::multimap<std::string, std::string>& raw,
                               const std::function<std::string(const std::string&)>& where) {
  try {
    check_param_texts(schema, raw);
    return resolve_params(schema, instance, raw);
  } catch (const ConfigError& e) {
    rethrow_at(e, where(e.key()));
  }
}

// Checkpoint files are <basename>-<step>, with TensorFlow's basename.
constexpr const char* kCheckpointBasename = "model.ckpt";

// A point of the job's start that a distributed job's processes pass together, so none goes on
// to a collective that another will never reach. passed() agrees with the others and throws when
// any of them failed; when an exception leaves the phase on this process first, the destructor
// casts this process's vote instead.
class StartupPhase {
 public:
  explicit StartupPhase(Communicator* comm) : comm_(comm) {}
  StartupPhase(const StartupPhase&) = delete;
  StartupPhase& operator=(const StartupPhase&) = delete;
  ~StartupPhase() {
    if (comm_ && !voted_) vote(false);
  }
  void passed() {
    if (!comm_ || voted_) return;
    const int first_failed = vote(true);
    if (first_failed < comm_->size())
      throw ConfigError("rank " + std::to_string(first_failed) +
                        " of the job could not start (its error is printed above)");
  }

 private:
  // The lowest rank that failed, or the world size when none did.
  int vote(bool ok) {
    voted_ = true;
    int64_t first = ok ? comm_->size() : comm_->rank();
    comm_->allreduce(&first, 1, ReduceOp::min);
    return static_cast<int>(first);
  }
  Communicator* comm_;
  bool voted_ = false;
};

// Accepts a checkpoint only once its workload state is restored into `session` and puts the
// session at the checkpoint's step; a later candidate overwrites a refused one's restore.
CheckpointValidator restoring_into(Session& session) {
  return [&session](const fs::path& file, const Checkpoint& c) {
    session.restore_state(c.workload_state);
    if (session.global_step() != c.global_step)
      throw std::runtime_error(file.string() + ": its header says global step " +
                               std::to_string(c.global_step) + " but its workload state is at " +
                               std::to_string(session.global_step()));
  };
}

// The newest usable checkpoint, with its workload state restored into `session`. In a distributed
// job the chief alone reads the folder and sends what it found to every process, so the nodes
// need no shared filesystem; every process then holds the same workload state, or every process
// throws the chief's error. nullopt when there is no checkpoint.
std::optional<RestoredCheckpoint> restore_newest(const fs::path& dir, Session& session,
                                                 Communicator* comm) {
  if (!comm) return restore_latest_checkpoint(dir, kCheckpointBasename, restoring_into(session));
  // One message: 'N' none, 'U' none usable (the reasons follow), 'E' an error, 'C' a checkpoint.
  std::string message;
  if (comm->is_chief()) {
    try {
      auto found = restore_latest_checkpoint(dir, kCheckpointBasename, restoring_into(session));
      if (!found) {
        message = "N";
      } else if (found->file.empty()) {
        message = "U";
        for (const auto& skipped : found->skipped) message += skipped + "\n";
      } else {
        message = "C" + found->file.string() + "\n" + encode_checkpoint_message(found->checkpoint);
      }
    } catch (const std::exception& e) {
      message = std::string("E") + e.what();
    }
  }
  comm->broadcast(message, 0);
  const char kind = message.empty() ? 'E' : message[0];
  const std::string rest = message.empty() ? std::string() : message.substr(1);
  if (kind == 'N') return std::nullopt;
  if (kind == 'E') throw std::runtime_error("the chief could not read the checkpoints: " + rest);
  RestoredCheckpoint restored;
  if (kind == 'U') {
    for (std::size_t at = 0, nl; (nl = rest.find('\n', at)) != std::string::npos; at = nl + 1)
      restored.skipped.push_back(rest.substr(at, nl - at));
    return restored;
  }
  const std::size_t nl = rest.find('\n');
  restored.file = rest.substr(0, nl);
  restored.checkpoint = decode_checkpoint_message(rest.substr(nl + 1));
  if (!comm->is_chief()) restoring_into(session)(restored.file, restored.checkpoint);
  return restored;
}

// Whether a folder holds anything but the run lock.
bool folder_used(const fs::path& folder) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec))
    if (entry.path().filename() != ".hookhost.lock") return true;
  return false;
}

// Whether `inner` is `outer` or lies inside it (both absolute; links resolved where they exist).
bool inside(const fs::path& inner, const fs::path& outer) {
  std::error_code ec;
  const fs::path a = fs::weakly_canonical(inner, ec);
  const fs::path b = fs::weakly_canonical(outer, ec);
  return std::mismatch(a.begin(), a.end(), b.begin(), b.end()).second == b.end();
}

// What --fresh moved aside, to put back when the job does not start after all.
struct MovedAside {
  std::optional<fs::path> run_dir;
  std::optional<std::pair<fs::path, fs::path>> checkpoint_dir;  // (the folder, where it went)
};

// --fresh: renames a used run directory to <run_dir>.old-<time>, and a used checkpoint folder
// outside it (an absolute [run] checkpoint_dir) to <checkpoint_dir>.old-<time> with the same
// suffix, so that no later start resumes the previous run's checkpoints.
MovedAside move_aside(const fs::path& run_dir, const fs::path& checkpoint_dir,
                      spdlog::logger& log) {
  const bool separate_checkpoints = !inside(checkpoint_dir, run_dir);
  if (separate_checkpoints && inside(run_dir, checkpoint_dir))
    throw ConfigError("--fresh: [run] checkpoint_dir " + display_text(checkpoint_dir.string()) +
                      " holds the run directory " + display_text(run_dir.string()) +
                      ", so it cannot be moved aside on its own: give checkpoint_dir a folder of "
                      "its own (or a relative one, inside the run directory)");
  std::error_code ec;
  const bool run_used = folder_used(run_dir);
  const bool checkpoints_used =
      separate_checkpoints && fs::is_directory(checkpoint_dir, ec) && folder_used(checkpoint_dir);
  MovedAside moved;
  if (!run_used && !checkpoints_used) return moved;
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  // One suffix for both folders, free for both, so the two halves of a run are easy to pair.
  std::string suffix = std::string(".old-") + stamp;
  const auto taken = [&](const fs::path& folder) {
    fs::path target = folder;
    target += suffix;
    return fs::exists(target, ec);
  };
  for (int i = 1; taken(run_dir) || (separate_checkpoints && taken(checkpoint_dir)); ++i)
    suffix = std::string(".old-") + stamp + "-" + std::to_string(i);
  const auto move_folder = [&](const fs::path& folder, const char* what) {
    fs::path target = folder;
    target += suffix;
    fs::rename(folder, target, ec);
    if (ec)
      throw ConfigError("--fresh: cannot move the previous " + std::string(what) + " " +
                        display_text(folder.string()) + " aside to " +
                        display_text(target.string()) + ": " + ec.message());
    log.info("--fresh: moved the previous {} to {}", what, target.string());
    return target;
  };
  if (checkpoints_used)
    moved.checkpoint_dir.emplace(checkpoint_dir, move_folder(checkpoint_dir, "run's checkpoints"));
  if (run_used) {
    try {
      moved.run_dir = move_folder(run_dir, "run");
    } catch (const ConfigError&) {
      if (moved.checkpoint_dir) fs::rename(moved.checkpoint_dir->second, checkpoint_dir, ec);
      throw;
    }
  }
  return moved;
}

}  // namespace

// Undoes --fresh after a hook's create() failed: the job never ran, the previous run stays.
void Job::put_back(Parts& p, const fs::path& aside, spdlog::logger& log) {
  p.runtime.reset();  // destroys the hooks created so far, closing their files
  p.lock.reset();
  std::error_code ec;
  if (p.checkpoints_aside) {
    const auto& [folder, moved_to] = *p.checkpoints_aside;
    fs::remove_all(folder, ec);
    fs::rename(moved_to, folder, ec);
    if (ec)
      log.error("--fresh: could not put the previous checkpoints back from {}: {}",
                moved_to.string(), ec.message());
  }
  if (aside.empty()) return;
  fs::remove_all(p.run_dir, ec);
  fs::rename(aside, p.run_dir, ec);
  if (ec)
    log.error("--fresh: could not put the previous run back from {}: {}", aside.string(),
              ec.message());
  else
    log.info("--fresh: the job did not start; the previous run is back in {}", p.run_dir.string());
}

Job::Job(JobOptions options) : parts_(std::make_unique<Parts>()) {
  Parts& p = *parts_;
  p.options = std::move(options);
  const JobConfig& cfg = p.options.config;
  p.log = p.options.logger ? p.options.logger : spdlog::default_logger();
  spdlog::logger& log = *p.log;
  const std::string config_name = cfg.file ? cfg.file->string() : "(no config file)";
  // A communicator of one process is a job of one process: no collective per step.
  if (p.options.communicator && p.options.communicator->size() > 1)
    p.comm = p.options.communicator.get();
  else
    p.options.communicator.reset();
  Communicator* const comm = p.comm;
  const int rank = p.rank = comm ? comm->rank() : 0;
  const int world = comm ? comm->size() : 1;
  StartupPhase planning(comm);

  // Workload first: it needs no plugin, and its mistakes are the cheapest to report.
  const WorkloadKind* workload = find_workload(cfg.workload);
  if (!workload) {
    std::vector<std::string> names;
    for (const auto& kind : builtin_workloads()) names.push_back(kind.name);
    throw ConfigError(cfg.where_workload("name") + "unknown workload '" +
                          display_text(cfg.workload) +
                          "' (this hookhost has: " + join(names, ", ") + ")",
                      "name");
  }
  const auto workload_where = [&](const std::string& key) { return cfg.where_workload(key); };
  ResolvedParams workload_params =
      resolve_checked(workload->schema(), "workload", cfg.workload_params, workload_where);
  try {
    p.session = workload->make(workload_params, p.options.communicator);
  } catch (const ConfigError& e) {
    rethrow_at(e, cfg.where_workload(e.key()));
  }

  // Plugins: discovered is not enabled; only configured hooks are loaded.
  const std::vector<fs::path> dirs = plugin_search_path(p.options.plugin_dirs, cfg.plugin_dirs);
  // [run] untrusted = process decides by the imports of the hooks' plugins: read with their notes.
  DiscoveryOptions discovery;
  if (cfg.untrusted == Isolation::process)
    for (const HookConfig& hook : cfg.hooks) discovery.imports_of.push_back(hook.plugin);
  DiscoveryResult found = discover_plugins(dirs, discovery);
  // A folder the operator named that is missing is worth a warning, not a failed job: the hooks
  // may all come from other folders, and an unknown plugin is an error below anyway.
  for (const auto& folder : found.missing_folders)
    log.warn("plugin folder {} does not exist or is not a folder", display_text(folder.string()));
  for (const auto& d : found.duplicates)
    log.warn("two plugins with id '{}': using {} ({}); ignoring {}", display_text(d.id),
             display_text(d.chosen.string()), d.why, display_text(d.ignored.string()));
  for (const auto& r : found.rejected)
    log.debug("not a usable plugin: {}: {}", display_text(r.file.string()), display_text(r.reason));

  struct Planned {
    const HookConfig* hook;
    std::shared_ptr<const LoadedPlugin> plugin;
    ResolvedParams params;
    EffectiveIsolation isolation;
    RankSelection ranks;
  };
  std::vector<Planned> planned;
  // Every enabled hook, in config order, and whether it runs on this process: hh.dist/1's groups.
  std::vector<std::pair<const HookConfig*, bool>> runs_here;
  for (const HookConfig& hook : cfg.hooks) {
    const DiscoveredPlugin* d = found.find(hook.plugin);
    const auto hook_where = [&](const std::string& key) { return cfg.where(hook, key); };
    // A disabled hook is checked too, so enabling it later cannot reveal an old mistake (a
    // misspelt plugin id, a bad parameter) in the middle of a run.
    if (!d) {
      const std::string dir_list = folder_list(dirs);
      std::string rejected;
      for (const auto& r : found.rejected)
        rejected += "\n  rejected " + display_text(r.file.string()) + ": " + display_text(r.reason);
      throw ConfigError(cfg.where(hook, "plugin") + "unknown plugin '" + display_text(hook.plugin) +
                            "': no plugin with this id in " + dir_list +
                            " ('hookhost plugins list' shows what is available)" +
                            (hook.enabled ? ""
                                          : "; the hook is disabled, but its plugin must "
                                            "still exist: fix the id or remove the section") +
                            rejected,
                        "plugin");
    }
    if (!hook.enabled) {
      resolve_checked(d->metadata, hook.name, hook.params, hook_where);
      log.info("hook '{}' is disabled in the configuration", hook.name);
      continue;
    }
    if (!cfg.allowed_plugins.empty() &&
        std::find(cfg.allowed_plugins.begin(), cfg.allowed_plugins.end(), d->metadata.id) ==
            cfg.allowed_plugins.end())
      throw ConfigError(cfg.where(hook, "plugin") + "plugin '" + display_text(d->metadata.id) +
                            "' is not in [run] allowed_plugins (" +
                            display_text(join(cfg.allowed_plugins, ", ")) +
                            "): add it there, or remove or disable this hook",
                        "plugin");
    if (!cfg.allow_insecure_plugins) {
      if (std::string why = trust_problem(d->file.parent_path(), d->file); !why.empty())
        throw ConfigError(cfg.where(hook, "plugin") + "refusing to load plugin '" +
                              display_text(d->metadata.id) + "': " + display_text(why, 2048),
                          "plugin");
    }
    const RankSelection ranks = hook.ranks.value_or(default_ranks(d->metadata));
    if (ranks.kind == RankSelection::Kind::listed && ranks.listed.back() >= world)
      throw ConfigError(
          cfg.where(hook, "ranks") + "rank " + std::to_string(ranks.listed.back()) +
              " does not exist: this job runs " + std::to_string(world) +
              (world == 1 ? " process (rank 0)"
                          : " processes (ranks 0 to " + std::to_string(world - 1) + ")") +
              "; list ranks below " + std::to_string(world) + ", or use chief or all",
          "ranks");
    const bool runs_on_this_process = ranks.includes(rank);
    runs_here.emplace_back(&hook, runs_on_this_process);
    // Checked on every process, so each reports the same mistakes; loaded where it runs only.
    ResolvedParams params = resolve_checked(d->metadata, hook.name, hook.params, hook_where);
    EffectiveIsolation isolation = effective_isolation(cfg, hook, *d, log);
    if (!runs_on_this_process) continue;
    Planned item{&hook, nullptr, std::move(params), std::move(isolation), ranks};
    if (item.isolation.isolation == Isolation::process) {
      // Its code runs in its runner only: not even its constructors run in this process. The
      // runner opens this private copy, at start and at every restart; the pin below is its hash.
      try {
        item.plugin = private_plugin_copy(*d);
      } catch (const std::exception& e) {
        throw ConfigError(cfg.where(hook, "plugin") + display_text(e.what(), 1024));
      }
    } else {
      try {
        item.plugin = load_plugin(*d);
      } catch (const LoadError& e) {
        throw ConfigError(cfg.where(hook, "plugin") + e.what());
      }
    }
    if (!hook.sha256.empty() && hook.sha256 != item.plugin->sha256())
      throw ConfigError(cfg.where(hook, "sha256") + "plugin file " +
                            display_text(d->file.string()) + " has SHA-256 " +
                            item.plugin->sha256() + ", but the configuration pins " + hook.sha256 +
                            ": the file is not the one that was approved; restore it, or pin "
                            "the new hash after reviewing the plugin",
                        "sha256");
    planned.push_back(std::move(item));
  }

  planning.passed();

  // Each hook instance's own communicator over the processes that run it, so one hook's
  // collectives never meet another's or the job's. Every process splits once per enabled hook,
  // in the same order: a split is collective over the whole job.
  std::map<const HookConfig*, std::shared_ptr<Communicator>> hook_groups;
  if (comm)
    for (const auto& [hook, member] : runs_here)
      if (std::shared_ptr<Communicator> group = comm->split(member)) hook_groups[hook] = group;

  // The run directory, and the checkpoint folder the checkpoint saver writes to. In a distributed
  // job it is the chief's; every other process writes its hooks' outputs to a folder of its own,
  // rank-N inside it (on its own machine's disk when the nodes share no filesystem).
  const auto make_run_dir = [&] {
    std::error_code ec;
    fs::create_directories(p.run_dir, ec);
    if (ec)
      throw ConfigError(config_name + ": run_dir " + p.run_dir.string() +
                        " cannot be created: " + ec.message());
  };
  // Set when --fresh moved anything aside (an empty path: only the checkpoint folder).
  std::optional<fs::path> moved_aside;
  StartupPhase chief_folders(comm);
  if (p.options.check_only) {
    // A check must leave nothing in the run directory (it may not exist yet), yet a hook's
    // create() may open its outputs there: it gets a temporary folder instead.
    std::string pattern = (fs::temp_directory_path() / "hookhost-check-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      throw std::runtime_error("cannot create a temporary folder for --check in " +
                               fs::temp_directory_path().string() + ": " + std::strerror(errno));
    p.scratch.path = p.run_dir = pattern;
  } else if (rank == 0) {
    p.run_dir = cfg.run_dir;
    make_run_dir();
    p.run_dir = fs::canonical(p.run_dir);
    // Nobody else may use the run directory, --fresh or not, before anything in it is touched.
    p.lock = std::make_unique<RunDirLock>(p.run_dir);
    // --fresh: everything but the hooks' create() is validated by now; if a create() fails
    // below, the previous run is put back as it was.
    if (p.options.fresh) {
      const fs::path checkpoints =
          cfg.checkpoint_dir.is_relative() ? p.run_dir / cfg.checkpoint_dir : cfg.checkpoint_dir;
      MovedAside moved = move_aside(p.run_dir, checkpoints, log);
      p.checkpoints_aside = moved.checkpoint_dir;
      if (moved.run_dir || moved.checkpoint_dir) moved_aside = moved.run_dir.value_or(fs::path());
      if (moved.run_dir) {
        make_run_dir();
        p.lock = std::make_unique<RunDirLock>(p.run_dir);
      }
    }
  }
  // The checkpoint folder is the job's, never one plugin's: hooks only ask for checkpoints.
  const fs::path checkpoint_dir = cfg.checkpoint_dir.is_relative() || p.options.check_only
                                      ? p.run_dir / cfg.checkpoint_dir.relative_path()
                                      : cfg.checkpoint_dir;
  if (rank == 0 && !p.options.check_only)
    for (const std::string& repair : tidy_checkpoint_folder(checkpoint_dir, kCheckpointBasename))
      log.info("checkpoint folder: {}", repair);
  chief_folders.passed();
  StartupPhase rank_folders(comm);
  if (rank != 0 && !p.options.check_only) {
    p.run_dir = cfg.run_dir / ("rank-" + std::to_string(rank));
    make_run_dir();
    p.run_dir = fs::canonical(p.run_dir);
    p.lock = std::make_unique<RunDirLock>(p.run_dir);
  }
  rank_folders.passed();
  // From here on a process that fails tells the others before they create their hooks.
  StartupPhase hooks_created(comm);

  // Resume from the newest usable checkpoint, before any hook exists: create() and begin() see
  // the restored state and global step. A checkpoint is usable when it verifies and its name, its
  // header and the workload's restored step agree.
  std::map<std::string, SavedHookState> restored_states;
  if (!p.options.fresh && !p.options.check_only) {
    std::optional<RestoredCheckpoint> newest;
    try {
      newest = restore_newest(checkpoint_dir, *p.session, comm);
    } catch (const std::runtime_error& e) {
      throw ConfigError(std::string("cannot resume: ") + e.what() +
                        "\nStart over with --fresh (the previous run is moved aside), or remove "
                        "the unusable files.");
    }
    if (auto& restored = newest) {
      for (const auto& skipped : restored->skipped)
        log.warn("skipping an unusable checkpoint: {}", skipped);
      if (restored->file.empty()) {
        std::string list;
        for (const auto& skipped : restored->skipped) list += "\n  " + display_text(skipped);
        throw ConfigError("no usable checkpoint in " + checkpoint_dir.string() +
                          ", so the job cannot resume:" + list +
                          "\nStart over with --fresh (the previous run is moved aside), or "
                          "remove the unusable files.");
      }
      restored_states = states_of_rank(restored->checkpoint.hook_states, rank);
      first_step_ = restored->checkpoint.global_step;
      log.info("resuming from {} at global step {}", restored->file.string(),
               restored->checkpoint.global_step);
    }
  }

  RuntimeOptions ro;
  ro.run_dir = p.run_dir;
  ro.config_dir = cfg.file ? fs::absolute(*cfg.file).parent_path() : fs::path();
  ro.logger = p.log;
  ro.max_state_bytes = cfg.max_state_bytes;
  ro.checkpoint_dir = checkpoint_dir;
  ro.checkpoint_basename = kCheckpointBasename;
  ro.keep_checkpoints = cfg.keep_checkpoints;
  ro.time_every_n_steps = cfg.time_every_n_steps;
  ro.communicator = p.options.communicator;
  ro.collective_timeout = std::chrono::milliseconds(cfg.collective_timeout_ms);
  ro.on_recover = [dir = checkpoint_dir, log = p.log, comm, rank](Runtime& rt) {
    // The recreated session continues from the newest checkpoint, as TensorFlow's does, and every
    // hook's state goes back to that same moment, so no hook counts a replayed step twice.
    if (auto restored = restore_newest(dir, rt.session(), comm);
        restored && !restored->file.empty()) {
      rt.restore_hook_states(states_of_rank(restored->checkpoint.hook_states, rank));
      log->info("recovery: restored {} at global step {}", restored->file.string(),
                restored->checkpoint.global_step);
    }
  };
  p.runtime = std::make_unique<Runtime>(*p.session, ro);
  p.runtime->restore_hook_states(restored_states);
  // The runners of isolation groups, made with their first member's options.
  struct GroupRunner {
    std::shared_ptr<RunnerGroup> runner;
    std::string first_member;
    uint64_t memory_limit_mb = 0;  // the runner's, from its first member
  };
  std::map<std::string, GroupRunner> groups;
  for (auto& item : planned) {
    HookSettings settings{item.hook->name, item.hook->order,
                          item.hook->on_error.value_or(cfg.on_error)};
    settings.on_crash = item.isolation.on_crash;
    settings.max_restarts = item.isolation.max_restarts;
    settings.log_level = item.hook->log_level.value_or("");
    if (auto group = hook_groups.find(item.hook); group != hook_groups.end())
      settings.group = group->second;
    // In-process, the watchdog names a call over its limit; a runner enforces its own.
    if (item.isolation.isolation == Isolation::in_process)
      settings.call_timeout = std::chrono::milliseconds(item.isolation.call_timeout_ms);
    try {
      if (item.isolation.isolation == Isolation::process) {
        SandboxOptions sandbox;
        sandbox.call_timeout = std::chrono::milliseconds(item.isolation.call_timeout_ms);
        sandbox.memory_limit_mb = item.isolation.memory_limit_mb;
        std::shared_ptr<RunnerGroup> group;
        if (const std::string& name = item.isolation.group; !name.empty()) {
          auto [it, first] = groups.try_emplace(name);
          GroupRunner& shared = it->second;
          if (first) {
            shared = {make_runner_group(name, sandbox), item.hook->name,
                      item.isolation.memory_limit_mb};
          } else if (shared.memory_limit_mb != item.isolation.memory_limit_mb) {
            // One process has one limit.
            throw ConfigError("hooks '" + shared.first_member + "' and '" + item.hook->name +
                                  "' share isolation_group '" + name +
                                  "' but ask for different "
                                  "memory_limit_mb (" +
                                  std::to_string(shared.memory_limit_mb) + " and " +
                                  std::to_string(item.isolation.memory_limit_mb) +
                                  "): give them the same limit, or different groups",
                              "memory_limit_mb");
          }
          group = shared.runner;
        }
        const LoadedPlugin& plugin = *item.plugin;
        const ResolvedParams& params = item.params;
        // The runner reports the plugin's state version once it has loaded it.
        p.runtime->add_hook(plugin.metadata().id, 1, settings, [&](const hh_host& host) {
          return make_process_dispatch(plugin, settings.instance_name, params, host, sandbox,
                                       group);
        });
      } else {
        p.runtime->add_hook(item.plugin, settings, item.params);
      }
    } catch (const ConfigError& e) {
      if (moved_aside) put_back(p, *moved_aside, log);
      // The plugin's message often names the parameter it refused: point at that key's line.
      const std::string key = e.key().empty() ? key_named_in(e.what(), item.hook->params) : e.key();
      // The plugin's code reads a parameter its own list lacks or types otherwise: no line of
      // the config is wrong, so none is named.
      const bool plugins_own_mistake =
          key.empty() &&
          std::string_view(e.what()).find("the plugin's parameter list") != std::string_view::npos;
      const std::string where =
          plugins_own_mistake
              ? (cfg.file ? display_text(cfg.file->string()) + ": " : std::string()) + "[hook." +
                    item.hook->name + "]: "
              : cfg.where(*item.hook, key);
      throw ConfigError(where + display_text(e.what(), 1024), key);
    }
  }

  try {
    hooks_created.passed();
  } catch (const ConfigError&) {
    if (moved_aside) put_back(p, *moved_aside, log);
    throw;
  }

  // The effective configuration, every default filled in.
  log.info("configuration: {}", config_name);
  if (comm)
    log.info("  [run] distributed = mpi: rank {} of {} processes{}, collective_timeout_ms = {}",
             rank, world, rank == 0 ? " (the chief)" : "", cfg.collective_timeout_ms);
  log.info(
      "  [run] run_dir = {}, log_level = {}, on_error = {}",
      p.options.check_only ? cfg.run_dir.string() + " (untouched: --check)" : p.run_dir.string(),
      cfg.log_level, policy_name(cfg.on_error));
  log.info("  [run] plugin folders: {}", folder_list(dirs));
  std::string wl = "name = " + cfg.workload;
  for (const auto& v : workload_params.values())
    if (v.is_set) wl += ", " + v.spec.name + " = " + display_text(v.text);
  log.info("  [workload] {}", wl);
  for (const auto& item : planned) {
    std::string line = "plugin = " + display_text(item.plugin->metadata().id) + " (" +
                       display_text(item.plugin->file().string()) +
                       "), order = " + std::to_string(item.hook->order) +
                       ", on_error = " + policy_name(item.hook->on_error.value_or(cfg.on_error)) +
                       ", isolation = " + isolation_name(item.isolation.isolation);
    if (comm) line += ", ranks = " + item.ranks.text();
    if (item.isolation.isolation == Isolation::process)
      line += ", on_crash = " + std::string(crash_policy_name(item.isolation.on_crash)) +
              ", max_restarts = " + std::to_string(item.isolation.max_restarts) +
              ", memory_limit_mb = " + std::to_string(item.isolation.memory_limit_mb) +
              (item.isolation.group.empty() ? "" : ", isolation_group = " + item.isolation.group);
    line += ", call_timeout_ms = " + std::to_string(item.isolation.call_timeout_ms);
    for (const auto& v : item.params.values())
      if (v.is_set) line += ", " + display_text(v.spec.name) + " = " + display_text(v.text);
    log.info("  [hook.{}] {}", item.hook->name, line);
  }
}

Job::~Job() = default;

JobResult Job::run(const std::atomic<int>& signal_number) {
  Parts& p = *parts_;
  const auto t0 = std::chrono::steady_clock::now();
  auto stop_on_signal = [&] {
    const int sig = signal_number.load();
    if (sig == 0) return false;
    stop_for_signal(sig);  // a signal that came before the job could be told
    return true;
  };
  try {
    // A signal stops the job after the current step; in a distributed job the processes agree
    // on it at the step boundary, so every one of them stops after the same step.
    if (p.runtime->start())
      for (stop_on_signal(); !p.runtime->should_stop(); stop_on_signal()) p.runtime->run();
  } catch (const std::exception& e) {
    // Nothing may skip the ending: hooks still get end(), outputs are flushed, the summary prints.
    p.log->error("internal error: {}", e.what());
    if (p.comm) {
      // The other processes may be waiting in a collective this one will never reach.
      p.log->critical("ending every process of the distributed job");
      p.log->flush();
      p.comm->abort(kInternalErrorExit);
    }
    p.runtime->fail_job(std::string("internal error: ") + e.what());
  }
  JobResult result = p.runtime->close();
  wall_time_ = std::chrono::steady_clock::now() - t0;
  return result;
}

void Job::stop_for_signal(int signal) {
  parts_->runtime->request_stop(HH_STOP_CAUSE_SIGNAL,
                                std::string("received ") + signal_name(signal));
}

std::string Job::running_call() const {
  return parts_->runtime->running_call();
}

std::vector<HookReport> Job::reports() const {
  return parts_->runtime->reports();
}

std::vector<std::string> Job::hook_names() const {
  return parts_->runtime ? parts_->runtime->hook_order() : std::vector<std::string>{};
}

const fs::path& Job::run_dir() const {
  return parts_->run_dir;
}

std::string hook_failures_text(const std::vector<HookReport>& reports) {
  // Built with += piece by piece: GCC 12 at -O3 raises a false -Wrestrict on long operator+ chains.
  std::vector<std::string> disabled, failing;
  for (const auto& r : reports) {
    uint64_t failures = 0;
    for (const auto& [callback, stats] : r.callbacks) failures += stats.failures;
    std::string name = "'";
    name += display_text(r.instance_name);
    name += '\'';
    std::string line;
    if (r.disabled) {
      line = name;
      line += " (";
      line += display_text(r.failure);
      line += ')';
      disabled.push_back(std::move(line));
    } else if (failures > 0) {
      line = "hook ";
      line += name;
      line += " failed ";
      line += std::to_string(failures);
      line += failures == 1 ? " time (" : " times (first: ";
      line += display_text(r.failure);
      line += ')';
      failing.push_back(std::move(line));
    }
  }
  if (!disabled.empty()) {
    std::string out = std::to_string(disabled.size());
    out += disabled.size() == 1 ? " hook disabled: " : " hooks disabled: ";
    out += join(disabled, ", ");
    failing.insert(failing.begin(), std::move(out));
  }
  return join(failing, "; ");
}

std::string format_summary(const JobResult& result, const std::vector<HookReport>& reports,
                           std::chrono::duration<double> wall_time, int64_t first_step) {
  // One line per part, so a part added later is one more line here.
  std::string out = "\nhookhost: job " + std::string(outcome_name(result.outcome));
  if (const std::string failures = hook_failures_text(reports); !failures.empty())
    out += "; " + failures;
  out += " (" + display_text(result.reason) + ")\n";
  char line[512];
  const double secs = wall_time.count();
  std::snprintf(line, sizeof line,
                "  steps: %lld run (global step %lld -> %lld)\n"
                "  wall time: %.3f s, %.1f steps/s\n",
                static_cast<long long>(result.steps_run), static_cast<long long>(first_step),
                static_cast<long long>(result.global_step), secs,
                secs > 0 ? static_cast<double>(result.steps_run) / secs : 0.0);
  out += line;
  if (result.checkpoint_failures > 0)
    out += "  checkpoints: " + std::to_string(result.checkpoint_failures) + " write" +
           (result.checkpoint_failures == 1 ? "" : "s") +
           " failed, so the job cannot resume where it should; the last at " +
           display_text(result.checkpoint_error) + "\n";
  if (reports.empty()) return out + "  hooks: none\n";
  std::snprintf(line, sizeof line, "  %-20s %-22s %8s %10s %10s %10s\n", "hook", "callback",
                "calls", "total ms", "mean us", "max us");
  out += line;
  for (const auto& r : reports) {
    bool first = true;
    for (const char* cb : {"begin", "after_create_session", "before_run", "after_run", "end"}) {
      auto it = r.callbacks.find(cb);
      if (it == r.callbacks.end() || it->second.calls == 0) continue;
      const CallStats& s = it->second;
      // Per-step callbacks are timed on a sample of steps: the total is estimated from their mean.
      const double total_ms =
          std::chrono::duration<double, std::milli>(s.estimated_total()).count();
      const double mean_us = std::chrono::duration<double, std::micro>(s.mean()).count();
      const double max_us = std::chrono::duration<double, std::micro>(s.max).count();
      std::snprintf(line, sizeof line, "  %-20s %-22s %8llu %10.3f %10.1f %10.1f\n",
                    first ? r.instance_name.c_str() : "", cb,
                    static_cast<unsigned long long>(s.calls), total_ms, mean_us, max_us);
      out += line;
      first = false;
    }
    if (r.disabled)
      out += "  " + std::string(20, ' ') + " disabled: " + display_text(r.failure) + "\n";
  }
  return out;
}

}  // namespace hookhost
