// The runtime: TensorFlow's MonitoredSession for plugin hooks. It drives every hook instance
// through begin -> after_create_session -> (before_run -> after_run)* -> end, enforces that order,
// recovers the session from recoverable errors, and contains hook failures by policy.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <hookhost/hook.h>

#include "communicator.hpp"
#include "hook_dispatch.hpp"
#include "hook_state.hpp"
#include "latency_histogram.hpp"
#include "loader.hpp"
#include "params.hpp"
#include "run_events.hpp"
#include "session.hpp"

namespace spdlog {
class logger;
}

namespace hookhost {

// What happens when a hook's call fails (returns HH_ERROR or throws). HH_ERROR_FATAL always
// disables the hook; stop and fail still apply to it.
enum class FailurePolicy {
  keep_going,  // "continue": the call is logged and counted, the hook keeps getting calls
  disable,     // default: the hook gets no more calls except end(failed); the others continue
  stop,        // the hook is disabled and the job stops cleanly after the current step
  fail,        // the job ends with an error (a failure in end() too, after every hook's end())
};
const char* policy_name(FailurePolicy policy);
std::optional<FailurePolicy> parse_policy(const std::string& text);
const char* policy_choices();  // "continue, disable, stop or fail", for messages

// What happens when a hook's process (another isolation tier) is lost: it crashed, exited, hung
// past its timeout or closed its channel.
enum class CrashPolicy {
  restart,  // default: a new process, create/begin/after_create_session replayed with the hook's
            // last saved state; after max_restarts the hook is disabled
  disable,  // the hook gets no more calls; the others continue
  stop,     // the hook is disabled and the job stops cleanly after the current step
  fail,     // the job fails
};
const char* crash_policy_name(CrashPolicy policy);
std::optional<CrashPolicy> parse_crash_policy(const std::string& text);

// Which steps an instance's before_run and after_run are called on (every step when nothing is
// set): the host skips the others, and with them a sandboxed hook's round trips. A step is called
// when it passes every filter set: its global step (the one its before_run context carries) is a
// multiple of `every_n_steps`, is one of `at_steps`, and is among the first `first_n` steps this
// runtime runs. begin, after_create_session and end are always called.
struct StepFilter {
  uint64_t every_n_steps = 0;     // 0: not set
  std::vector<int64_t> at_steps;  // ascending, no repeats; empty: not set
  uint64_t first_n = 0;           // 0: not set
  // The plugin's declared cadence (its note's cadence.every_n_steps, declared_cadence()): the
  // hook's first step of the run, and the steps whose global step + 1 is a multiple of it.
  uint64_t cadence_every_n_steps = 0;  // 0: none
  bool set() const {
    return every_n_steps != 0 || !at_steps.empty() || first_n != 0 || cadence_every_n_steps != 0;
  }
  // "every_n_steps = 10, first_n = 100", or "" when nothing is set.
  std::string text() const;
};

// The cadence a plugin declares for its hooks (PluginMetadata::cadence_param) with these
// parameters: the parameter's value when it is a positive INT, else 0 (every step).
// Runtime::add_hook applies it to an in-process hook whose filter has none.
uint64_t declared_cadence(const PluginMetadata& plugin, const ResolvedParams& params);

// An observer (mode = observe): a hook that never feeds, never fails the job and stops it only by
// request. Its before_run and after_run run on a worker thread of its own, behind the step, in step
// order and one step at a time; the training thread only copies the values it fetched and queues
// the step. What it fetches at a step is what its previous before_run asked for (its first
// before_run runs on the training thread to learn it). Its errors, and the step they concern, are
// handled at the next step boundary under on_error; every observer's queue drains before a
// checkpoint, a new session and end, so none of them sees a state newer than its queue holds.
struct ObserverSettings {
  bool enabled = false;
  uint32_t queue = 8;  // steps waiting for the worker, at most
  // When the queue is full: block makes the step wait for room (nothing is lost); skip does not
  // queue the step (the observer never sees it; counted in HookReport::observer_skipped_steps).
  enum class WhenFull { block, skip } when_full = WhenFull::block;
};
const char* when_full_name(ObserverSettings::WhenFull when_full);

// Whether an instance takes a restored state that another build of its plugin saved (the state's
// plugin_build is not the instance's): same_build, the default, starts it without that state and
// logs a warning naming both builds; any_build gives it the state anyway ([hook.NAME]
// resume_state). A state whose build is unknown, or an instance whose build is unknown, is given
// as before.
enum class ResumeState { same_build, any_build };
const char* resume_state_name(ResumeState resume_state);

struct HookSettings {
  std::string instance_name;
  int order = 0;  // lower runs first; ties keep the order hooks were added
  FailurePolicy on_error = FailurePolicy::disable;
  CrashPolicy on_crash = CrashPolicy::restart;
  uint32_t max_restarts = 3;                       // then the hook is disabled
  std::chrono::milliseconds restart_backoff{100};  // doubled after each restart of the instance
  // A call running longer is named in the log (in-process) or killed with its process (another
  // isolation tier, which enforces it itself). 0: no limit.
  std::chrono::milliseconds call_timeout{0};
  // hh.dist/1's group: the processes that run this instance, ranked in the job's order (a Job
  // splits its communicator once per hook; an embedder does the same); null: this process alone.
  std::shared_ptr<Communicator> group{};
  // The level of this instance's logger (trace, debug, info, warn, error, critical, off): what its
  // log calls and log_enabled() pass, in every isolation tier. Empty: the runtime logger's level.
  std::string log_level{};
  // What hh_host.run_dir gives this instance; empty: RuntimeOptions::run_dir. A confined hook's
  // is a folder of its own, the only one its runner may write to unless its policy says more.
  std::string run_dir{};
  // A confined hook's writable folders (its capability policy's; `run_dir` among them). Not empty:
  // a path the hook hands a host service (hh.summary/1's folder) is resolved beneath `run_dir`, or
  // beneath one of these when absolute, without following a symbolic link; anything else is
  // refused (docs/isolation.md). Empty: paths are taken as given, as for an in-process hook.
  std::vector<std::string> write_roots{};
  StepFilter step_filter{};
  // Not with on_error = fail or on_crash = fail (add_hook throws ConfigError).
  ObserverSettings observer{};
  // The build of the instance's plugin: the SHA-256 (hex) of the bytes the host loaded, or hands
  // its runner (LoadedPlugin::sha256). Saved with the instance's state; a restored state saved by
  // another build is given only under `resume_state`. Empty: add_hook with a LoadedPlugin takes
  // the plugin's; otherwise unknown (every saved state is taken).
  std::string plugin_build{};
  ResumeState resume_state = ResumeState::same_build;
};

enum class Outcome { completed, stopped, failed };
const char* outcome_name(Outcome outcome);

struct JobResult {
  Outcome outcome = Outcome::completed;
  hh_stop_cause stop_cause = HH_STOP_CAUSE_NONE;
  std::string reason;
  int64_t global_step = 0;
  int64_t steps_run = 0;  // steps completed by this runtime
  // Checkpoint writes that failed (each is logged), and the error of the last one: a job that
  // completed with failed checkpoints cannot be resumed where its operator expects.
  uint64_t checkpoint_failures = 0;
  std::string checkpoint_error;
  // Requested checkpoints replaced by a newer one before they were written
  // (RuntimeOptions::checkpoint_wait = false).
  uint64_t checkpoints_skipped = 0;
  // Checkpoints whose step waited for the previous write to end (checkpoint_wait = true), and the
  // time the steps spent so: the disk's share of the job's wall time, apart from the hooks'.
  uint64_t checkpoint_waits = 0;
  std::chrono::nanoseconds checkpoint_wait_time{0};
};

struct RunOutput {
  bool ran = false;  // false when the step did not complete (end of data, failure)
  TensorMap values;  // the caller's fetches
};

// Calls and time spent in one callback of one hook. `calls` counts every call; `total`, `max` and
// `histogram` cover the `timed_calls` that were timed: every call of begin, after_create_session
// and end, and of before_run and after_run those of one step in RuntimeOptions::time_every_n_steps.
struct CallStats {
  uint64_t calls = 0;
  uint64_t failures = 0;
  uint64_t timed_calls = 0;
  std::chrono::nanoseconds total{0};  // of the timed calls
  std::chrono::nanoseconds max{0};    // of the timed calls
  LatencyHistogram histogram;         // of the timed calls, for quantile()
  void record(std::chrono::nanoseconds dt) {
    ++timed_calls;
    total += dt;
    max = std::max(max, dt);
    histogram.record(dt.count());
  }
  // Another share of the same callback's calls (an observer's worker's).
  void merge(const CallStats& other) {
    calls += other.calls;
    failures += other.failures;
    timed_calls += other.timed_calls;
    total += other.total;
    max = std::max(max, other.max);
    histogram.merge(other.histogram);
  }
  // The mean of the timed calls, and the time all calls took estimated from it.
  std::chrono::nanoseconds mean() const {
    return timed_calls ? total / static_cast<int64_t>(timed_calls) : std::chrono::nanoseconds{0};
  }
  std::chrono::nanoseconds estimated_total() const { return mean() * static_cast<int64_t>(calls); }
  // The duration a fraction q of the timed calls took at most (quantile(0.99) is the p99), read
  // from the histogram: at most 12.5 % above the true value, never above max. 0 when none.
  std::chrono::nanoseconds quantile(double q) const {
    return std::chrono::nanoseconds(histogram.quantile(q, max.count()));
  }
};

struct HookReport {
  std::string instance_name;
  std::string plugin_id;
  std::string plugin_file;
  bool disabled = false;
  std::string failure;                         // the first failure, when there was one
  std::map<std::string, CallStats> callbacks;  // "begin", "after_create_session", ...
  // An observer's steps it never saw: its queue was full (policy = skip), or its before_run asked
  // for a value not fetched at that step (an observer's fetches take effect one step later).
  uint64_t observer_skipped_steps = 0;
  uint64_t observer_unfetched_steps = 0;
  // Taken off the running job (Runtime::detach_hook), and why.
  bool detached = false;
  std::string detach_reason;
  // Its runner process was started again after it was lost (on_crash = restart), and the limit.
  uint32_t restarts = 0;
  uint32_t max_restarts = 0;
};

// The run record's name of an event's kind (RunEvent, run_events.hpp): "start", "checkpoint", ...
const char* run_event_kind_name(RunEvent::Kind kind);

// What one process made of a change a distributed job's processes agreed on
// (Runtime::propose_change): whether it was made, and what to tell whoever asked for it.
struct ChangeOutcome {
  bool ok = false;
  std::string text;
};

struct RuntimeOptions {
  std::filesystem::path run_dir = ".";
  // The configuration file's folder, which hh.job/1 gives plugins for their relative paths
  // (relative: from the working directory); empty: the working directory.
  std::filesystem::path config_dir;
  int max_recoveries = 3;  // consecutive recoveries of one step before the job fails
  std::chrono::milliseconds recovery_backoff{100};  // doubled after each consecutive recovery
  std::shared_ptr<spdlog::logger> logger;           // default: a logger named "hookhost"
  // Called after the session is recreated for a recovery and before after_create_session, e.g.
  // to restore the newest checkpoint.
  std::function<void(class Runtime&)> on_recover;
  // Named services offered to plugins through get_service ("hh.<name>/N" -> table).
  std::map<std::string, const void*> services;
  // The largest state one instance may store with state_put.
  std::size_t max_state_bytes = HH_DEFAULT_MAX_STATE;
  // Where requested checkpoints go (a relative folder is taken from run_dir), as
  // <checkpoint_basename>-<global step>; the newest keep_checkpoints by step are kept (0: all).
  std::filesystem::path checkpoint_dir = "checkpoints";
  std::string checkpoint_basename = "model.ckpt";
  uint32_t keep_checkpoints = 5;
  // A checkpoint requested while the previous one is still being written: true (the default, as
  // TensorFlow's CheckpointSaverHook and Orbax's CheckpointManager) makes the step wait for the
  // write in flight, so every requested checkpoint reaches the disk. false takes its snapshot at
  // once and lets it wait behind the write, replacing one already waiting there (the newest
  // snapshot wins; the replaced one is skipped, counted in JobResult::checkpoints_skipped and
  // logged once), so the step never waits for the disk.
  bool checkpoint_wait = true;
  // before_run and after_run are timed on one step in this many (one clock read between hooks),
  // so per-hook accounting costs next to nothing; 1 times every call (two clock reads each, as
  // begin, after_create_session and end always are). A hook with a call_timeout is always timed.
  uint32_t time_every_n_steps = 64;
  // The job's processes when it runs on several (hookhost/host/mpi.hpp); null for one process.
  // Then every process runs its own Runtime over its own Session, and at each step boundary they
  // agree, in one collective, on whether the job goes on (a stop or failure on any process ends
  // it on every process after the same step, with that process's outcome and reason) and whether
  // a checkpoint is taken (the chief writes it, with every process's hook states).
  std::shared_ptr<Communicator> communicator;
  // Entries added to every checkpoint's hook states besides the instances' own, under names no
  // instance can have (with a ':'): the job's live changes (hookhost ctl), which a resume applies
  // before it plans the hooks. Called on the training thread as the snapshot is taken.
  std::function<std::map<std::string, SavedHookState>()> checkpoint_job_entries;
  // Makes a change proposed with Runtime::propose_change, on every process of the job, at the step
  // boundary they agreed on (with one process: at the next boundary), as a change posted with
  // at_next_boundary runs: it may call add_hook, detach_hook and give_state_to. Every process
  // makes the same change at the same boundary; what it returns (or throws) is its outcome.
  std::function<ChangeOutcome(class Runtime&, const std::string& change)> on_agreed_change;
  // How long a hook's hh.dist/1 collective waits for the other processes of its group before it
  // fails (and the service becomes unusable for that instance).
  std::chrono::milliseconds collective_timeout{60000};
  // Told what happens to the job (checkpoints on disk, stops, failures, hooks disabled or
  // restarted, the end), for its run record. Must not call back into the runtime; what it throws
  // is logged. May be called from the training thread and the checkpoint writer's thread.
  std::function<void(const RunEvent&)> on_event;
};

class Runtime {
 public:
  Runtime(Session& session, RuntimeOptions options);
  ~Runtime();  // closes if needed (end is still delivered), then destroys every hook once
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Creates an instance of a loaded plugin. Before start(), or inside a change (at_next_boundary),
  // where it joins the running job: begin and after_create_session, with the live step, before its
  // first step. Throws ConfigError when create() fails (the message names the instance, the
  // plugin file and the plugin's reason). The add_hook overloads below follow the same rule.
  void add_hook(std::shared_ptr<const LoadedPlugin> plugin, HookSettings settings,
                const ResolvedParams& params);
  // Adds a hook behind any dispatcher (a test double).
  void add_hook(std::unique_ptr<HookDispatch> hook, HookSettings settings);
  // Adds a hook whose dispatcher needs the instance's hh_host: another isolation tier runs create()
  // elsewhere and forwards the plugin's host calls to `host`, which validates them as for any
  // in-process plugin. `make` throws ConfigError when create() fails.
  using DispatchFactory = std::function<std::unique_ptr<HookDispatch>(const hh_host& host)>;
  void add_hook(const std::string& plugin_id, uint32_t state_version, HookSettings settings,
                const DispatchFactory& make);

  // begin() on every hook in order, creates the session, after_create_session on every hook.
  // Returns false when the job already failed (see result()).
  bool start();

  // One step: before_run in order (fetches merged, feeds checked for conflicts), one session run,
  // after_run in order with each hook's own values. Throws std::logic_error when called after the
  // job should stop (TensorFlow's "Run called even after should_stop requested").
  RunOutput run(const std::vector<std::string>& fetches = {}, const TensorMap& feeds = {});

  // True once a stop was requested, the data ended or the job failed.
  bool should_stop() const;

  // "hook 'NAME' (plugin 'ID') in CALLBACK at global step N" while a hook call runs, else "".
  // [thread-safe]: for a watchdog or a signal handler thread naming what the job is stuck in.
  std::string running_call() const;

  // A change to the running job (hookhost ctl, an embedder's control thread): `change` runs on the
  // training thread at the next step boundary (after start()'s, or after a step's after_run phase
  // and its checkpoint), in the order posted, and may call add_hook, detach_hook and
  // give_state_to. Changes still waiting when close() begins run then, before end. False, and
  // `change` dropped, once close() has begun. What a change throws is logged. [thread-safe]
  bool at_next_boundary(std::function<void(Runtime&)> change);
  // A change for every process of a distributed job, proposed by the chief (rank 0; with one
  // process, by anyone): at the next step boundary the processes agree that there is one (in the
  // boundary's one collective: no step costs more without one), the chief sends `change` to
  // every process, each makes it there with RuntimeOptions::on_agreed_change, and `done` gets
  // every process's outcome, by rank, on the chief's training thread. False, and `done` dropped,
  // on another process, or once close() has begun; a change still waiting when close() begins
  // is answered with one outcome, not made. [thread-safe]
  using ChangeDone = std::function<void(std::vector<ChangeOutcome>)>;
  bool propose_change(std::string change, ChangeDone done);
  // Inside a change only: ends hook `instance_name` and destroys it; it stays in reports() as
  // detached and its name may be used again. Its end() has outcome HH_OUTCOME_DETACHED, reason
  // "detached: REASON" (a plugin built before ABI 1.6: HH_OUTCOME_STOPPED, cause host; a disabled
  // hook: HH_OUTCOME_FAILED, as at the job's end; a hook whose runner is gone: no end).
  // `message`: what the hook was told, or, when false (no live hook has that name), why.
  // `final_state`, when given and the hook held a state after its end: that state (what a hook
  // recreated in its place should start from).
  bool detach_hook(const std::string& instance_name, const std::string& reason,
                   std::string* message, std::optional<SavedHookState>* final_state = nullptr);
  // From any thread, for a detach that a hook's call holds up: when hook `instance_name` is in a
  // call now and its isolation tier can end the call at once (a runner process of its own), kills
  // that runner, `why` naming the cause in the call's message ("to detach it"). The failed call
  // disables the hook without its on_crash policy: no restart, no failure of the job, no end. Post
  // the detach_hook first: it runs at the boundary the call then reaches. False, with `why_not`,
  // when the hook is not in a call, or its call runs in the host's process or in a runner that
  // other hooks share (an isolation group). [thread-safe]
  bool interrupt_call(const std::string& instance_name, const std::string& why,
                      std::string* why_not);
  // Inside a change only: the next instance created as `instance_name` starts from `state` (as a
  // restored checkpoint's state is given), e.g. a hook recreated with new parameters.
  void give_state_to(const std::string& instance_name, SavedHookState state);
  // The job's progress, for a status asked from another thread. [thread-safe]
  struct Progress {
    int64_t global_step = 0;
    int64_t steps_run = 0;
    bool started = false;
    bool closed = false;      // close() has begun: no change is taken
    int64_t last_step = -1;   // where the job stops, when the workload or a hook says; else -1
    int changes_waiting = 0;  // changes posted (at_next_boundary) that wait for the boundary
  };
  Progress progress() const;

  // Marks the job failed (the embedding program's own error); close() still delivers end().
  void fail_job(const std::string& reason);

  // The embedder's own loop ran out of data (its last epoch ended): close() reports the job
  // completed with this reason, unless a stop or a failure came first.
  void complete(const std::string& reason);

  // Asks the job to stop after the current step. [thread-safe]
  void request_stop(hh_stop_cause cause, const std::string& reason);

  // Asks for a checkpoint of the workload and every hook's state, taken at the next step
  // boundary: after the current step's after_run phase, after the after_create_session phase, or
  // after every end() -- never when the job failed. The state is copied there (the session's
  // save_state and every hook's state) and the files are written by a background thread, one save
  // at a time: a boundary that finds the previous save still in flight waits for it first. The
  // logger is used from that thread too. close(), the destructor and a recovery wait until every
  // save is on disk. [thread-safe]
  void request_checkpoint(const std::string& reason);
  // The newest checkpoint this runtime has finished writing (a save in flight is not named until
  // it is on disk; one that failed is logged and never named). [thread-safe]
  std::optional<WrittenCheckpoint> last_checkpoint() const;
  // Returns once no save is in flight: every checkpoint taken at a boundary that has passed is
  // then on disk, or was logged as failed. [thread-safe]
  void wait_for_checkpoints();

  // Delivers end() to every hook exactly once and returns how the job ended. Idempotent.
  JobResult close();

  // start(), run() until should_stop(), close().
  JobResult run_to_end();

  // The resolved order, after start() or add_hook.
  std::vector<std::string> hook_order() const;
  // Every hook instance, detached ones too, in call order. A snapshot taken while no change can
  // add, reorder or detach a hook, so another thread may call it during a live change (hookhost
  // ctl, Job::control); read while a step runs, a hook's call counts and times may lag that step's
  // calls. [thread-safe]
  std::vector<HookReport> reports() const;
  const JobResult& result() const;
  Session& session();

  // Hook states for checkpoints: instance name -> what it stored with state_put, tagged with its
  // plugin id and state version.
  std::map<std::string, SavedHookState> saved_hook_states() const;
  // The same, bytes only.
  std::map<std::string, std::string> hook_states() const;
  // Gives each instance its saved state: instances created later get it before their create(),
  // existing ones at once (a recovery). A state saved by another plugin than the instance's is not
  // given (logged), nor one saved by another build of its plugin unless the instance's
  // HookSettings::resume_state is any_build (logged as a warning naming both builds); one for an
  // instance that is not configured is ignored (logged at start()).
  void restore_hook_states(const std::map<std::string, SavedHookState>& states);
  // Bytes only: taken as saved by each instance's own plugin at its current state version.
  void restore_hook_states(const std::map<std::string, std::string>& states);

  struct Impl;  // implementation detail, declared here so its helpers can name it

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace hookhost
