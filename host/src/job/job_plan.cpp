#include "job/job_plan.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "confine/kernel_support.hpp"
#include "hookhost/host/discovery.hpp"
#include "hookhost/host/job.hpp"
#include "job/observer_keys.hpp"
#include "job/param_checks.hpp"
#include "job/rank_placement.hpp"
#include "job/step_filter_keys.hpp"
#include "plugins/trust.hpp"
#include "support/display_text.hpp"
#include "support/text.hpp"
#include "workloads/registry.hpp"

namespace hookhost {
namespace fs = std::filesystem;

namespace {

// The plugin folders as messages show them: "A, B, C".
std::string folder_list(const std::vector<fs::path>& folders) {
  std::vector<std::string> names;
  for (const auto& folder : folders) names.push_back(display_text(folder.string()));
  return join(names, ", ");
}

// The workload named in [workload], made with its checked parameters. Workload first: it needs no
// plugin, and its mistakes are the cheapest to report.
void plan_workload(const JobConfig& cfg, const std::shared_ptr<Communicator>& communicator,
                   JobPlan& plan) {
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
  plan.workload_params =
      resolve_checked(workload->schema(), "workload", cfg.workload_params, workload_where);
  try {
    plan.session = workload->make(plan.workload_params, communicator);
  } catch (const ConfigError& e) {
    rethrow_at(e, cfg.where_workload(e.key()));
  }
}

// Plugins: discovered is not enabled; only configured hooks are loaded.
DiscoveryResult discover(const JobConfig& cfg, const std::vector<fs::path>& dirs,
                         spdlog::logger& log) {
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
  return found;
}

// The discovered plugin a hook names; a disabled hook is checked too, so enabling it later cannot
// reveal an old mistake (a misspelt plugin id, a bad parameter) in the middle of a run.
const DiscoveredPlugin& plugin_of(const JobConfig& cfg, const HookConfig& hook,
                                  const DiscoveryResult& found, const std::vector<fs::path>& dirs) {
  if (const DiscoveredPlugin* d = found.find(hook.plugin)) return *d;
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

// [run] allowed_plugins and the trust rules of the plugin's file and folder.
void check_plugin_allowed(const JobConfig& cfg, const HookConfig& hook, const DiscoveredPlugin& d) {
  if (!cfg.allowed_plugins.empty() &&
      std::find(cfg.allowed_plugins.begin(), cfg.allowed_plugins.end(), d.metadata.id) ==
          cfg.allowed_plugins.end())
    throw ConfigError(cfg.where(hook, "plugin") + "plugin '" + display_text(d.metadata.id) +
                          "' is not in [run] allowed_plugins (" +
                          display_text(join(cfg.allowed_plugins, ", ")) +
                          "): add it there, or remove or disable this hook",
                      "plugin");
  if (!cfg.allow_insecure_plugins) {
    if (std::string why = trust_problem(d.file.parent_path(), d.file); !why.empty())
      throw ConfigError(cfg.where(hook, "plugin") + "refusing to load plugin '" +
                            display_text(d.metadata.id) + "': " + display_text(why, 2048),
                        "plugin");
  }
}

RankSelection ranks_of(const JobConfig& cfg, const HookConfig& hook, const DiscoveredPlugin& d,
                       int world) {
  const RankSelection ranks = hook.ranks.value_or(default_ranks(d.metadata));
  if (ranks.kind == RankSelection::Kind::listed && ranks.listed.back() >= world)
    throw ConfigError(
        cfg.where(hook, "ranks") + "rank " + std::to_string(ranks.listed.back()) +
            " does not exist: this job runs " + std::to_string(world) +
            (world == 1 ? " process (rank 0)"
                        : " processes (ranks 0 to " + std::to_string(world - 1) + ")") +
            "; list ranks below " + std::to_string(world) + ", or use chief or all",
        "ranks");
  return ranks;
}

// The hook's plugin as its tier runs it, with the configuration's sha256 pin checked.
std::shared_ptr<const LoadedPlugin> load_for_tier(const JobConfig& cfg, const HookConfig& hook,
                                                  const DiscoveredPlugin& d, Isolation isolation) {
  std::shared_ptr<const LoadedPlugin> plugin;
  if (isolation == Isolation::process) {
    // Its code runs in its runner only: not even its constructors run in this process. The
    // runner opens this private copy, at start and at every restart; the pin below is its hash.
    try {
      plugin = private_plugin_copy(d);
    } catch (const std::exception& e) {
      throw ConfigError(cfg.where(hook, "plugin") + display_text(e.what(), 1024));
    }
  } else {
    try {
      plugin = load_plugin(d);
    } catch (const LoadError& e) {
      throw ConfigError(cfg.where(hook, "plugin") + e.what());
    }
  }
  if (!hook.sha256.empty() && hook.sha256 != plugin->sha256())
    throw ConfigError(cfg.where(hook, "sha256") + "plugin file " + display_text(d.file.string()) +
                          " has SHA-256 " + plugin->sha256() + ", but the configuration pins " +
                          hook.sha256 +
                          ": the file is not the one that was approved; restore it, or pin "
                          "the new hash after reviewing the plugin",
                      "sha256");
  return plugin;
}

void plan_hook(const JobConfig& cfg, const HookConfig& hook, const DiscoveryResult& found,
               JobPlan& plan, spdlog::logger& log) {
  const DiscoveredPlugin& d = plugin_of(cfg, hook, found, plan.plugin_dirs);
  const auto hook_where = [&](const std::string& key) { return cfg.where(hook, key); };
  SplitHookKeys keys = split_step_filter(cfg, hook, d.metadata);
  if (!hook.enabled) {
    split_observer_keys(cfg, hook, d.metadata, CrashPolicy::restart, keys.plugin_params);
    resolve_checked(d.metadata, hook.name, keys.plugin_params, hook_where);
    log.info("hook '{}' is disabled in the configuration", hook.name);
    return;
  }
  check_plugin_allowed(cfg, hook, d);
  const RankSelection ranks = ranks_of(cfg, hook, d, plan.world);
  const bool runs_on_this_process = ranks.includes(plan.rank);
  plan.runs_here.emplace_back(&hook, runs_on_this_process);
  // Checked on every process, so each reports the same mistakes; loaded where it runs only.
  EffectiveIsolation isolation = effective_isolation(cfg, hook, d, log);
  ObserverSettings observer =
      split_observer_keys(cfg, hook, d.metadata, isolation.on_crash, keys.plugin_params);
  if (d.metadata.observes && !observer.enabled)
    log.info(
        "hook '{}': its plugin declares it an observer, but it runs on the step (its section says "
        "mode = step, or its on_error or on_crash is fail)",
        hook.name);
  ResolvedParams params = resolve_checked(d.metadata, hook.name, keys.plugin_params, hook_where);
  keys.filter.cadence_every_n_steps = declared_cadence(d.metadata, params);
  if (!runs_on_this_process) return;
  auto plugin = load_for_tier(cfg, hook, d, isolation.isolation);
  plan.hooks.push_back({&hook, std::move(plugin), std::move(params), std::move(isolation), ranks,
                        std::move(keys.filter), observer});
}

}  // namespace

JobPlan plan_job(const JobConfig& cfg, const std::vector<fs::path>& first_plugin_dirs,
                 const std::shared_ptr<Communicator>& communicator, spdlog::logger& log,
                 bool own_step, const fs::path& builtin_dir) {
  JobPlan plan;
  plan.config = &cfg;
  plan.distributed = communicator != nullptr;
  plan.rank = communicator ? communicator->rank() : 0;
  plan.world = communicator ? communicator->size() : 1;
  plan.own_step = own_step;
  if (!own_step)
    plan_workload(cfg, communicator, plan);
  else if (cfg.workload_section)
    throw ConfigError(cfg.workload_section->describe() +
                          ": [workload] is not used here: this job runs around the program's own "
                          "step (remove the section, or run it with `hookhost run`)",
                      "");
  plan.plugin_dirs = plugin_search_path(first_plugin_dirs, cfg.plugin_dirs, builtin_dir);
  const DiscoveryResult found = discover(cfg, plan.plugin_dirs, log);
  for (const HookConfig& hook : cfg.hooks) plan_hook(cfg, hook, found, plan, log);
  return plan;
}

namespace {

// Once per job with a sandboxed hook: what its runner's confinement enforces on this kernel.
void log_confinement(const JobPlan& plan, spdlog::logger& log) {
  const bool sandboxed = std::any_of(plan.hooks.begin(), plan.hooks.end(), [](const auto& item) {
    return item.isolation.isolation == Isolation::process;
  });
  if (!sandboxed) return;
  const bool confined = std::any_of(plan.hooks.begin(), plan.hooks.end(), [](const auto& item) {
    return item.isolation.isolation == Isolation::process &&
           item.isolation.confine != Confinement::off;
  });
  if (!confined) {
    log.info("confinement: off (confine = off): sandboxed hooks run unconfined");
    return;
  }
  const confine::KernelSupport support = confine::detect_kernel_support();
  if (support.no_new_privs && support.seccomp_trap && support.landlock_abi > 0)
    log.info("{}", confine::describe_confinement(support));
  else
    log.warn("{}", confine::describe_confinement(support));
}

}  // namespace

std::vector<std::string> effective_configuration(const JobPlan& plan,
                                                 const std::string& run_dir_text) {
  const JobConfig& cfg = *plan.config;
  std::vector<std::string> lines;
  lines.push_back(
      fmt::format("configuration: {}", cfg.file ? cfg.file->string() : "(no config file)"));
  if (plan.distributed)
    lines.push_back(fmt::format(
        "  [run] distributed = {}: rank {} of {} processes{}, collective_timeout_ms = {}",
        // Not mpi: the embedding program's processes (the Python package's torch.distributed).
        cfg.distributed == Distribution::mpi ? "mpi" : "the embedding program's", plan.rank,
        plan.world, plan.rank == 0 ? " (the chief)" : "", cfg.collective_timeout_ms));
  lines.push_back(
      fmt::format("  [run] run_dir = {}, log_level = {}, on_error = {}, checkpoint_wait = {}",
                  run_dir_text, cfg.log_level, policy_name(cfg.on_error), cfg.checkpoint_wait));
  lines.push_back(fmt::format("  [run] plugin folders: {}", folder_list(plan.plugin_dirs)));
  lines.push_back(
      fmt::format("  [run] confine = {}",
                  confinement_name(cfg.isolation.confine.value_or(Confinement::sandboxed))));
  std::string wl = "name = " + cfg.workload;
  for (const auto& v : plan.workload_params.values())
    if (v.is_set) wl += ", " + v.spec.name + " = " + display_text(v.text);
  lines.push_back(
      fmt::format("  [workload] {}", plan.own_step ? std::string("(the program's own step)") : wl));
  for (const auto& item : plan.hooks) {
    std::string line = "plugin = " + display_text(item.plugin->metadata().id) + " (" +
                       display_text(item.plugin->file().string()) +
                       "), order = " + std::to_string(item.hook->order) +
                       ", on_error = " + policy_name(item.hook->on_error.value_or(cfg.on_error)) +
                       ", isolation = " + isolation_name(item.isolation.isolation);
    if (plan.distributed) line += ", ranks = " + item.ranks.text();
    if (item.isolation.isolation == Isolation::process)
      line += ", on_crash = " + std::string(crash_policy_name(item.isolation.on_crash)) +
              ", max_restarts = " + std::to_string(item.isolation.max_restarts) +
              ", memory_limit_mb = " + std::to_string(item.isolation.memory_limit_mb) +
              (item.isolation.group.empty() ? "" : ", isolation_group = " + item.isolation.group) +
              ", confine = " + confinement_name(item.isolation.confine);
    line += ", call_timeout_ms = " + std::to_string(item.isolation.call_timeout_ms);
    if (item.step_filter.set()) line += ", " + item.step_filter.text();
    if (item.hook->resume_state == ResumeState::any_build)  // the default, same_build, is not said
      line += ", resume_state = " + std::string(resume_state_name(ResumeState::any_build));
    if (item.observer.enabled)
      line += ", mode = observe, queue = " + std::to_string(item.observer.queue) +
              ", policy = " + when_full_name(item.observer.when_full);
    for (const auto& v : item.params.values())
      if (v.is_set) line += ", " + display_text(v.spec.name) + " = " + display_text(v.text);
    lines.push_back(fmt::format("  [hook.{}] {}", item.hook->name, line));
  }
  return lines;
}

void log_effective_configuration(const JobPlan& plan, const std::string& run_dir_text,
                                 spdlog::logger& log) {
  for (const auto& line : effective_configuration(plan, run_dir_text)) log.info("{}", line);
  log_confinement(plan, log);
}

}  // namespace hookhost
