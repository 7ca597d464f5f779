#include "runtime/create_verdict.hpp"

namespace hookhost {

std::string create_refusal(hh_status status, const std::string& message, bool has_hook,
                           uint32_t hook_struct_size, bool has_destroy) {
  const std::string detail = message.empty() ? "" : ": " + message;
  if (status == HH_OK && !has_hook)
    return "create() returned HH_OK without an instance (a plugin bug: it must set *out_hook)";
  if (status == HH_ERROR || status == HH_ERROR_FATAL)
    return message.empty() ? "create() failed without a message" : message;
  if (status == HH_STOP_REQUESTED)
    return "create() returned HH_STOP_REQUESTED, which only lifecycle calls may return (a plugin "
           "bug: create returns HH_OK or HH_ERROR)" +
           detail;
  if (status != HH_OK)
    return "create() returned the undefined status " + std::to_string(status) +
           " (a plugin bug: create returns HH_OK or HH_ERROR)" + detail;
  if (hook_struct_size < HH_HOOK_SIZE_1_0)
    return "create() returned an hh_hook with struct_size " + std::to_string(hook_struct_size) +
           ", below the ABI 1.0 size " + std::to_string(HH_HOOK_SIZE_1_0) +
           " (initialise it with hh_hook_init)";
  if (!has_destroy) return "create() returned an hh_hook without destroy (it is required)";
  return {};
}

}  // namespace hookhost
