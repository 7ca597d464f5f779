// The planned hooks made real: each instance's communicator over the processes that run it, then
// every hook added to the runtime by its tier (in process, or in a runner of its own or of its
// isolation group).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hookhost/host/runtime.hpp"
#include "job/job_plan.hpp"

namespace hookhost {

using HookCommunicators = std::map<const HookConfig*, std::shared_ptr<Communicator>>;

// Each hook instance's own communicator, so one hook's collectives never meet another's or the
// job's. Collective over the whole job: every process splits once per enabled hook, in the same
// order. Empty for a job of one process (`comm` null).
HookCommunicators split_hook_communicators(const JobPlan& plan, Communicator* comm);

// Adds every planned hook to `runtime`, creating it. A confined hook gets its own run folder,
// <run_dir>/hooks/<instance> (made here, before its runner starts), and its capability policy.
// Throws ConfigError naming the configuration line a plugin's refusal points at (or only the
// hook's section when the plugin is at fault), a policy path that does not exist, a declared need
// the configuration does not grant, and an isolation group whose members are confined differently
// or granted different things. Returns one line per confined hook: what it is granted. With
// `made_folders`, the folders made outside `run_dir` for write grants are added to it.
std::vector<std::string> instantiate(const JobPlan& plan, const HookCommunicators& communicators,
                                     const std::filesystem::path& run_dir, Runtime& runtime,
                                     std::vector<std::filesystem::path>* made_folders = nullptr);

}  // namespace hookhost
