#include "runtime/hook_identity.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "support/text.hpp"

namespace hookhost {

HookIdentity::HookIdentity(HookSettings settings, std::unique_ptr<HostServices> services,
                           std::unique_ptr<HookDispatch> dispatch,
                           std::shared_ptr<const LoadedPlugin> plugin)
    : settings_(std::move(settings)),
      services_(std::move(services)),
      plugin_(std::move(plugin)),
      dispatch_(std::move(dispatch)) {
  std::vector<int64_t>& at_steps = settings_.step_filter.at_steps;
  std::sort(at_steps.begin(), at_steps.end());
  at_steps.erase(std::unique(at_steps.begin(), at_steps.end()), at_steps.end());
  services_->blame_name =
      describe_hook(settings_.instance_name, dispatch_->plugin_id(), dispatch_->plugin_file());
}

}  // namespace hookhost
