// What the checker judges of the calls a scenario's hook received (recorded by the test harness,
// testing/call_recorder.hpp): every call that did not return HH_OK or HH_STOP_REQUESTED, every
// fetch or feed the host refused, destroy's error, and the tensors the hook asked for that the
// scenario's workload does not serve.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hookhost/host/hook_dispatch.hpp"
#include "testing/call_recorder.hpp"
#include "testing/scripted_workload.hpp"

namespace hookhost::check {

struct RefusedRequest {
  std::string function;   // "add_fetch" or "add_feed"
  std::string name;       // the tensor's name, when it had a valid one
  bool unserved = false;  // refused because the scenario's workload does not serve the name
};

struct ObservedCall {
  std::string callback;
  std::optional<int64_t> step;  // the global step the call concerned
  CallResult result;
  std::vector<RefusedRequest> refused;  // before_run only
};

// What one scenario saw of the hook.
struct CallRecord {
  std::vector<ObservedCall> calls;  // the calls worth judging, in order
  std::set<std::string> unserved_names;
  std::optional<std::string> destroy_error;
  pid_t runner_pid = -1;     // of the runner the hook lives in now
  bool runner_lost = false;  // the runner is gone (crashed, exited, killed)
};

// The calls of `log` worth judging; `script` tells which refused names its workload does not serve.
CallRecord judged_calls(const testing::CallLog& log, const testing::detail::Script& script);

}  // namespace hookhost::check
