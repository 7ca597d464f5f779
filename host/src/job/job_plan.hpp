// What a job will run and where, from its configuration and the plugins found: the workload's
// session, and every enabled hook with its plugin loaded, its parameters checked, its isolation
// and its ranks. Every configuration mistake is found here, before any folder is touched.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hookhost/host/communicator.hpp"
#include "hookhost/host/config.hpp"
#include "hookhost/host/loader.hpp"
#include "hookhost/host/params.hpp"
#include "hookhost/host/session.hpp"
#include "job/effective_isolation.hpp"

namespace spdlog {
class logger;
}

namespace hookhost {

// An enabled hook that runs on this process.
struct PlannedHook {
  const HookConfig* hook;
  // Loaded in process, or a private copy for its runner (isolation = process).
  std::shared_ptr<const LoadedPlugin> plugin;
  ResolvedParams params;
  EffectiveIsolation isolation;
  RankSelection ranks;
  StepFilter step_filter;     // every_n_steps, at_steps, first_n (job/step_filter_keys.hpp)
  ObserverSettings observer;  // mode, queue, policy (job/observer_keys.hpp)
};

struct JobPlan {
  const JobConfig* config = nullptr;
  int rank = 0;   // this process
  int world = 1;  // the job's processes
  bool distributed = false;
  std::vector<std::filesystem::path> plugin_dirs;  // in search order
  ResolvedParams workload_params;
  std::unique_ptr<Session> session;  // null when the job runs around the embedder's own step
  bool own_step = false;             // the embedder's session: no [workload]
  std::vector<PlannedHook> hooks;    // in config order
  // Every enabled hook, in config order, and whether it runs on this process: each gets a
  // communicator over the processes that run it.
  std::vector<std::pair<const HookConfig*, bool>> runs_here;
};

// Looks up and makes the workload, discovers the plugins (warning about missing folders and
// duplicate ids), then checks every hook of `cfg` (a disabled one too) and loads the enabled ones
// that run on this process. Throws ConfigError naming the file, line, section and key. `cfg` must
// outlive the plan. `communicator` is null for a job of one process. With `own_step` the job runs
// around the embedder's session: no workload is made, and a [workload] section is refused.
// `builtin_dir`: the built-in plugins' folder (empty: builtin_plugin_dir()).
JobPlan plan_job(const JobConfig& cfg, const std::vector<std::filesystem::path>& first_plugin_dirs,
                 const std::shared_ptr<Communicator>& communicator, spdlog::logger& log,
                 bool own_step = false, const std::filesystem::path& builtin_dir = {});

// The effective configuration, every default filled in, one line per section: what the job logs
// first and what its run record keeps.
std::vector<std::string> effective_configuration(const JobPlan& plan,
                                                 const std::string& run_dir_text);

// The effective configuration, every default filled in, as the job's first log lines.
// `run_dir_text` is the run directory as the operator should read it.
void log_effective_configuration(const JobPlan& plan, const std::string& run_dir_text,
                                 spdlog::logger& log);

}  // namespace hookhost
