// What a failed hook call does: on_error for a call that returned an error, on_crash for a hook
// whose process was lost (the table in status.h).
#include <thread>

#include "runtime/step_engine.hpp"
#include "support/text.hpp"

namespace hookhost {

std::string StepEngine::describe(const Slot& slot, Callback cb, int64_t step) const {
  return describe_hook(slot.hook.name(), slot.hook.dispatch().plugin_id(),
                       slot.hook.dispatch().plugin_file()) +
         " failed in " + name_of(cb) + " at global step " + std::to_string(step);
}

// What a status does: the table in status.h. `step` is the step the call concerns.
void StepEngine::handle_result(Slot& slot, Callback cb, const CallResult& r, int64_t step) {
  if (r.status == HH_STOP_REQUESTED) {
    job_.request_stop(HH_STOP_CAUSE_HOOK,
                      "hook '" + slot.hook.name() + "' requested a stop in " + name_of(cb));
    return;
  }
  if (r.ok()) return;
  if (r.runner_lost && slot.detach.interrupted()) {
    // Killed to be detached (StepEngine::interrupt): no failure of its own, and nothing brings it
    // back. The detach waiting at the step boundary takes it off.
    slot.health.lose_runner();
    slot.calls.disable();
    step_slots_stale_ = true;
    log_->warn("{}: its {} at global step {} was ended: {}", slot.hook.services().blame_name,
               name_of(cb), step, r.message);
    return;
  }
  slot.cost.count_failure(cb);
  if (r.runner_lost) return handle_lost_runner(slot, cb, r, step);
  const bool fatal = r.status == HH_ERROR_FATAL;
  const std::string what = describe(slot, cb, step) + ": " + r.message;
  const FailurePolicy policy = slot.hook.settings().on_error;
  // One bracket says what the host does: "[fatal error; on_error=stop: ...]".
  const char* fatal_note = fatal ? "fatal error; " : "";
  switch (policy) {
    case FailurePolicy::keep_going:
      log_->error("{} [{}on_error=continue: {}]", what, fatal_note,
                  fatal ? "a fatal error disables the hook anyway, the job continues"
                        : "the hook keeps getting calls");
      break;
    case FailurePolicy::disable:
      log_->error("{} [{}on_error=disable: the hook is disabled, the job continues]", what,
                  fatal_note);
      break;
    case FailurePolicy::stop:
      log_->error("{} [{}on_error=stop: the hook is disabled, the job stops after this step]", what,
                  fatal_note);
      break;
    case FailurePolicy::fail:
      log_->error("{} [{}on_error=fail: the job fails]", what, fatal_note);
      break;
  }
  slot.health.note_failure(std::string(name_of(cb)) + " failed: " + r.message);
  if (policy != FailurePolicy::keep_going || fatal) disable(slot);
  if (policy == FailurePolicy::stop) job_.request_stop(HH_STOP_CAUSE_HOOK, what);
  if (policy == FailurePolicy::fail) {
    job_.fail(what);
    job_.mark_failure_logged();
  }
}

// The hook's process is gone (another isolation tier): on_crash decides, not on_error.
void StepEngine::handle_lost_runner(Slot& slot, Callback cb, const CallResult& r, int64_t step) {
  const std::string what = describe(slot, cb, step) + ": " + r.message;
  slot.health.note_failure(std::string(name_of(cb)) + " failed: " + r.message);
  const HookSettings& s = slot.hook.settings();
  slot.health.lose_runner();  // until a restart succeeds
  switch (s.on_crash) {
    case CrashPolicy::restart: {
      if (cb == Callback::end) {
        log_->error("{} [on_crash=restart: end() was its last call; nothing to restart]", what);
        disable(slot);
        return;
      }
      if (slot.health.restarts() >= s.max_restarts) {
        log_->error(
            "{} [on_crash=restart: {} restarts used up (max_restarts); the hook is "
            "disabled, the job continues]",
            what, slot.health.restarts());
        disable(slot);
        return;
      }
      log_->error("{} [on_crash=restart: restarting it ({} of {})]", what,
                  slot.health.restarts() + 1, s.max_restarts);
      std::this_thread::sleep_for(s.restart_backoff * (1 << std::min(slot.health.restarts(), 10u)));
      slot.health.count_restart();
      std::string why;
      // The restarted hook keeps its own schedule from its saved state, and says it again.
      slot.hook.services().skip_until.store(0, std::memory_order_relaxed);
      if (slot.hook.dispatch().restart(&why)) {
        slot.health.runner_restarted();
        log_->info("hook '{}' restarted with its last saved state", s.instance_name);
        if (event_sink_)
          event_sink_(
              RunEvent::Kind::restart, step, s.instance_name,
              "restarted with its last saved state (" + std::to_string(slot.health.restarts()) +
                  " of max_restarts = " + std::to_string(s.max_restarts) + ") after: " + r.message);
        return;
      }
      log_->error(
          "hook '{}' could not be restarted: {}; the hook is disabled, the job "
          "continues",
          s.instance_name, why);
      disable(slot);
      return;
    }
    case CrashPolicy::disable:
      log_->error("{} [on_crash=disable: the hook is disabled, the job continues]", what);
      disable(slot);
      return;
    case CrashPolicy::stop:
      log_->error("{} [on_crash=stop: the hook is disabled, the job stops after this step]", what);
      disable(slot);
      job_.request_stop(HH_STOP_CAUSE_HOOK, what);
      return;
    case CrashPolicy::fail:
      log_->error("{} [on_crash=fail: the job fails]", what);
      disable(slot);
      job_.fail(what);
      job_.mark_failure_logged();
      return;
  }
}
}  // namespace hookhost
