// Changes to a running job (Runtime::at_next_boundary): posted from any thread, run on the training
// thread at the step boundary, where no hook call is running and every hook's state is settled.
#include "runtime/runtime_impl.hpp"

namespace hookhost {

bool Runtime::at_next_boundary(std::function<void(Runtime&)> change) {
  return impl_->changes.post(std::move(change));
}

void Runtime::Impl::run_changes() {
  changes.run(*owner_runtime, *log);
}

bool Runtime::propose_change(std::string change, ChangeDone done) {
  Impl& m = *impl_;
  if (!m.agreement)  // one process: its next boundary
    return m.changes.post([&m, change = std::move(change), done = std::move(done)](Runtime& rt) {
      ChangeOutcome outcome{false, "this job makes no agreed change (no on_agreed_change)"};
      if (m.options.on_agreed_change) {
        try {
          outcome = m.options.on_agreed_change(rt, change);
        } catch (const std::exception& e) {
          outcome = {false, std::string("the change failed: ") + e.what()};
        }
      }
      if (done) done({std::move(outcome)});
    });
  if (!m.options.communicator->is_chief()) return false;
  return m.agreed_changes.propose(std::move(change), std::move(done));
}

void Runtime::Impl::share_agreed_changes() {
  agreed_changes.share(*options.communicator, [this](const std::string& change) {
    ChangeOutcome outcome{false, "this process makes no agreed change (no on_agreed_change)"};
    if (options.on_agreed_change)
      changes.run_now(*owner_runtime,
                      [&](Runtime& rt) { outcome = options.on_agreed_change(rt, change); });
    return outcome;
  });
}

bool Runtime::detach_hook(const std::string& instance_name, const std::string& reason,
                          std::string* message, std::optional<SavedHookState>* final_state) {
  Impl& m = *impl_;
  if (!m.changes.running())
    throw std::logic_error("detach_hook outside a change (at_next_boundary)");
  return m.engine.detach(instance_name, reason, message, final_state);
}

bool Runtime::interrupt_call(const std::string& instance_name, const std::string& why,
                             std::string* why_not) {
  using Interrupt = StepEngine::Interrupt;
  switch (impl_->engine.interrupt(instance_name, why)) {
    case Interrupt::done: return true;
    case Interrupt::not_in_call:
      *why_not = "hook '" + instance_name + "' is not in a call";
      return false;
    case Interrupt::cannot:
      *why_not = "hook '" + instance_name +
                 "' runs in the host's process or in a runner process other hooks share (an "
                 "isolation group): its call cannot be ended from outside";
      return false;
    case Interrupt::no_such_hook:
      *why_not = "no hook named '" + instance_name + "' runs in this job";
      return false;
  }
  return false;
}

void Runtime::give_state_to(const std::string& instance_name, SavedHookState state) {
  Impl& m = *impl_;
  if (!m.changes.running())
    throw std::logic_error("give_state_to outside a change (at_next_boundary)");
  m.restored_states.insert_or_assign(instance_name, std::move(state));
}

Runtime::Progress Runtime::progress() const {
  const Impl& m = *impl_;
  Progress p;
  p.global_step = m.job.global_step();
  p.steps_run = m.steps_run_shared.load(std::memory_order_relaxed);
  p.started = m.started_shared.load();
  p.closed = m.changes.closed();
  p.changes_waiting = m.changes.count();
  const int64_t workload = m.job.workload_last_step();
  const int64_t published = m.services.steps.published_last_step();
  p.last_step = workload >= 0 && (published < 0 || workload < published) ? workload : published;
  return p;
}

}  // namespace hookhost
