#include "check/call_record.hpp"

namespace hookhost::check {

CallRecord judged_calls(const testing::CallLog& log, const testing::detail::Script& script) {
  CallRecord record;
  record.destroy_error = log.destroy_error;
  record.runner_pid = log.runner_pid;
  record.runner_lost = log.runner_lost;
  for (const testing::RecordedCall& recorded : log.calls) {
    ObservedCall call;
    call.callback = name_of(recorded.call.callback);
    call.step = recorded.global_step;
    call.result.status = recorded.call.status;
    call.result.code = recorded.code;
    call.result.message = recorded.call.message;
    call.result.runner_lost = recorded.runner_lost;
    for (const testing::RefusedRequest& refused : recorded.refused) {
      const std::string name = refused.name.value_or("");
      const bool unserved = refused.name && !testing::script_serves(script, name);
      if (unserved) record.unserved_names.insert(name);
      call.refused.push_back({refused.function, name, unserved});
    }
    if (!call.result.ok() || !call.refused.empty()) record.calls.push_back(std::move(call));
  }
  return record;
}

}  // namespace hookhost::check
