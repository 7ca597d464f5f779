#include "check/failing_hook.hpp"

namespace hookhost::check {

CallResult FailingHook::after_run(const hh_run_context& context, const hh_run_values&) {
  if (context.global_step != fail_at_step_) return {};
  CallResult failed;
  failed.status = HH_ERROR;
  failed.message = "a failure of another hook, provoked by hookhost check";
  return failed;
}

}  // namespace hookhost::check
