// The calls a hook under test received, recorded without touching the runtime: in process, the
// plugin's entry is copied with a create() that wraps the hh_hook it returns in one that records
// each call and forwards it; in a runner process, the dispatcher is wrapped the same way. HookTest
// reports the calls; `hookhost check` judges them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <hookhost/hookhost.h>

#include "hookhost/host/hook_dispatch.hpp"
#include "hookhost/testing.hpp"

namespace hookhost::testing {

// A fetch or feed the host refused in before_run (recorded for a hook in a runner process).
struct RefusedRequest {
  std::string function;             // "add_fetch" or "add_feed"
  std::optional<std::string> name;  // the tensor's name, when it had a valid one ("" may be)
};

struct RecordedCall {
  Call call;                 // Call::status and Call::message as the hook returned them
  int64_t global_step = 0;   // the global step the call was given (begin: the job's first)
  int32_t code = 0;          // hh_error.code
  bool runner_lost = false;  // the hook's runner was lost during the call, or before it
  std::vector<RefusedRequest> refused;
};

// Everything recorded of one hook instance. Written by the thread that calls the hook; read once
// the runtime that called it is gone.
struct CallLog {
  std::vector<RecordedCall> calls;  // in order
  std::optional<std::string> destroy_error;
  pid_t runner_pid = -1;     // of the runner the hook lives in now (a sandboxed hook)
  bool runner_lost = false;  // that runner is gone (crashed, exited, killed)
};

// A copy of `entry` whose create() records the hook it creates into the log that the create
// argument of the current RecordingScope names. It must outlive every hook it creates.
std::shared_ptr<hh_plugin_entry> recording_entry(const hh_plugin_entry& entry);

// Names the log, the real entry and the first global step for the recording create() calls made
// on this thread while the scope lives (create() has no user argument).
class RecordingScope {
 public:
  RecordingScope(const hh_plugin_entry& real, CallLog& log, int64_t start_step);
  ~RecordingScope();
  RecordingScope(const RecordingScope&) = delete;
  RecordingScope& operator=(const RecordingScope&) = delete;

  const hh_plugin_entry& real;
  CallLog& log;
  int64_t start_step;
};

// `inner` (a hook in a runner process, usually) with every call recorded into `log`: before_run's
// refused requests too, destroy's error and the runner's process.
std::unique_ptr<HookDispatch> recording_dispatch(std::unique_ptr<HookDispatch> inner, CallLog& log,
                                                 int64_t start_step);

}  // namespace hookhost::testing
