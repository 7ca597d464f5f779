// The per-step phases of the StepEngine (before_run and after_run of every hook around a step),
// in a header so that the runtime's step compiles them where it calls them. The after_run phase is
// always inlined into Runtime::run; the before_run phase stays one call: inlining both made a step
// with no hook dearer than it saved a step with hooks (callgrind counts, bench/README.md).
// Included by step_engine.hpp after the class; not for use elsewhere.
#pragma once

#include <chrono>
#include <optional>

#include "runtime/call_result.hpp"
#include "runtime/observer_lane.hpp"

namespace hookhost {

namespace step_detail {

// A runtime bug, never a plugin's: calling out of order would break the ABI's promise.
[[noreturn, gnu::cold]] void out_of_order(const Slot& slot, Callback callback);

inline void check_state(const Slot& slot, Callback callback, std::initializer_list<HookState> ok) {
  for (HookState s : ok)
    if (slot.calls.state() == s) return;
  out_of_order(slot, callback);
}
inline void check_state(const Slot& slot, Callback callback, HookState ok) {
  if (slot.calls.state() != ok) [[unlikely]]
    out_of_order(slot, callback);
}

inline bool active(const Slot& slot) {
  return !slot.calls.disabled();
}
inline bool wants(const Slot& slot, Callback cb) {
  return slot.calls.implements(cb);
}

}  // namespace step_detail

// Times the per-step calls of a sampled step with one clock read after each call: a call's
// time runs from the previous read (the end of the previous call, or the start of the phase).
struct StepEngine::StepTimer {
  bool on = false;
  std::chrono::steady_clock::time_point last{};
  explicit StepTimer(bool timed) : on(timed) {
    if (on) last = std::chrono::steady_clock::now();
  }
  void record(HookCost& cost, Callback cb) {
    const auto now = std::chrono::steady_clock::now();
    cost.record_time(cb, std::chrono::duration_cast<std::chrono::nanoseconds>(now - last));
    last = now;
  }
};

// Restores the thread's running call when a phase of per-step calls ends, however it ends:
// direct calls set it per call and leave the restoring to the phase.
struct StepEngine::PhaseCallScope {
  const HostServices* previous = t_current_call;
  PhaseCallScope(RunningCall& running, Callback cb, int64_t step) {
    running.set_callback(cb);
    running.set_step(step);
  }
  ~PhaseCallScope() { t_current_call = previous; }
  PhaseCallScope(const PhaseCallScope&) = delete;
  PhaseCallScope& operator=(const PhaseCallScope&) = delete;
};

// One before_run or after_run, inside a PhaseCallScope. An in-process hook is called through
// its own function pointer with the runtime's reused hh_error, and only what crash blame and
// the [hook-thread] checks need is recorded around it; a CallResult is built only when the call
// did not return HH_OK (into `result`, and the function returns false). A hook with a
// call_timeout, or every hook when every call is timed, goes through call() for the watchdog's
// bookkeeping.
template <bool kTimed, typename DirectFn>
inline bool StepEngine::step_call(Slot& slot, Callback cb, StepTimer& timer, DirectFn&& direct,
                                  const hh_run_context& ctx, const hh_run_values* values,
                                  std::optional<CallResult>& result) {
  if (!slot.calls.calls_directly()) [[unlikely]] {
    result = call_through_dispatch(slot, cb, ctx, values);
    if (kTimed) timer.last = std::chrono::steady_clock::now();
    return result->status == HH_OK;
  }
  t_current_call = &slot.calls.services();
  running_.enter(&slot.calls.services());
  result = call_inprocess(direct, call_error_);
  running_.leave();
  slot.calls.count_direct_call(cb);
  if (kTimed) timer.record(slot.cost, cb);
  return !result;
}

template <bool kTimed>
inline bool StepEngine::before_calls(const hh_run_context& ctx,
                                     const std::vector<std::string>& caller_fetches) {
  if (step_slots_stale_) rebuild_step_slots();
  if (!feed_owner_.empty()) feed_owner_.clear();
  if (step_slots_.empty()) return true;
  PhaseCallScope scope(running_, Callback::before_run, ctx.global_step);
  StepTimer timer(kTimed);
  for (Slot* sp : step_slots_) {
    Slot& slot = *sp;
    if (!step_detail::active(slot)) continue;
    step_detail::check_state(slot, Callback::before_run, HookState::in_session);
    // A step the filter skips: neither call (after_run sees the slot still in_session).
    if (slot.calls.step_filtered() && !step_called(slot, ctx.global_step)) [[unlikely]]
      continue;
    // A step before the one the hook asked to be called at next (hh.steps/1 skip_until).
    if (slot.calls.services().skip_until.load(std::memory_order_relaxed) > ctx.global_step)
        [[unlikely]] {
      slot.cost.count_skipped_step();
      continue;
    }
    slot.calls.set_state(HookState::in_step);
    if (ObserverLane* lane = slot.observer.lane()) [[unlikely]] {
      // An observer is called behind the step: the step fetches what it last asked for.
      if (lane->request_known()) {
        merge_fetches(lane->fetches(), caller_fetches);
        continue;
      }
      if (!first_observed_before_run(slot)) continue;
    }
    if (!step_detail::wants(slot, Callback::before_run)) continue;
    std::optional<CallResult> failure;
    const bool ok = step_call<kTimed>(
        slot, Callback::before_run, timer,
        [&](hh_error* err) { return slot.calls.before_run(&ctx, &slot.request.c(), err); }, ctx,
        nullptr, failure);
    if (ok && !slot.calls.request_touched()) [[likely]]
      continue;
    slot.calls.clear_request_touched();
    CallResult r = failure ? std::move(*failure) : CallResult{};
    // The host's own reason for a rejected fetch or feed is more precise than the plugin's,
    // unless the hook's process is gone: that loss is what on_crash must see.
    if (!slot.request.refusal().empty() && !r.runner_lost)
      r = CallResult{HH_ERROR, 0, slot.request.refusal()};
    slot.request.clear_refusal();
    if (!r.ok()) {
      slot.request.drop();
      handle_result(slot, Callback::before_run, r, ctx.global_step);
      if (job_.failed()) return false;
      if (!step_detail::active(slot)) slot.calls.set_state(HookState::in_session);
      continue;
    }
    handle_result(slot, Callback::before_run, r, ctx.global_step);
    merge_request(slot, caller_fetches);
  }
  return true;
}

template <bool kTimed>
[[gnu::always_inline]] inline void StepEngine::after_calls(const hh_run_context& ctx,
                                                           const TensorMap& values) {
  PhaseCallScope scope(running_, Callback::after_run, ctx.global_step);
  StepTimer timer(kTimed);
  hh_run_context after_ctx = ctx;
  hh_run_values no_values{};
  no_values.struct_size = HH_RUN_VALUES_SIZE;
  no_values.tensor_stride = sizeof(hh_tensor);
  for (Slot* sp : step_slots_) {
    Slot& slot = *sp;
    if (!step_detail::active(slot) || slot.calls.state() != HookState::in_step) continue;
    slot.calls.set_state(HookState::in_session);
    if (slot.observer.lane()) [[unlikely]] {
      observe_step(slot, ctx, values);
      if (job_.failed()) return;
      continue;
    }
    if (!step_detail::wants(slot, Callback::after_run)) continue;
    const hh_run_values* rv = &no_values;
    hh_run_values fetched;
    if (slot.request.has_fetches()) [[unlikely]] {
      fetched = no_values;
      std::string refusal;
      const bool gathered = gather_views(slot, values, refusal);
      slot.request.clear_fetches();
      if (!gathered) {
        if (job_.failed()) return;
        handle_result(slot, Callback::after_run, CallResult{HH_ERROR, 0, refusal},
                      job_.global_step(std::memory_order_relaxed));
        if (job_.failed()) return;
        continue;
      }
      fetched.tensors = views_buffer_.data();
      fetched.count = static_cast<uint32_t>(views_buffer_.size());
      rv = &fetched;
    }
    after_ctx.stop_requested = job_.stop_requested(std::memory_order_relaxed) ? 1 : 0;
    std::optional<CallResult> failure;
    if (step_call<kTimed>(
            slot, Callback::after_run, timer,
            [&](hh_error* err) { return slot.calls.after_run(&after_ctx, rv, err); }, after_ctx, rv,
            failure)) [[likely]]
      continue;
    // The step the call concerns is the one that ran (its context's step), as in the trace.
    handle_result(slot, Callback::after_run, *failure, ctx.global_step);
    if (job_.failed()) return;
  }
}

}  // namespace hookhost
