#include "job/instantiate.hpp"

#include <string>
#include <string_view>

#include <algorithm>
#include <set>
#include <system_error>

#include "hookhost/host/job.hpp"
#include "job/hook_policy.hpp"
#include "sandbox/process_dispatch.hpp"
#include "sandbox/runner_group.hpp"
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

// Members of an isolation group must be confined alike: refused with exit 2 naming both. A group
// in `known` (made earlier in the job) is matched against the member that started its runner.
void check_group_members(const JobPlan& plan, const IsolationGroups& known) {
  std::map<std::string, std::pair<std::string, const EffectiveIsolation*>> first_member;
  for (const auto& [name, group] : known)
    first_member.try_emplace(name, group.first_member, &group.isolation);
  for (const PlannedHook& item : plan.hooks) {
    if (item.isolation.isolation != Isolation::process || item.isolation.group.empty()) continue;
    auto [it, first] =
        first_member.try_emplace(item.isolation.group, item.hook->name, &item.isolation);
    if (first) continue;
    const std::string key = differing_grant(*it->second.second, item.isolation);
    if (key.empty()) continue;
    const std::string& other = it->second.first;
    throw ConfigError(
        plan.config->where(*item.hook, key) +
            (other == item.hook->name
                 ? "hook '" + other + "' shares isolation_group '" + item.isolation.group +
                       "', one process, with hooks given another " + key
                 : "hooks '" + other + "' and '" + item.hook->name + "' share isolation_group '" +
                       item.isolation.group + "', one process, but are given different " + key) +
            (key == "confine" ? " (off for one of them)" : "") + ": give them the same " + key +
            ", or different groups",
        key);
  }
}

// What of `policy` the running group runner's `shared` does not give: "" when it covers it all.
std::string uncovered(const confine::CapabilityPolicy& policy,
                      const confine::CapabilityPolicy& shared) {
  auto roots = [](const std::vector<std::string>& a, const std::vector<std::string>& b) {
    std::vector<std::filesystem::path> out(a.begin(), a.end());
    out.insert(out.end(), b.begin(), b.end());
    return out;
  };
  const auto readable = roots(shared.read, shared.write);
  const auto writable = roots(shared.write, {});
  for (const std::string& path : policy.read)
    if (!beneath_any(path, readable)) return "read " + display_text(path);
  for (const std::string& path : policy.write)
    if (!beneath_any(path, writable)) return "write " + display_text(path);
  if (policy.network && !shared.network) return "the network";
  if (policy.processes && !shared.processes) return "processes";
  if (policy.metadata && !shared.metadata) return "file metadata changes";
  return "";
}

// A member joining a group whose runner runs already (hookhost ctl attach or set): that process
// was confined when it started, so the hook's own policy must lie within the group's.
void check_joins_running_group(const JobConfig& cfg, const PlannedHook& item,
                               const confine::CapabilityPolicy& policy,
                               const IsolationGroup& group) {
  const std::string& name = item.isolation.group;
  auto refuse = [&](const std::string& what) {
    throw ConfigError(cfg.where(*item.hook) + "hook '" + item.hook->name +
                      "' cannot join isolation_group '" + name +
                      "' while the job runs: its runner process was confined when it started (" +
                      describe_policy(*group.policy) + "), and " + what +
                      ": give the hook another isolation_group (or none), or put it in the "
                      "configuration and start the job again");
  };
  auto without_memory = [](confine::ResourceLimits limits) {
    limits.address_space_mb = 0;
    return limits;
  };
  if (without_memory(policy.limits) != without_memory(group.policy->limits))
    refuse("the hook asks for other limits (" + describe_policy(policy) + ")");
  if (const std::string what = uncovered(policy, *group.policy); !what.empty())
    refuse("that process may not " + what + ", which the hook needs");
  if (item.isolation.confine == Confinement::required && !group.confine_required)
    refuse("the hook says confine = required, which its members did not");
}

// One policy per confined hook; the members of an isolation group share one process, and so its
// capabilities: the union of theirs. Limits are the process's, so members must agree on them. A
// group in `known` keeps the policy its runner started with.
Confinements plan_confinements(const JobPlan& plan, const std::filesystem::path& run_dir,
                               const IsolationGroups& known,
                               std::vector<std::filesystem::path>* made_folders) {
  check_group_members(plan, known);
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
    if (auto running = known.find(group); !group.empty() && running != known.end()) {
      // Confined alike (check_group_members): the group's runner has a policy.
      check_joins_running_group(*plan.config, item, policy, running->second);
      c.of_group.insert_or_assign(group, *running->second.policy);
      c.group_required[group] = running->second.confine_required;
    } else if (!group.empty()) {
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

// The runner of `item`'s isolation group, made with its first member's options when `groups` has
// none yet; null when it has no group (a runner of its own).
std::shared_ptr<RunnerGroup> runner_for(IsolationGroups& groups, const PlannedHook& item,
                                        const SandboxOptions& sandbox) {
  const std::string& name = item.isolation.group;
  if (name.empty()) return nullptr;
  auto [it, first] = groups.try_emplace(name);
  IsolationGroup& shared = it->second;
  if (first) {
    try {
      shared.runner = make_runner_group(name, sandbox);
    } catch (...) {
      groups.erase(it);
      throw;
    }
    shared.first_member = item.hook->name;
    shared.isolation = item.isolation;
    if (sandbox.confine) shared.policy = sandbox.policy;
    shared.confine_required = sandbox.confine_required;
  } else if (shared.isolation.memory_limit_mb != item.isolation.memory_limit_mb) {
    // One process has one limit.
    throw ConfigError("hooks '" + shared.first_member + "' and '" + item.hook->name +
                          "' share isolation_group '" + name +
                          "' but ask for different "
                          "memory_limit_mb (" +
                          std::to_string(shared.isolation.memory_limit_mb) + " and " +
                          std::to_string(item.isolation.memory_limit_mb) +
                          "): give them the same limit, or different groups",
                      "memory_limit_mb");
  }
  return shared.runner;
}

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
              const Confinements& confinements, IsolationGroups& groups, Runtime& runtime) {
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
  std::shared_ptr<RunnerGroup> group = runner_for(groups, item, sandbox);
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
                                     IsolationGroups* known,
                                     std::vector<std::filesystem::path>* made_folders) {
  IsolationGroups own;  // the groups of this call alone when the caller keeps none
  IsolationGroups& groups = known ? *known : own;
  // A group none of whose hooks is left has no runner to join: a new member starts it afresh.
  std::erase_if(groups, [](const auto& group) { return group.second.runner->member_count() == 0; });
  const Confinements confinements = plan_confinements(plan, run_dir, groups, made_folders);
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
  std::set<std::string> before;  // a group no hook of this call could join is not kept
  for (const auto& [name, group] : groups) before.insert(name);
  auto forget_new_groups = [&] {
    std::erase_if(groups, [&](const auto& group) { return !before.count(group.first); });
  };
  for (const PlannedHook& item : plan.hooks) {
    const HookSettings settings = settings_of(*plan.config, item, communicators, confinements);
    try {
      add_hook(item, settings, confinements, groups, runtime);
    } catch (const ConfigError& e) {
      forget_new_groups();
      rethrow_at_hook(*plan.config, item, e);
    } catch (...) {
      forget_new_groups();
      throw;
    }
  }
  return granted;
}

}  // namespace hookhost
