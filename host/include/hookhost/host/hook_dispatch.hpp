// The internal interface of one hook instance, whatever its isolation tier: the in-process
// implementation calls the plugin's C functions, another tier (a child process) sends messages.
// The runtime makes every call in one place (its StepEngine's call path), and that path goes
// through this interface for every call but one case: the per-step calls (before_run, after_run)
// of an in-process hook without a call_timeout, when time_every_n_steps > 1, are made on the
// plugin's function pointers directly, inside the same call path. A rule for every call belongs
// in that call path, not here. Ordering, policies and accounting live once, in the runtime.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include <hookhost/entry.h>
#include <hookhost/sdk/callback.hpp>  // hookhost::Callback, shared with the SDK

#include "callback_names.hpp"

namespace hookhost {

struct CallResult {
  hh_status status = HH_OK;  // only the four defined codes: an unknown one arrives as HH_ERROR
  int32_t code = 0;          // hh_error.code, for HH_ERROR / HH_ERROR_FATAL
  std::string message;       // set for HH_ERROR / HH_ERROR_FATAL
  // The hook's process (another isolation tier) crashed, exited, hung past its timeout or closed
  // its channel during this call, or was already lost: status is HH_ERROR_FATAL, message says
  // what happened, and every later call fails at once until restart() succeeds.
  bool runner_lost = false;
  bool ok() const { return status == HH_OK || status == HH_STOP_REQUESTED; }
};

class HookDispatch {
 public:
  virtual ~HookDispatch() = default;
  virtual std::string plugin_id() const = 0;
  virtual std::string plugin_file() const = 0;
  // The plugin's hh_plugin_entry.state_version when this tier learnt it (a runner reports it),
  // else 0: the runtime then keeps the version it was given.
  virtual uint32_t state_version() const { return 0; }
  // The ABI minor the plugin was built against: end() never gets an outcome added after it. A
  // dispatcher built with the host (a test double) knows today's.
  virtual uint32_t plugin_abi_minor() const { return HH_ABI_MINOR; }
  // False for a callback the hook does not implement: the runtime then never calls it.
  virtual bool implements(Callback callback) const = 0;
  // True when the hook takes fetched values on `device` (always for the CPU; otherwise only when
  // it offers the extension hh.device-values/1 and its accepts() says so).
  virtual bool accepts_device(hh_device device) = 0;
  // Why this tier takes no values on `device` whatever the plugin declares, in words that follow
  // "and " (a sandboxed hook's runner cannot map device memory); "" when the plugin's declaration
  // decides. The runtime's refusal then says this instead of the missing declaration.
  virtual std::string device_limit(hh_device device) const {
    (void)device;
    return {};
  }
  virtual CallResult begin() = 0;
  virtual CallResult after_create_session(const hh_session_info& session) = 0;
  virtual CallResult before_run(const hh_run_context& context, hh_run_request& request) = 0;
  virtual CallResult after_run(const hh_run_context& context, const hh_run_values& values) = 0;
  virtual CallResult end(const hh_end_info& info) = 0;
  // Returns an error text when the plugin's destroy() threw (it still counts as destroyed).
  virtual std::string destroy() = 0;
  // Brings a lost hook back (another isolation tier): a new process, create() again (the host
  // kept the hook's state, so state_get sees the last saved one), then begin() and
  // after_create_session() with the last session info, when they had been called. False, with
  // the reason in *why, when that fails or the tier cannot restart (the in-process one). The
  // runtime decides when to call it.
  virtual bool restart(std::string* why) {
    if (why) *why = "this hook runs in the host's process and cannot be restarted";
    return false;
  }
  // Ends the call running now at once, when this tier can without harming another hook: kills a
  // runner process of the hook's own (the call then fails with runner_lost, and its message says
  // `why`). False when it cannot: the call runs in the host's process, or in a runner other hooks
  // share (an isolation group). [thread-safe]
  virtual bool interrupt(const std::string& why) {
    (void)why;
    return false;
  }
};

// Calls an hh_hook in this process. The callback pointers are copied here, once: a plugin that
// rewrites its hh_hook later cannot make the host call NULL. A C++ exception that escapes the
// plugin (a plugin not built with the SDK) is caught here as a second line of defence and reported
// as HH_ERROR. The caller has checked `hook` (struct_size, destroy). The hook's extensions are
// asked for here, once; `warn` receives why an offered extension table was ignored.

std::unique_ptr<HookDispatch> make_inprocess_dispatch(hh_hook* hook, std::string plugin_id,
                                                      std::string plugin_file, uint32_t abi_minor,
                                                      std::string* warn = nullptr);

}  // namespace hookhost
