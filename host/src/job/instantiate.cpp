#include "job/instantiate.hpp"

#include <string>
#include <string_view>

#include "hookhost/host/job.hpp"
#include "support/display_text.hpp"
#include "sandbox/process_dispatch.hpp"

namespace hookhost {

HookCommunicators split_hook_communicators(const JobPlan& plan, Communicator* comm) {
  HookCommunicators groups;
  if (comm)
    for (const auto& [hook, member] : plan.runs_here)
      if (std::shared_ptr<Communicator> group = comm->split(member)) groups[hook] = group;
  return groups;
}

namespace {

// The runners of isolation groups, made with their first member's options.
class GroupRunners {
 public:
  // The runner of `item`'s isolation group; null when it has none (a runner of its own).
  std::shared_ptr<RunnerGroup> runner_for(const PlannedHook& item, const SandboxOptions& sandbox) {
    const std::string& name = item.isolation.group;
    if (name.empty()) return nullptr;
    auto [it, first] = groups_.try_emplace(name);
    Runner& shared = it->second;
    if (first) {
      shared = {make_runner_group(name, sandbox), item.hook->name, item.isolation.memory_limit_mb};
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
    return shared.runner;
  }

 private:
  struct Runner {
    std::shared_ptr<RunnerGroup> runner;
    std::string first_member;
    uint64_t memory_limit_mb = 0;  // the runner's, from its first member
  };
  std::map<std::string, Runner> groups_;
};

HookSettings settings_of(const JobConfig& cfg, const PlannedHook& item,
                         const HookCommunicators& communicators) {
  HookSettings settings{item.hook->name, item.hook->order,
                        item.hook->on_error.value_or(cfg.on_error)};
  settings.on_crash = item.isolation.on_crash;
  settings.max_restarts = item.isolation.max_restarts;
  settings.log_level = item.hook->log_level.value_or("");
  if (auto group = communicators.find(item.hook); group != communicators.end())
    settings.group = group->second;
  // In-process, the watchdog names a call over its limit; a runner enforces its own.
  if (item.isolation.isolation == Isolation::in_process)
    settings.call_timeout = std::chrono::milliseconds(item.isolation.call_timeout_ms);
  return settings;
}

void add_hook(const JobConfig& cfg, const PlannedHook& item, const HookSettings& settings,
              GroupRunners& groups, Runtime& runtime) {
  if (item.isolation.isolation != Isolation::process) {
    runtime.add_hook(item.plugin, settings, item.params);
    return;
  }
  SandboxOptions sandbox;
  sandbox.call_timeout = std::chrono::milliseconds(item.isolation.call_timeout_ms);
  sandbox.memory_limit_mb = item.isolation.memory_limit_mb;
  sandbox.confine = cfg.confine == Confinement::sandboxed;
  std::shared_ptr<RunnerGroup> group = groups.runner_for(item, sandbox);
  const LoadedPlugin& plugin = *item.plugin;
  const ResolvedParams& params = item.params;
  // The runner reports the plugin's state version once it has loaded it.
  runtime.add_hook(plugin.metadata().id, 1, settings, [&](const hh_host& host) {
    return make_process_dispatch(plugin, settings.instance_name, params, host, sandbox, group);
  });
}

// A hook's refusal rewritten to start with the configuration line it points at.
[[noreturn]] void rethrow_at_hook(const JobConfig& cfg, const PlannedHook& item,
                                  const ConfigError& e) {
  // The plugin's message often names the parameter it refused: point at that key's line.
  const std::string key = e.key().empty() ? key_named_in(e.what(), item.hook->params) : e.key();
  // The plugin's code reads a parameter its own list lacks or types otherwise: no line of
  // the config is wrong, so none is named.
  const bool plugins_own_mistake =
      key.empty() &&
      std::string_view(e.what()).find("the plugin's parameter list") != std::string_view::npos;
  const std::string where =
      plugins_own_mistake ? (cfg.file ? display_text(cfg.file->string()) + ": " : std::string()) +
                                "[hook." + item.hook->name + "]: "
                          : cfg.where(*item.hook, key);
  throw ConfigError(where + display_text(e.what(), 1024), key);
}

}  // namespace

void instantiate(const JobPlan& plan, const HookCommunicators& communicators, Runtime& runtime) {
  GroupRunners groups;
  for (const PlannedHook& item : plan.hooks) {
    const HookSettings settings = settings_of(*plan.config, item, communicators);
    try {
      add_hook(*plan.config, item, settings, groups, runtime);
    } catch (const ConfigError& e) {
      rethrow_at_hook(*plan.config, item, e);
    }
  }
}

}  // namespace hookhost
