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
  if (cadence_every_n_steps)
    parts.push_back("declared cadence every " + std::to_string(cadence_every_n_steps) + " steps");
  return join(parts, ", ");
}

uint64_t declared_cadence(const PluginMetadata& plugin, const ResolvedParams& params) {
  if (plugin.cadence_param.empty()) return 0;
  const ResolvedParams::Value* v = params.find(plugin.cadence_param);
  if (!v || !v->is_set || v->spec.type != HH_PARAM_TYPE_INT || v->i <= 0) return 0;
  return static_cast<uint64_t>(v->i);
}

bool step_called(Slot& slot, int64_t global_step) {
  const StepFilter& filter = slot.hook.settings().step_filter;
  const uint64_t seen = slot.cost.next_filtered_step();
  const bool called =
      (filter.first_n == 0 || seen < filter.first_n) &&
      (filter.every_n_steps == 0 ||
       (global_step >= 0 && static_cast<uint64_t>(global_step) % filter.every_n_steps == 0)) &&
      (filter.at_steps.empty() ||
       std::binary_search(filter.at_steps.begin(), filter.at_steps.end(), global_step)) &&
      // The first step, whatever it is (a resumed schedule is the hook's own to keep), and each
      // step that makes the global step a multiple of N.
      (filter.cadence_every_n_steps == 0 || seen == 0 ||
       (global_step >= -1 &&
        static_cast<uint64_t>(global_step + 1) % filter.cadence_every_n_steps == 0));
  if (!called) slot.cost.count_skipped_step();
  return called;
}

}  // namespace hookhost
