#include "runtime/hook_identity.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "support/text.hpp"

namespace hookhost {
namespace {

// What is left of a retired hook's dispatcher: its names; every call fails, and none is made.
class RetiredDispatch final : public HookDispatch {
 public:
  explicit RetiredDispatch(const HookDispatch& was)
      : plugin_id_(was.plugin_id()),
        plugin_file_(was.plugin_file()),
        state_version_(was.state_version()),
        abi_minor_(was.plugin_abi_minor()) {}
  std::string plugin_id() const override { return plugin_id_; }
  std::string plugin_file() const override { return plugin_file_; }
  uint32_t state_version() const override { return state_version_; }
  uint32_t plugin_abi_minor() const override { return abi_minor_; }
  bool implements(Callback) const override { return false; }
  bool accepts_device(hh_device) override { return false; }
  CallResult begin() override { return gone(); }
  CallResult after_create_session(const hh_session_info&) override { return gone(); }
  CallResult before_run(const hh_run_context&, hh_run_request&) override { return gone(); }
  CallResult after_run(const hh_run_context&, const hh_run_values&) override { return gone(); }
  CallResult end(const hh_end_info&) override { return gone(); }
  std::string destroy() override { return {}; }

 private:
  static CallResult gone() {
    return {HH_ERROR_FATAL, 0, "the hook was detached and destroyed", false};
  }
  std::string plugin_id_, plugin_file_;
  uint32_t state_version_, abi_minor_;
};

}  // namespace

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

namespace hookhost {

std::unique_ptr<HookDispatch> HookIdentity::retire() {
  std::unique_ptr<HookDispatch> other = std::make_unique<RetiredDispatch>(*dispatch_);
  dispatch_.swap(other);
  return other;
}

}  // namespace hookhost
