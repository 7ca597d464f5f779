// Which steps a filtered hook is called on (HookSettings::step_filter): asked once per step, on
// the training thread, for slots that have a filter only.
#include <algorithm>

#include "runtime/slot.hpp"
#include "support/text.hpp"

namespace hookhost {

std::string StepFilter::text() const {
  std::vector<std::string> parts;
  if (every_n_steps) parts.push_back("every_n_steps = " + std::to_string(every_n_steps));
  if (!at_steps.empty()) {
    std::vector<std::string> steps;
    for (int64_t step : at_steps) steps.push_back(std::to_string(step));
    parts.push_back("at_steps = " + join(steps, ","));
  }
  if (first_n) parts.push_back("first_n = " + std::to_string(first_n));
  return join(parts, ", ");
}

bool step_called(Slot& slot, int64_t global_step) {
  const StepFilter& filter = slot.settings.step_filter;
  const uint64_t seen = slot.filtered_steps_seen++;
  const bool called =
      (filter.first_n == 0 || seen < filter.first_n) &&
      (filter.every_n_steps == 0 ||
       (global_step >= 0 && static_cast<uint64_t>(global_step) % filter.every_n_steps == 0)) &&
      (filter.at_steps.empty() ||
       std::binary_search(filter.at_steps.begin(), filter.at_steps.end(), global_step));
  if (!called) ++slot.steps_skipped;
  return called;
}

}  // namespace hookhost
