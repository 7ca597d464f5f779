// The one internal interface every hook call goes through. The in-process implementation calls the
// plugin's C functions; another isolation tier (a child process) implements the same interface, so
// ordering, policies and accounting live once, in the runtime.
#pragma once

#include <memory>
#include <string>

#include <hookhost/entry.h>

namespace hookhost {

struct CallResult {
  hh_status status = HH_OK;
  std::string message;  // set for HH_ERROR / HH_ERROR_FATAL
  bool ok() const { return status == HH_OK || status == HH_STOP_REQUESTED; }
};

class HookDispatch {
 public:
  virtual ~HookDispatch() = default;
  virtual std::string plugin_id() const = 0;
  virtual std::string plugin_file() const = 0;
  virtual CallResult begin() = 0;
  virtual CallResult after_create_session(const hh_session_info& session) = 0;
  virtual CallResult before_run(const hh_run_context& context, hh_run_request& request) = 0;
  virtual CallResult after_run(const hh_run_context& context, const hh_run_values& values) = 0;
  virtual CallResult end(const hh_end_info& info) = 0;
  virtual void destroy() = 0;
};

// Calls an hh_hook in this process. A C++ exception that escapes the plugin (a plugin not built
// with the SDK) is caught here as a second line of defence and reported as HH_ERROR.
std::unique_ptr<HookDispatch> make_inprocess_dispatch(hh_hook* hook, std::string plugin_id,
                                                      std::string plugin_file);

}  // namespace hookhost
