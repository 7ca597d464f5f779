// The hook under check, seen from the runtime: a HookDispatch around its sandboxed dispatcher
// that passes every call through and keeps what the checker judges afterwards (every call that did
// not return HH_OK or HH_STOP_REQUESTED, every fetch or feed the host refused, destroy's error),
// and names the tensors the hook asked for that the synthetic workload does not serve.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "check/synthetic_session.hpp"
#include "hookhost/host/hook_dispatch.hpp"
#include "sandbox/process_dispatch.hpp"

namespace hookhost::check {

struct RefusedRequest {
  std::string function;   // "add_fetch" or "add_feed"
  std::string name;       // the tensor's name, when it had a valid one
  bool unserved = false;  // refused because the synthetic workload does not serve the name
};

struct ObservedCall {
  std::string callback;
  std::optional<int64_t> step;  // the global step the call concerned
  CallResult result;
  std::vector<RefusedRequest> refused;  // before_run only
};

// What one scenario saw of the hook. Outlives the runtime that owns the dispatcher.
struct CallRecord {
  std::vector<ObservedCall> calls;  // the calls worth judging, in order
  std::set<std::string> unserved_names;
  std::optional<std::string> destroy_error;
  pid_t runner_pid = -1;     // of the runner the hook lives in now
  bool runner_lost = false;  // the runner is gone (crashed, exited, killed)
};

class ObservedDispatch : public HookDispatch {
 public:
  ObservedDispatch(std::unique_ptr<HookDispatch> inner, CallRecord& record,
                   const SyntheticSession& session);

  std::string plugin_id() const override { return inner_->plugin_id(); }
  std::string plugin_file() const override { return inner_->plugin_file(); }
  uint32_t state_version() const override { return inner_->state_version(); }
  bool implements(Callback callback) const override { return inner_->implements(callback); }
  bool accepts_device(hh_device device) override { return inner_->accepts_device(device); }
  CallResult begin() override;
  CallResult after_create_session(const hh_session_info& session) override;
  CallResult before_run(const hh_run_context& context, hh_run_request& request) override;
  CallResult after_run(const hh_run_context& context, const hh_run_values& values) override;
  CallResult end(const hh_end_info& info) override;
  std::string destroy() override;
  bool restart(std::string* why) override { return inner_->restart(why); }

 private:
  CallResult observe(const char* callback, std::optional<int64_t> step, CallResult result,
                     std::vector<RefusedRequest> refused = {});
  void refresh_runner();

  std::unique_ptr<HookDispatch> inner_;
  ProcessDispatch* process_;  // inner_, when it is a sandboxed one
  CallRecord& record_;
  const SyntheticSession& session_;
};

}  // namespace hookhost::check
