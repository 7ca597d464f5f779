// hh.steps/1: hooks that know where training ends (stop_at_step) publish it; others (a progress
// bar) read the smallest such step, or the workload's own last step. A hook that keeps its own
// schedule tells the host which steps it can skip (skip_until).
#include <hookhost/ext/steps.h>

#include "context/host_services.hpp"
#include "context/service_context.hpp"
#include "services.hpp"

namespace hookhost {

template <>
StepsService& service_detail::service_for<StepsService>(HostServices& caller) {
  return caller.context->services().steps;
}

hh_status StepsService::publish_last_step(HostServices&, int64_t step) {
  if (step < 0) throw Misuse("with a negative step " + std::to_string(step));
  int64_t current = published_.load();
  while ((current < 0 || step < current) && !published_.compare_exchange_weak(current, step)) {
  }
  return HH_OK;
}

int64_t StepsService::last_step(HostServices& caller) {
  const int64_t published = published_.load();
  // The runtime's copy: Session is used on the training thread only, and this runs on any.
  const int64_t own = caller.context->workload_last_step();
  if (own >= 0 && (published < 0 || own < published)) return own;
  return published;
}

hh_status StepsService::skip_until(HostServices& caller, int64_t step) {
  if (step < 0) throw Misuse("with a negative step " + std::to_string(step));
  caller.skip_until.store(step, std::memory_order_relaxed);
  return HH_OK;
}

namespace {
const hh_steps_service kSteps =
    in_process_table<StepsFunctions, &StepsService::publish_last_step, &StepsService::last_step,
                     &StepsService::skip_until>();
}  // namespace

const void* StepsService::table() const {
  return &kSteps;
}

}  // namespace hookhost
