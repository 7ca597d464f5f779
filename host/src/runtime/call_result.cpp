#include "runtime/call_result.hpp"

#include <cstring>

namespace hookhost {
namespace {

// The plugin's message and code, as every failure line shows them.
std::string plugin_message(std::string_view text, int32_t code) {
  std::string out = text.empty() ? "(the plugin gave no message)" : std::string(text);
  if (code != 0) out += " (code " + std::to_string(code) + ")";
  return out;
}

}  // namespace

CallResult returned_result(hh_status status, int32_t code, std::string_view text) {
  CallResult result;
  result.status = status;
  switch (status) {
    case HH_OK:
    case HH_STOP_REQUESTED: break;
    case HH_ERROR:
    case HH_ERROR_FATAL:
      result.code = code;
      result.message = plugin_message(text, code);
      break;
    default:
      result.message =
          "returned the undefined status " + std::to_string(status) + " (treated as HH_ERROR)";
      if (!text.empty()) result.message += ": " + plugin_message(text, code);
      result.status = HH_ERROR;
  }
  return result;
}

CallResult inprocess_result(hh_status status, const hh_error& err) {
  return returned_result(
      status, err.code,
      std::string_view(err.message, ::strnlen(err.message, HH_ERROR_MESSAGE_SIZE)));
}

CallResult escaped_exception_result() {
  CallResult result;
  result.status = HH_ERROR;
  result.message = describe_current_exception("the plugin");
  return result;
}

}  // namespace hookhost
