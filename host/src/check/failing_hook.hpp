// A test double beside the hook under check: another hook that fails with HH_ERROR in its
// after_run at a chosen step. Added with on_error = fail, it fails the job, so the hook under check
// must take end() with outcome "failed" for a fault that is not its own.
#pragma once

#include <cstdint>
#include <string>

#include "hookhost/host/hook_dispatch.hpp"

namespace hookhost::check {

class FailingHook : public HookDispatch {
 public:
  explicit FailingHook(int64_t fail_at_step) : fail_at_step_(fail_at_step) {}

  std::string plugin_id() const override { return "hookhost-check"; }
  std::string plugin_file() const override { return "(a test double of hookhost check)"; }
  bool implements(Callback) const override { return true; }
  bool accepts_device(hh_device device) override { return device.type == HH_DEVICE_CPU; }
  CallResult begin() override { return {}; }
  CallResult after_create_session(const hh_session_info&) override { return {}; }
  CallResult before_run(const hh_run_context&, hh_run_request&) override { return {}; }
  CallResult after_run(const hh_run_context& context, const hh_run_values&) override;
  CallResult end(const hh_end_info&) override { return {}; }
  std::string destroy() override { return {}; }

 private:
  int64_t fail_at_step_;
};

}  // namespace hookhost::check
