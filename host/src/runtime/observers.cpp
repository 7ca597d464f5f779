// Observers (HookSettings::observer) as the training thread sees them: each has a lane and a
// worker (observer_lane.hpp; the observers of one isolation group share one) that calls it behind
// the step; here the step's values are copied and queued,
// and what its calls returned is handled at the step boundary with the step it concerns.
#include <chrono>
#include <map>
#include <memory>

#include "runtime/observed_exchange.hpp"
#include "runtime/observer_lane.hpp"
#include "runtime/step_engine.hpp"

namespace hookhost {

namespace {

// The value as it is now, for the observer's worker that reads it later while the workload may
// change it in place (a PyTorch parameter the next optimizer.step() updates): a value in host
// memory is copied with its data, borrowed or not; a value on a device keeps its device view (the
// host cannot copy it) with its host copy taken the same way.
Tensor snapshot(const Tensor& value) {
  if (const Tensor* host = value.host_copy()) return Tensor::with_host_copy(value, snapshot(*host));
  if (value.device().type == HH_DEVICE_CPU) return Tensor::from_view(value.view(""));
  return value;
}

}  // namespace

const char* when_full_name(ObserverSettings::WhenFull when_full) {
  return when_full == ObserverSettings::WhenFull::skip ? "skip" : "block";
}

void StepEngine::start_observers() {
  // The observers living in one runner (an isolation group) share a worker.
  std::map<const void*, std::shared_ptr<ObserverWorker>> runner_workers;
  for (const auto& sp : slots_)
    if (sp->hook.is_observer()) start_observer(*sp, runner_workers);
}

void StepEngine::start_observer(Slot& slot,
                                std::map<const void*, std::shared_ptr<ObserverWorker>>& shared) {
  std::shared_ptr<ObserverWorker> worker;
  if (const auto* exchange = dynamic_cast<const ObservedExchange*>(&slot.hook.dispatch())) {
    std::shared_ptr<ObserverWorker>& runner_worker = shared[exchange->runner()];
    if (!runner_worker) runner_worker = std::make_shared<ObserverWorker>();
    worker = runner_worker;
  }
  auto* lane = new ObserverLane(slot, log_, std::move(worker));
  slot.observer.attach(lane, lane->running());
  // Without a before_run it asks for nothing, and nothing needs learning on the step.
  if (!slot.calls.implements(Callback::before_run)) lane->fetch_nothing();
  observer_slots_.push_back(&slot);
}

bool StepEngine::first_observed_before_run(Slot& slot) {
  // Its worker may still be delivering steps queued after a failed first before_run: the two
  // calls must not overlap.
  slot.observer.lane()->drain([&] { settle_observer(slot); });
  settle_observer(slot);
  if (slot.calls.disabled()) {
    slot.calls.set_state(HookState::in_session);
    return false;
  }
  slot.observer.expect_first_handover();
  return true;
}

void StepEngine::observe_step(Slot& slot, const hh_run_context& ctx, const TensorMap& values) {
  ObservedStep step;
  step.before_ctx = ctx;
  step.after_ctx = ctx;
  step.after_ctx.stop_requested = job_.stop_requested(std::memory_order_relaxed) ? 1 : 0;
  step.step_after = job_.global_step(std::memory_order_relaxed);
  // Its calls run later: they carry the time this step ran (records stamped with it read the same
  // as on the step).
  step.before_ctx.wall_time_ns = step.after_ctx.wall_time_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count();
  ObserverLane& lane = *slot.observer.lane();
  const std::vector<std::string>* names;
  if (slot.observer.take_first_handover()) {
    lane.learn_request(slot.request.fetches());
    step.before_done = true;
    step.asked = slot.request.take_fetches();
    names = &step.asked;
  } else {
    names = &lane.step_fetches();  // as before_calls merged them into this step's
  }
  for (const auto& name : *names) {
    auto it = values.find(name);
    if (it == values.end()) {
      job_.fail(missing_fetch_failure(name));
      return;
    }
    // The one copy an observer costs the step: of the data itself where the value is borrowed
    // (a Python tensor the next optimizer step updates in place), as the worker reads it later.
    step.values.emplace(it->first, snapshot(it->second));
  }
  if (lane.push(std::move(step), [&] { settle_observer(slot); })) return;
  if (lane.skipped_steps() == 1)
    log_->warn(
        "observer '{}' fell behind: global step {} was not queued to it (queue = {} full, policy "
        "= skip); later skipped steps are counted in its report",
        slot.hook.name(), ctx.global_step, slot.hook.settings().observer.queue);
}

void StepEngine::settle_observers() {
  for (Slot* slot : observer_slots_)
    if (slot->observer.lane()->has_outcomes()) settle_observer(*slot);
}

void StepEngine::settle_observer(Slot& slot) {
  ObserverLane& lane = *slot.observer.lane();
  for (ObserverOutcome& outcome : lane.take_outcomes()) {
    if (slot.calls.disabled() && !outcome.result.ok())
      continue;  // a later failure of a disabled hook
    // Run as the hook's call would: a restart replays its lifecycle from here.
    handle_result(slot, outcome.callback, outcome.result, outcome.step);
  }
  if (slot.calls.disabled())
    lane.stop_delivering();
  else if (lane.halted())
    lane.resume();  // restarted
}

void StepEngine::drain_observers() {
  for (Slot* slot : observer_slots_) {
    slot->observer.lane()->drain([&] { settle_observer(*slot); });
    settle_observer(*slot);
  }
}

}  // namespace hookhost
