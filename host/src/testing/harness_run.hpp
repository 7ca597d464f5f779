// One run of the test harness: a fresh runtime around the scripted workload, one plugin's hook
// added in process or in its own hookhost-runner with every call recorded, optionally other hooks
// beside it, driven through a whole lifecycle as the program's loop drives it. HookTest and the
// scenarios of `hookhost check` both run hooks through here; what they make of the outcome is
// their own.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hookhost/host/hook_dispatch.hpp"
#include "hookhost/host/hook_state.hpp"
#include "hookhost/host/loader.hpp"
#include "hookhost/host/params.hpp"
#include "hookhost/host/runtime.hpp"
#include "hookhost/testing.hpp"
#include "sandbox/process_dispatch.hpp"
#include "testing/call_recorder.hpp"

namespace hookhost::testing {

// The hook whose calls are recorded.
struct HarnessHook {
  // In process: loaded into this process. Under isolation = process: its file and note only, its
  // code runs in its runner.
  std::shared_ptr<const LoadedPlugin> plugin;
  Isolation isolation = Isolation::in_process;
  SandboxOptions sandbox;  // isolation = process only
  HookSettings settings;
  ResolvedParams params;
};

// Another hook beside the recorded one (a test double), added after it when it was created.
struct ExtraHook {
  HookSettings settings;
  std::function<std::unique_ptr<HookDispatch>()> make;
};

struct HarnessSpec {
  detail::Script script;
  std::vector<SessionRun>* session_runs = nullptr;  // receives every run() of the workload
  // run_dir, logger, on_recover, checkpoints: the caller's. The recovery backoff is always 1 ms:
  // the runtime's waits only slow a run down, what happens is the same.
  RuntimeOptions options;
  HarnessHook hook;
  // Given to the runtime before create(), as a resumed job's states.
  std::optional<std::map<std::string, SavedHookState>> restored_states;
  std::vector<ExtraHook> extra_hooks;
  // Called after each step the loop ran (steps_run counts them from 1): may request a stop or
  // look at the hook's runner.
  std::function<void(int64_t steps_run, Runtime& runtime, const CallLog& calls)> after_step;
  // false: the hook is created, then destroyed with the runtime; nothing runs.
  bool run_steps = true;
  // An exception out of the loop fails the job with "LABEL: WHAT", and is logged when asked.
  std::string internal_error_label = "internal error";
  bool log_internal_error = true;
};

struct HarnessOutcome {
  bool created = false;
  std::optional<ConfigError> create_error;       // create() failed, or the runner could not start
  std::string internal_error;                    // what the loop threw, if it did
  JobResult result;                              // of close()
  std::map<std::string, SavedHookState> states;  // after close()
  std::vector<HookReport> reports;
  CallLog calls;  // complete: the runtime and its hooks are gone, destroy() included
};

// Throws what building the runtime throws, and whatever but ConfigError adding the hook throws.
HarnessOutcome run_harness(const HarnessSpec& spec);

}  // namespace hookhost::testing
