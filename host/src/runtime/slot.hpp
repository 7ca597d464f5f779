// One hook instance as the runtime holds it, made of parts that each own their data and state
// their own thread rules: what every step's calls touch (StepCallState, first, on one cache line),
// this step's request (StepRequest), who it is (HookIdentity), what its calls cost (HookCost), what
// went wrong with it (HookHealth), whether it was taken off the job (DetachControl), and its
// observer lane (ObserverLink). Owned by the StepEngine, which alone changes which slots exist.
#pragma once

#include "runtime/detach_control.hpp"
#include "runtime/hook_cost.hpp"
#include "runtime/hook_health.hpp"
#include "runtime/hook_identity.hpp"
#include "runtime/observer_link.hpp"
#include "runtime/step_call_state.hpp"
#include "runtime/step_request.hpp"

namespace hookhost {

struct alignas(64) Slot {
  explicit Slot(HookIdentity identity, DirectStepCalls direct = {})
      // `calls` comes first (declaration order) and points at the handle `identity` owns, which
      // moving the identity into `hook` leaves where it is.
      : calls(identity.services(), identity.dispatch(), identity.settings().step_filter.set(),
              direct),
        hook(std::move(identity)) {}
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;

  StepCallState calls;  // the hot cache line: keep it first
  StepRequest request;
  HookIdentity hook;
  HookCost cost;
  HookHealth health;
  DetachControl detach;
  ObserverLink observer;  // last, so its lane (and its worker's calls) ends before the rest goes

  // The stats of `callback`'s calls, the direct ones counted in.
  CallStats stats_of(Callback callback) const {
    CallStats st = cost.stats(callback);
    st.calls += calls.direct_calls(callback);
    return st;
  }
};
static_assert(sizeof(StepCallState) <= 64, "a step's per-hook state fits one cache line");

// Whether the filtered slot's before_run and after_run are called on the step whose context
// carries `global_step` (asked once per step, before its before_run).
bool step_called(Slot& slot, int64_t global_step);

}  // namespace hookhost
