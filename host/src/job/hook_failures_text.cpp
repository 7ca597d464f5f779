#include "hookhost/host/job.hpp"

#include "support/display_text.hpp"
#include "support/text.hpp"

namespace hookhost {

std::string hook_failures_text(const std::vector<HookReport>& reports) {
  // Built with += piece by piece: GCC 12 at -O3 raises a false -Wrestrict on long operator+ chains.
  std::vector<std::string> disabled, failing;
  for (const auto& r : reports) {
    uint64_t failures = 0;
    for (const auto& [callback, stats] : r.callbacks) failures += stats.failures;
    std::string name = "'";
    name += display_text(r.instance_name);
    name += '\'';
    std::string line;
    if (r.disabled) {
      line = name;
      line += " (";
      line += display_text(r.failure);
      line += ')';
      disabled.push_back(std::move(line));
    } else if (failures > 0) {
      line = "hook ";
      line += name;
      line += " failed ";
      line += std::to_string(failures);
      line += failures == 1 ? " time (" : " times (first: ";
      line += display_text(r.failure);
      line += ')';
      failing.push_back(std::move(line));
    }
  }
  if (!disabled.empty()) {
    std::string out = std::to_string(disabled.size());
    out += disabled.size() == 1 ? " hook disabled: " : " hooks disabled: ";
    out += join(disabled, ", ");
    failing.insert(failing.begin(), std::move(out));
  }
  return join(failing, "; ");
}

}  // namespace hookhost
