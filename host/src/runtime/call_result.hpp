// What a call into a plugin returned, as the runtime reports it: shared by the in-process
// dispatcher, the step engine's direct per-step calls and the sandbox tier, so all say the same
// words.
#pragma once

#include <hookhost/hook.h>

#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include "hookhost/host/hook_dispatch.hpp"
#include "support/exception_text.hpp"

namespace hookhost {

// Ready for the next call: only the fields a plugin's failure fills are reset, not the 1 KiB
// message buffer.
inline void reset_error(hh_error& err) {
  err.struct_size = HH_ERROR_SIZE;
  err.code = 0;
  err.message[0] = '\0';
}

// The result of a status a plugin function returned, with its error's code and `text` (the
// message as the plugin left it): the message and code for HH_ERROR and HH_ERROR_FATAL; an
// undefined status becomes HH_ERROR saying so. Every tier words its results with it.
CallResult returned_result(hh_status status, int32_t code, std::string_view text);
// The same for an hh_error in this process, whose message may lack its terminator.
CallResult inprocess_result(hh_status status, const hh_error& err);

// HH_ERROR for the C++ exception that escaped the plugin: call only inside a catch block.
CallResult escaped_exception_result();

// Calls into an in-process plugin: `fn(&err)` with `err` reset first. A C++ exception that escapes
// the plugin (the SDK never lets one, a hand-written C++ plugin might) is caught here, a second
// line of defence; catching across the C boundary works with g++ in practice. Nothing when the call
// returned HH_OK, else what it returned.
template <typename Fn>
std::optional<CallResult> call_inprocess(Fn&& fn, hh_error& err) {
  reset_error(err);
  hh_status status;
  try {
    status = fn(&err);
  } catch (...) {
    return escaped_exception_result();
  }
  if (status == HH_OK) [[likely]]
    return std::nullopt;
  return inprocess_result(status, err);
}

}  // namespace hookhost
