// What every step's before_run and after_run read and write of one hook, in one cache line: where
// the hook is in its lifecycle, whether it is disabled, the callbacks it implements, its per-step
// functions when the runtime calls them directly, its services handle, and the direct calls made.
// The step loop reads it for every hook on every step, so it is kept small and first in its slot.
// Thread rules: the training thread's, except that an observer's worker, while it runs the hook's
// call (the training thread then leaves the observer's request alone), reads implements() and
// marks and clears request_touched; services() is set at construction and never changes.
#pragma once

#include <array>
#include <cstdint>

#include <hookhost/hook.h>

#include "context/host_services.hpp"
#include "hookhost/host/hook_dispatch.hpp"

namespace hookhost {

// Where an instance is in its lifecycle. The runtime checks every call against it.
enum class HookState : uint8_t { created, begun, in_session, in_step, ended, destroyed };

// The plugin's per-step functions when it runs in this process, copied at create() like the
// dispatcher's: the runtime calls them directly (no virtual call, no CallResult unless the call
// fails). Null for another isolation tier or a test double.
struct DirectStepCalls {
  hh_hook* hook = nullptr;
  decltype(hh_hook::before_run) before_run = nullptr;
  decltype(hh_hook::after_run) after_run = nullptr;
};

class StepCallState {
 public:
  StepCallState(HostServices& services, const HookDispatch& dispatch, bool step_filtered,
                DirectStepCalls direct)
      : step_filtered_(step_filtered), direct_(direct), services_(&services) {
    for (size_t i = 0; i < kCallbackNames.size(); ++i)
      implements_[i] = dispatch.implements(static_cast<Callback>(i));
  }

  // --- lifecycle ---
  HookState state() const { return state_; }
  void set_state(HookState state) { state_ = state; }
  // begin() is delivered (or skipped, when not implemented): from now on the hook is owed an end.
  void mark_begun() {
    begin_called_ = true;
    state_ = HookState::begun;
  }
  bool begun() const { return begin_called_; }
  // Gets no more calls but end(); never undone.
  bool disabled() const { return disabled_; }
  void disable() { disabled_ = true; }

  // --- what is called ---
  bool implements(Callback callback) const { return implements_[static_cast<size_t>(callback)]; }
  // A step filter is set: each step asks step_called() first.
  bool step_filtered() const { return step_filtered_; }
  // The instance whose calls these are (its HostServices, owned by the slot's HookIdentity).
  HostServices& services() const { return *services_; }

  // --- direct calls ---
  // Whether the per-step calls go straight to the plugin's functions (decided at start: it runs
  // in this process, has no call_timeout, which needs each call's start, and timing is sampled).
  bool calls_directly() const { return direct_step_calls_; }
  void choose_direct_calls(bool direct) { direct_step_calls_ = direct && direct_.hook; }
  hh_status before_run(const hh_run_context* ctx, hh_run_request* request, hh_error* err) const {
    return direct_.before_run(direct_.hook, ctx, request, err);
  }
  hh_status after_run(const hh_run_context* ctx, const hh_run_values* values, hh_error* err) const {
    return direct_.after_run(direct_.hook, ctx, values, err);
  }
  // Direct before_run and after_run calls, added to the slot's stats when reported.
  void count_direct_call(Callback callback) {
    ++direct_calls_[callback == Callback::before_run ? 0 : 1];
  }
  uint64_t direct_calls(Callback callback) const {
    if (callback == Callback::before_run) return direct_calls_[0];
    if (callback == Callback::after_run) return direct_calls_[1];
    return 0;
  }

  // --- the step's request ---
  // add_fetch or add_feed was called in this before_run: its request needs looking at.
  bool request_touched() const { return request_touched_; }
  void mark_request_touched() { request_touched_ = true; }
  void clear_request_touched() { request_touched_ = false; }

 private:
  HookState state_ = HookState::created;
  bool disabled_ = false;
  bool direct_step_calls_ = false;
  bool request_touched_ = false;
  bool step_filtered_ = false;
  bool begin_called_ = false;
  std::array<bool, kCallbackNames.size()> implements_{};
  DirectStepCalls direct_;
  HostServices* services_;
  std::array<uint64_t, 2> direct_calls_{};
};

}  // namespace hookhost
