#include "job/instantiate.hpp"

#include <string>
#include <string_view>

#include <algorithm>
#include <system_error>

#include "hookhost/host/job.hpp"
#include "job/hook_policy.hpp"
#include "sandbox/process_dispatch.hpp"
#include "support/display_text.hpp"
#include "support/text.hpp"

namespace hookhost {

HookCommunicators split_hook_communicators(const JobPlan& plan, Communicator* comm) {
  HookCommunicators groups;
  if (comm)
    for (const auto& [hook, member] : plan.runs_here)
      if (std::shared_ptr<Communicator> group = comm->split(member)) groups[hook] = group;
  return groups;
}

namespace {

// What a confined hook's runner runs under: its own policy, or its isolation group's.
struct Confinements {
  std::map<const PlannedHook*, confine::CapabilityPolicy> of_hook;
  std::map<const PlannedHook*, std::filesystem::path> run_dir_of_hook;
  std::map<std::string, confine::CapabilityPolicy> of_group;
  std::map<std::string, bool> group_required;  // a member says confine = required
};

// The first key on which two members of one isolation group disagree about their confinement,
// or empty: one process has one confinement, so the operator grants its members alike.
std::string differing_grant(const EffectiveIsolation& a, const EffectiveIsolation& b) {
  if ((a.confine == Confinement::off) != (b.confine == Confinement::off)) return "confine";
  if (a.allow_read != b.allow_read) return "allow_read";
  if (a.allow_write != b.allow_write) return "allow_write";
  if (a.allow_network != b.allow_network) return "allow_network";
  if (a.allow_processes != b.allow_processes) return "allow_processes";
  if (a.grant_declared != b.grant_declared) return "grant";
  return "";
}

// Members of an isolation group must be confined alike: refused with exit 2 naming both.
void check_group_members(const JobPlan& plan) {
  std::map<std::string, const PlannedHook*> first_member;
  for (const PlannedHook& item : plan.hooks) {
    if (item.isolation.isolation != Isolation::process || item.isolation.group.empty()) continue;
    auto [it, first] = first_member.try_emplace(item.isolation.group, &item);
    if (first) continue;
    const PlannedHook& other = *it->second;
    const std::string key = differing_grant(other.isolation, item.isolation);
    if (key.empty()) continue;
    throw ConfigError(plan.config->where(*item.hook, key) + "hooks '" + other.hook->name +
                          "' and '" + item.hook->name + "' share isolation_group '" +
                          item.isolation.group + "', one process, but are given different " + key +
                          (key == "confine" ? " (off for one of them)" : "") +
                          ": give them the same " + key + ", or different groups",
                      key);
  }
}

// One policy per confined hook; the members of an isolation group share one process, and so its
// capabilities: the union of theirs. Limits are the process's, so members must agree on them.
Confinements plan_confinements(const JobPlan& plan, const std::filesystem::path& run_dir,
                               std::vector<std::filesystem::path>* made_folders) {
  check_group_members(plan);
  Confinements c;
  std::map<std::string, const PlannedHook*> first_member;
  for (const PlannedHook& item : plan.hooks) {
    if (item.isolation.isolation != Isolation::process ||
        item.isolation.confine == Confinement::off)
      continue;
    std::filesystem::path own = hook_run_dir(run_dir, item.hook->name);
    std::error_code ec;
    std::filesystem::create_directories(own, ec);
    if (ec)
      throw ConfigError(plan.config->where(*item.hook) + "cannot make hook '" + item.hook->name +
                        "''s run folder " + display_text(own.string()) + ": " + ec.message());
    // Its name without links: the runner follows none on its policy's paths.
    if (std::filesystem::path real = std::filesystem::canonical(own, ec); !ec) own = real;
    confine::CapabilityPolicy policy = hook_policy(*plan.config, item, own, made_folders);
    refuse_token_folder_grant(*plan.config, item, policy);
    c.run_dir_of_hook[&item] = own;
    const std::string& group = item.isolation.group;
    if (!group.empty()) {
      // The group runs under the strictest confine of its members.
      c.group_required[group] |= item.isolation.confine == Confinement::required;
      auto [it, first] = c.of_group.try_emplace(group, policy);
      if (first) {
        first_member[group] = &item;
      } else {
        confine::CapabilityPolicy& shared = it->second;
        // memory_limit_mb is checked with the runner (below), confined or not.
        auto without_memory = [](confine::ResourceLimits limits) {
          limits.address_space_mb = 0;
          return limits;
        };
        if (without_memory(shared.limits) != without_memory(policy.limits))
          throw ConfigError(plan.config->where(*item.hook) + "hooks '" +
                            first_member[group]->hook->name + "' and '" + item.hook->name +
                            "' share isolation_group '" + group +
                            "' but ask for different limits (" + describe_policy(shared) + " / " +
                            describe_policy(policy) +
                            "): give them the same limit_* keys, or "
                            "different groups");
        for (const std::string& path : policy.read)
          if (std::find(shared.read.begin(), shared.read.end(), path) == shared.read.end())
            shared.read.push_back(path);
        for (const std::string& path : policy.write)
          if (std::find(shared.write.begin(), shared.write.end(), path) == shared.write.end())
            shared.write.push_back(path);
        shared.network = shared.network || policy.network;
        shared.processes = shared.processes || policy.processes;
        shared.metadata = shared.metadata || policy.metadata;
      }
    }
    c.of_hook.emplace(&item, std::move(policy));
  }
  return c;
}

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
                         const HookCommunicators& communicators, const Confinements& confinements) {
  HookSettings settings{item.hook->name, item.hook->order,
                        item.hook->on_error.value_or(cfg.on_error)};
  settings.on_crash = item.isolation.on_crash;
  settings.max_restarts = item.isolation.max_restarts;
  settings.log_level = item.hook->log_level.value_or("");
  settings.step_filter = item.step_filter;
  settings.observer = item.observer;
  // The build the host checked: the bytes it loads, or hands a runner (isolation = process).
  settings.plugin_build = item.plugin->sha256();
  settings.resume_state = item.hook->resume_state.value_or(ResumeState::same_build);
  if (auto group = communicators.find(item.hook); group != communicators.end())
    settings.group = group->second;
  if (auto own = confinements.run_dir_of_hook.find(&item);
      own != confinements.run_dir_of_hook.end())
    settings.run_dir = own->second.string();
  // The host writes for a confined hook only where the hook itself may.
  if (auto policy = confinements.of_hook.find(&item); policy != confinements.of_hook.end())
    settings.write_roots = policy->second.write;
  // In-process, the watchdog names a call over its limit; a runner enforces its own.
  if (item.isolation.isolation == Isolation::in_process)
    settings.call_timeout = std::chrono::milliseconds(item.isolation.call_timeout_ms);
  return settings;
}

void add_hook(const PlannedHook& item, const HookSettings& settings,
              const Confinements& confinements, GroupRunners& groups, Runtime& runtime) {
  if (item.isolation.isolation != Isolation::process) {
    runtime.add_hook(item.plugin, settings, item.params);
    return;
  }
  SandboxOptions sandbox;
  sandbox.call_timeout = std::chrono::milliseconds(item.isolation.call_timeout_ms);
  sandbox.memory_limit_mb = item.isolation.memory_limit_mb;
  sandbox.confine = item.isolation.confine != Confinement::off;
  sandbox.confine_required = item.isolation.confine == Confinement::required;
  if (auto required = confinements.group_required.find(item.isolation.group);
      required != confinements.group_required.end())
    sandbox.confine_required = required->second;
  if (auto policy = confinements.of_hook.find(&item); policy != confinements.of_hook.end())
    sandbox.policy = item.isolation.group.empty() ? policy->second
                                                  : confinements.of_group.at(item.isolation.group);
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

std::vector<std::string> instantiate(const JobPlan& plan, const HookCommunicators& communicators,
                                     const std::filesystem::path& run_dir, Runtime& runtime,
                                     std::vector<std::filesystem::path>* made_folders) {
  const Confinements confinements = plan_confinements(plan, run_dir, made_folders);
  std::vector<std::string> granted;
  for (const auto& [item, policy] : confinements.of_hook)
    granted.push_back(describe_hook(item->hook->name, display_text(item->plugin->metadata().id)) +
                      " runs confined: " +
                      describe_policy(item->isolation.group.empty()
                                          ? policy
                                          : confinements.of_group.at(item->isolation.group)) +
                      (item->isolation.group.empty()
                           ? ""
                           : " (isolation group '" + item->isolation.group + "')"));
  GroupRunners groups;
  for (const PlannedHook& item : plan.hooks) {
    const HookSettings settings = settings_of(*plan.config, item, communicators, confinements);
    try {
      add_hook(item, settings, confinements, groups, runtime);
    } catch (const ConfigError& e) {
      rethrow_at_hook(*plan.config, item, e);
    }
  }
  return granted;
}

}  // namespace hookhost
