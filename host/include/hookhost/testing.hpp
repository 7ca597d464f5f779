// A test harness for one hook plugin: it runs the plugin's .so through hookhost's real runtime,
// around a scripted workload, and returns what the hook did. It asserts nothing itself, so it works
// with GoogleTest or any other framework. docs/testing-hooks.md explains it with examples.
//
//   hookhost::testing::HookTest t("build/my_hook.so");
//   t.set("threshold", "0.5").steps(10).value("loss", [](int64_t step) { return 1.0 / step; });
//   hookhost::testing::RunResult run = t.run();
//   // run.outcome, run.reason, run.trace(), run.fetched(3), run.log_lines("info"), ...
#pragma once

#include <concepts>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <hookhost/host/config.hpp>
#include <hookhost/host/hook_dispatch.hpp>
#include <hookhost/host/hook_state.hpp>
#include <hookhost/host/plugin_metadata.hpp>
#include <hookhost/host/runtime.hpp>
#include <hookhost/host/session.hpp>
#include <hookhost/host/tensor.hpp>

namespace hookhost::testing {

// One tensor value a test gives the workload. The C++ type chooses the dtype: float -> f32,
// double -> f64, any integer -> i64, bool -> bool, a list or vector of floats -> f32 vector, text
// -> string; any other shape or dtype as a hookhost::Tensor.
class Value {
 public:
  Value(float v) : tensor_(Tensor::scalar_f32(v)) {}
  Value(double v) : tensor_(Tensor::scalar_f64(v)) {}
  template <std::integral T>
  requires(!std::same_as<T, bool>) Value(T v)
      : tensor_(Tensor::scalar_i64(static_cast<int64_t>(v))) {}
  // A template, so that a pointer never converts to bool here.
  template <std::same_as<bool> B>
  Value(B v) : tensor_(Tensor::scalar_bool(v)) {}
  Value(std::vector<float> v) : tensor_(Tensor::vector_f32(std::move(v))) {}
  Value(std::initializer_list<float> v) : tensor_(Tensor::vector_f32(std::vector<float>(v))) {}
  Value(const char* v) : tensor_(Tensor::string(v)) {}
  Value(std::string v) : tensor_(Tensor::string(std::move(v))) {}
  Value(Tensor v) : tensor_(std::move(v)) {}

  const Tensor& tensor() const { return tensor_; }

 private:
  Tensor tensor_;
};

// One call the hook received. Only the callbacks the hook implements are called, and recorded.
struct Call {
  Callback callback = Callback::begin;
  // before_run, after_run: the step they surround (the global step once it ran: 1 for the first
  // step; the context's global_step is one less). after_create_session, end: the global step they
  // were given. begin: the global step the job started at.
  int64_t step = 0;
  hh_status status = HH_OK;  // what the hook returned (the host may still fail the call: see
                             // RunResult::failure, e.g. for a fetch the workload does not provide)
  std::string message;       // the hook's error message, for HH_ERROR and HH_ERROR_FATAL
  uint32_t creation = 0;     // after_create_session: 1, then 2 after the first recovery, ...
  bool stop_requested = false;  // before_run, after_run: the context said a stop was requested
  hh_outcome outcome = 0;       // end: what the hook was told (HH_OUTCOME_*), and why
  std::string reason;

  // "begin", "after_create_session", "before_run@3", "after_run@3", "end".
  std::string name() const;
};

// One call of the workload by the runtime: a step, or an attempt at one.
struct SessionRun {
  int64_t step = 0;                  // the step it ran or tried to run (1 for the first)
  std::vector<std::string> fetched;  // the names the hook fetched, in its order
  TensorMap fed;                     // what the hook fed, by name
  TensorMap returned;                // the values the workload returned for the fetches
  StepStatus status = StepStatus::ok;
};

struct LogLine {
  std::string level;  // trace, debug, info, warn, error or critical
  std::string text;
};

struct RequestedCheckpoint {
  int64_t global_step = 0;
  std::string requested_by;    // as the runtime logs it: "hook 'NAME': REASON"
  bool written = false;        // false when the job had failed by then (it writes none)
  std::filesystem::path file;  // <run_dir>/checkpoints/model.ckpt-<step>, when written
};

struct HookFailure {
  Callback callback = Callback::begin;
  std::string message;  // the host's words: the hook's message, or why the host refused the call
};

// What one lifecycle of the hook did. Copies share the run directory, which is removed with the
// last copy unless HookTest::keep_run_dir() was asked for.
struct RunResult {
  // How the job ended, as hookhost's summary says it.
  Outcome outcome = Outcome::completed;
  hh_stop_cause stop_cause = HH_STOP_CAUSE_NONE;
  std::string reason;
  int64_t global_step = 0;
  int64_t steps_run = 0;

  // The job stopped because the hook asked: host->request_stop() (hook_stop_reason is the hook's
  // text) or HH_STOP_REQUESTED from a callback (the runtime's "requested a stop in after_run").
  bool stopped_by_hook = false;
  std::string hook_stop_reason;

  std::vector<Call> calls;                       // in order
  std::vector<SessionRun> session_runs;          // in order, failed attempts included
  std::vector<LogLine> log;                      // what the hook logged
  std::vector<LogLine> host_log;                 // what the runtime logged
  std::vector<RequestedCheckpoint> checkpoints;  // in order
  std::optional<SavedHookState> saved_state;     // its state at the end, when it had one
  std::optional<HookFailure> failure;            // the hook's first failure
  bool disabled = false;                         // the hook was disabled after a failure
  HookReport report;                             // the runtime's report: calls per callback, ...
  std::filesystem::path run_dir;                 // the hook's run directory (host->run_dir)

  // The names of `calls` (Call::name), e.g. {"begin", "after_create_session", "before_run@1", ...}.
  std::vector<std::string> trace() const;
  // What the hook fetched and fed in `step` (its last attempt); empty when it was never tried.
  std::vector<std::string> fetched(int64_t step) const;
  TensorMap fed(int64_t step) const;
  // The texts the hook logged at `level` (trace, debug, info, warn, error, critical).
  std::vector<std::string> log_lines(std::string_view level) const;
  // Every log line, the runtime's and the hook's, as "[logger] [level] text" lines: for the
  // message of a failed assertion.
  std::string log_text() const;
  // The bytes of saved_state, or "" when the hook saved none.
  std::string state_bytes() const;

 private:
  friend class HookTest;
  struct LoggedLine {
    std::string logger;
    LogLine line;
  };
  std::vector<LoggedLine> all_log_;
  std::shared_ptr<const std::filesystem::path> run_dir_owner_;
};

namespace detail {
// A failed attempt at a step, as the script asks for it.
struct ScriptedFault {
  StepStatus status = StepStatus::error;
  std::string message;
  bool every_attempt = false;  // false: the first attempt fails, the next one runs
};

// The script of the harness's workload (not part of the API).
struct Script {
  // end_of_data_step for a workload whose data never ends (its last_step() is unknown).
  static constexpr int64_t kEndless = INT64_MAX;

  int64_t start_step = 0;
  int64_t end_of_data_step = 11;
  std::string end_of_data_message;  // empty: "the script has no data for step N"
  bool builtin_values = true;       // global_step, loss, learning_rate, weights, bias
  std::map<std::string, std::function<Value(int64_t)>> values;
  std::map<std::pair<std::string, int64_t>, Value> values_at;
  std::set<std::string> feedable;
  std::map<int64_t, std::vector<ScriptedFault>> faults;  // by the step attempted
  std::map<int64_t, std::pair<std::string, hh_stop_cause>> stops;
  // Every create() sets the global step to this, as a session restored from a checkpoint does.
  std::optional<int64_t> step_after_create;
};
}  // namespace detail

// One plugin file, one hook instance of it, and the script of the workload around it. Each run()
// is a fresh lifecycle: create, begin, after_create_session, steps, end, destroy.
//
// The workload: step N is the step that takes the global step from N-1 to N. Unless changed, it
// has data for 10 steps and provides these tensors (names the program's built-in workload has):
//   global_step  i64, the step          loss     f32, 1/step          bias  f32, 0
//   learning_rate f32, 0.1 (feedable)   weights  f32 vector {1, 2, 3}
// value() replaces one of them or adds a name. A fed tensor is what a fetch of it returns in that
// step.
class HookTest {
 public:
  // Reads the plugin's note (no plugin code runs until run()). Throws LoadError when the file is
  // not a usable plugin, with the reason `hookhost plugins list` gives. The instance name defaults
  // to the plugin's id ('.' becomes '_'), as for a [hook.ID] section without a plugin key.
  explicit HookTest(std::filesystem::path plugin_file, std::string instance_name = {});

  const PluginMetadata& plugin() const { return plugin_; }
  const std::filesystem::path& plugin_file() const { return plugin_file_; }
  const std::string& instance_name() const { return instance_name_; }

  // --- The hook's configuration, as `hookhost run --set hook.NAME.KEY=VALUE` takes it. ---
  // A plugin parameter, or one of the hook keys on_error, isolation, call_timeout_ms,
  // memory_limit_mb, on_crash, max_restarts, log_level (the hook's own logger). Checked by run()
  // exactly as the program checks it: a mistake throws ConfigError with the program's message. A
  // later set() of a key replaces it. Throws std::invalid_argument for the hook keys a one-hook
  // harness does not apply (plugin, enabled, order, isolation_group, sha256).
  HookTest& set(const std::string& key, const std::string& value);
  HookTest& on_error(FailurePolicy policy);  // set("on_error", ...); the default is disable
  // Isolation::process runs the hook in a hookhost-runner process: $HOOKHOST_RUNNER, the one next
  // to the test program, the installed package's (when the test was built with find_package), or
  // one on PATH.
  HookTest& isolation(Isolation where);
  // The level the host's logger passes (trace, debug, info, warn, error, critical, off): what the
  // hook's log calls and log_enabled() see. The default is the program's, info.
  HookTest& log_level(const std::string& level);

  // --- The workload. Steps are global steps (see above), also after start_at(). ---
  // Data for steps 1..count: the run of step count + 1 ends with end of data. Same as
  // end_of_data_at(count + 1).
  HookTest& steps(int64_t count);
  // The run of `step` returns end of data (the job completes at global step step - 1).
  HookTest& end_of_data_at(int64_t step);
  // The value of `name` in every step, or as a function of the step.
  HookTest& value(const std::string& name, Value value);
  HookTest& value(const std::string& name, std::function<Value(int64_t step)> per_step);
  // The value of `name` in one step, over what value() gives.
  HookTest& value_at(const std::string& name, int64_t step, Value value);
  // A name the hook may feed (learning_rate is feedable already).
  HookTest& feedable(const std::string& name);
  // The first run of `step` fails with a recoverable error: the runtime recreates the session
  // (after_create_session again, creation 2, ...) and, like the program, restores the newest
  // checkpoint if the job wrote one, then runs the step again. Called twice, two attempts fail.
  HookTest& recoverable_error_at(int64_t step);
  // The run of `step` fails with an error that fails the job.
  HookTest& workload_error_at(int64_t step);
  // Someone other than the hook (the embedding program; HH_STOP_CAUSE_SIGNAL for a signal) asks
  // the job to stop while `step` runs: the step completes, its after_run sees stop_requested, and
  // the job stops at global step `step`.
  HookTest& stop_requested_at(int64_t step, std::string reason = "stop requested by the test",
                              hh_stop_cause cause = HH_STOP_CAUSE_HOST);

  // --- Resuming. ---
  // The job starts at this global step (as resumed from a checkpoint of it); the default is 0.
  HookTest& start_at(int64_t global_step);
  // The hook starts with this saved state, as restored from a checkpoint: state_info and
  // state_get see it from create() on. Bytes are tagged with this plugin's id and current state
  // version (1 under isolation = process, where the plugin is not loaded into this process).
  HookTest& restore_state(SavedHookState state);
  HookTest& restore_state(std::string bytes);
  // start_at(previous.global_step) and restore_state(its saved state), or no state if it saved
  // none: the next run() is that job resumed.
  HookTest& resume_from(const RunResult& previous);

  // Keeps each run's directory (RunResult::run_dir) instead of removing it with the last RunResult
  // copy.
  HookTest& keep_run_dir(bool keep = true);

  // One lifecycle. Throws ConfigError, with the message `hookhost run` gives, for a configuration
  // the program refuses, including a refusal by the plugin's create(); nothing is run then.
  RunResult run();
  // The ConfigError text run() would throw, or "" when the configuration is accepted. Creates the
  // instance (create, then destroy, as the program does before a job) and runs nothing.
  std::string configuration_error();

 private:
  struct Prepared;
  Prepared prepare() const;
  RunResult execute(const Prepared& prepared, bool run_steps);

  std::filesystem::path plugin_file_;
  PluginMetadata plugin_;
  std::string instance_name_;
  std::vector<std::pair<std::string, std::string>> settings_;  // in the order first set
  std::string log_level_ = "info";
  detail::Script script_;
  std::optional<SavedHookState> restored_state_;
  std::optional<std::string> restored_bytes_;
  bool keep_run_dir_ = false;
};

// Records where the installed package's hookhost-runner is; true.
bool use_installed_runner(const char* program);

#ifdef HOOKHOST_INSTALLED_RUNNER
// find_package(hookhost) defines HOOKHOST_INSTALLED_RUNNER for a test program: its sandboxed
// hooks find the installed runner without PATH or HOOKHOST_RUNNER.
namespace detail {
inline const bool installed_runner_known = use_installed_runner(HOOKHOST_INSTALLED_RUNNER);
}  // namespace detail
#endif

}  // namespace hookhost::testing

// Names instead of bytes when a test framework prints a value (GoogleTest finds these through
// argument-dependent lookup): `run.outcome` shows "completed", not "4-byte object <00-00 00-00>".
namespace hookhost {
inline std::ostream& operator<<(std::ostream& os, Outcome outcome) {
  return os << outcome_name(outcome);
}
inline std::ostream& operator<<(std::ostream& os, FailurePolicy policy) {
  return os << policy_name(policy);
}
inline std::ostream& operator<<(std::ostream& os, CrashPolicy policy) {
  return os << crash_policy_name(policy);
}
inline std::ostream& operator<<(std::ostream& os, Isolation isolation) {
  return os << isolation_name(isolation);
}
inline std::ostream& operator<<(std::ostream& os, Callback callback) {
  return os << name_of(callback);
}
inline std::ostream& operator<<(std::ostream& os, StepStatus status) {
  switch (status) {
    case StepStatus::ok: return os << "ok";
    case StepStatus::end_of_data: return os << "end_of_data";
    case StepStatus::aborted: return os << "aborted";
    case StepStatus::unavailable: return os << "unavailable";
    case StepStatus::error: return os << "error";
    case StepStatus::cancelled: return os << "cancelled";
  }
  return os << "StepStatus(" << static_cast<int>(status) << ")";
}
inline void PrintTo(Outcome outcome, std::ostream* os) {
  *os << outcome;
}
inline void PrintTo(FailurePolicy policy, std::ostream* os) {
  *os << policy;
}
inline void PrintTo(CrashPolicy policy, std::ostream* os) {
  *os << policy;
}
inline void PrintTo(Isolation isolation, std::ostream* os) {
  *os << isolation;
}
inline void PrintTo(Callback callback, std::ostream* os) {
  *os << callback;
}
inline void PrintTo(StepStatus status, std::ostream* os) {
  *os << status;
}
}  // namespace hookhost
