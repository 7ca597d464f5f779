// A whole job as the hookhost program runs it: plugins found and loaded from folders, the workload
// built from the configuration, hooks instantiated in order, the newest checkpoint restored, then
// steps until the job ends. Everything that can be wrong with the configuration is found by the
// constructor, before any hook's begin() runs.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "config.hpp"
#include "discovery.hpp"
#include "runtime.hpp"

namespace spdlog {
class logger;
}

namespace hookhost {

// The folder of the built-in plugins: <bin>/../lib/hookhost/plugins next to the executable (the
// same layout in a build tree and an installation), else the build tree's folder.
std::filesystem::path builtin_plugin_dir();

// Plugin folders in search order: `first` (e.g. --plugin-dir), then `config`, then the folders in
// HOOKHOST_PLUGIN_PATH (colon-separated), then the built-in folder (`builtin`, or
// builtin_plugin_dir() when empty). Duplicates removed.
std::vector<std::filesystem::path> plugin_search_path(
    const std::vector<std::filesystem::path>& first,
    const std::vector<std::filesystem::path>& config, const std::filesystem::path& builtin = {});

// What the program refuses in a hook's parameter texts before resolve_params(), which lets these
// through: integers beyond 64 bits, NaN and infinite floats, empty items in a list. Throws
// ConfigError with the key (the caller adds where it came from).
void check_param_texts(const PluginMetadata& schema,
                       const std::multimap<std::string, std::string>& raw);

// The first of `keys` that `message` names as a whole word ("num_steps" in "invalid
// num_steps=-3"), or "": the key a plugin's refusal in create() is reported at.
std::string key_named_in(const std::string& message,
                         const std::multimap<std::string, std::string>& keys);

struct JobOptions {
  JobConfig config;
  std::vector<std::filesystem::path> plugin_dirs;  // searched before the config's
  bool fresh = false;  // move an existing run directory aside instead of resuming it
  // The embedder's own step (the Python package's loop, a C++ trainer): the job runs its hooks
  // around this session instead of a [workload], which the configuration must then not have. It
  // must outlive the Job; the embedder drives the steps through runtime() instead of run().
  Session* session = nullptr;
  // The built-in plugins' folder; empty: builtin_plugin_dir() (beside the program). A program
  // that is not installed beside them (the Python interpreter) names it.
  std::filesystem::path builtin_plugin_dir;
  // Validate only (hookhost run --check): every hook is created as for a run, sandboxed ones in
  // their runners, but the run directory is neither created nor locked, no checkpoint is read or
  // written, and hooks write their outputs to a temporary folder removed with the Job. Do not
  // call run() on such a Job: destroy it.
  bool check_only = false;
  std::shared_ptr<spdlog::logger> logger;
  // Live control (hookhost ctl, Job::control): a socket, control.sock, in the run directory,
  // answering the job's own user. Never for check_only or a distributed job (docs/operations.md).
  bool live_control = true;
  // The job's processes when it runs on several ([run] distributed = mpi; hookhost/host/mpi.hpp).
  // Every process builds its own Job from the same configuration; null (or a communicator of one
  // process) runs the job as one process.
  std::shared_ptr<Communicator> communicator;
};

struct JobPlan;

// A live-control request's answer: what hookhost ctl prints, and whether it succeeded.
struct ControlReply {
  bool ok = false;
  std::string text;
};

class Job {
 public:
  // Throws ConfigError (exit status 2) for any configuration mistake.
  explicit Job(JobOptions options);
  ~Job();

  // Runs to the end. `signal_number` is polled before each step: when it becomes nonzero the job
  // stops after the current step with cause HH_STOP_CAUSE_SIGNAL.
  JobResult run(const std::atomic<int>& signal_number);

  // The job's runtime, for an embedder that drives the loop itself (JobOptions::session):
  // start(), run() until should_stop(), close(). Everything else is as for run(): the run
  // directory is locked, the newest checkpoint was restored before the hooks were created, and
  // requested checkpoints go to the run directory's checkpoint folder.
  Runtime& runtime();
  Session& session();

  // Stops the job after the current step with cause HH_STOP_CAUSE_SIGNAL. [thread-safe]
  void stop_for_signal(int signal);
  // The hook call running now ("" when none), for a signal's message. [thread-safe]
  std::string running_call() const;
  // A live-control request, as hookhost ctl sends it ({"attach", "extra", "logging_tensor",
  // "tensors=loss"}, {"status"}, ...; docs/operations.md): checked as the configuration is, then
  // applied at the next step boundary. Blocks until then (at most a few seconds: a change not
  // applied by then is answered "queued"). Not on the thread that runs the steps. [thread-safe]
  ControlReply control(const std::vector<std::string>& words);
  // The hook instances created, in call order.
  std::vector<std::string> hook_names() const;

  // Runtime::reports(). [thread-safe]
  std::vector<HookReport> reports() const;
  std::chrono::duration<double> wall_time() const { return wall_time_; }
  const std::filesystem::path& run_dir() const;
  int64_t first_step() const { return first_step_; }

 private:
  struct Parts;
  static void start_live_control(Parts& p, const JobPlan& plan);
  std::unique_ptr<Parts> parts_;
  std::chrono::duration<double> wall_time_{0};
  int64_t first_step_ = 0;
};

// The hooks that failed during the job, as the summary's headline says it: "1 hook disabled: 'x'
// (before_run failed: ...)", "hook 'y' failed 3 times (first: after_run failed: ...)"; "" when
// no hook failed. A disabled hook, an error under on_error = continue and a lost runner all count.
std::string hook_failures_text(const std::vector<HookReport>& reports);

}  // namespace hookhost
