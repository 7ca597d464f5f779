// hh_host: the functions every hook instance calls. The checks shared by every function (the
// handle, the after-end rule, exceptions) are in service.hpp; these check their own arguments.
#include <algorithm>
#include <cstring>

#include "context/host_services.hpp"
#include "context/service_context.hpp"
#include "services.hpp"

namespace hookhost {

template <>
HostTable& service_detail::service_for<HostTable>(HostServices& caller) {
  return caller.context->services().host;
}

const char* HostTable::instance_name(HostServices& caller) {
  return caller.instance_name.c_str();
}

void HostTable::log(HostServices& caller, int32_t level, const char* message, size_t size) {
  if (!message) return;
  level = std::clamp<int32_t>(level, HH_LOG_TRACE, HH_LOG_ERROR);
  const auto spd_level = static_cast<spdlog::level::level_enum>(level);
  if (!caller.logger->should_log(spd_level)) return;
  if (size > HH_MAX_LOG_MESSAGE) {
    caller.logger->log(spd_level, "{}... [cut at {} of {} bytes]",
                       std::string_view(message, HH_MAX_LOG_MESSAGE), HH_MAX_LOG_MESSAGE, size);
    return;
  }
  caller.logger->log(spd_level, std::string_view(message, size));
}

int32_t HostTable::log_enabled(HostServices& caller, int32_t level) {
  level = std::clamp<int32_t>(level, HH_LOG_TRACE, HH_LOG_ERROR);
  return caller.logger->should_log(static_cast<spdlog::level::level_enum>(level)) ? 1 : 0;
}

int64_t HostTable::global_step(HostServices& caller) {
  if (t_observed_step != kNoObservedStep && t_current_call == &caller) return t_observed_step;
  return caller.context->global_step();
}

void HostTable::request_stop(HostServices& caller, const char* reason) {
  const std::string text = bounded_text(reason, HH_MAX_STOP_REASON);
  caller.context->request_stop(HH_STOP_CAUSE_HOOK, "hook '" + caller.instance_name + "': " +
                                                       (text.empty() ? "stop requested" : text));
}

int32_t HostTable::should_stop(HostServices& caller) {
  return caller.context->stop_requested() ? 1 : 0;
}

const char* HostTable::run_dir(HostServices& caller) {
  return caller.run_dir.c_str();
}

hh_status HostTable::state_put(HostServices& caller, const void* data, size_t size) {
  if (!data && size > 0) throw Misuse("with NULL data and size " + std::to_string(size));
  const size_t limit = caller.context->max_state_bytes();
  if (size > limit)
    throw Refusal("state_put refused: " + std::to_string(size) +
                  " bytes is more than the job's state limit of " + std::to_string(limit) +
                  " bytes ([run] max_state_mb); the previous state is kept");
  std::string bytes(static_cast<const char*>(data), data ? size : 0);
  std::lock_guard lock(caller.state_mutex);
  caller.state =
      SavedHookState{caller.plugin_id, caller.state_version, std::move(bytes), caller.plugin_build};
  caller.has_state = true;
  caller.state_saved_by_plugin = true;
  return HH_OK;
}

int32_t HostTable::state_info(HostServices& caller, size_t* size, uint32_t* version) {
  std::lock_guard lock(caller.state_mutex);
  if (size) *size = caller.has_state ? caller.state.bytes.size() : 0;
  if (version) *version = caller.has_state ? caller.state.state_version : 0;
  return caller.has_state ? 1 : 0;
}

hh_status HostTable::state_get(HostServices& caller, void* buffer, size_t capacity, size_t* size) {
  std::lock_guard lock(caller.state_mutex);
  const size_t needed = caller.has_state ? caller.state.bytes.size() : 0;
  if (size) *size = needed;
  if (!caller.has_state) return HH_ERROR;
  if (needed > capacity || (needed > 0 && !buffer)) return HH_ERROR;
  if (needed) std::memcpy(buffer, caller.state.bytes.data(), needed);
  return HH_OK;
}

const void* HostTable::get_service(HostServices& caller, const char* id) {
  if (!id) return nullptr;
  const size_t n = ::strnlen(id, 256);
  if (n > 255) return nullptr;
  return caller.context->services().find(std::string_view(id, n));
}

namespace {
const hh_host kHostFunctions = [] {
  hh_host c =
      in_process_table<HostTableFunctions, &HostTable::instance_name, &HostTable::log,
                       &HostTable::log_enabled, &HostTable::global_step, &HostTable::request_stop,
                       &HostTable::should_stop, &HostTable::run_dir, &HostTable::state_put,
                       &HostTable::state_info, &HostTable::state_get, &HostTable::get_service>();
  c.abi_major = HH_ABI_MAJOR;
  c.abi_minor = HH_ABI_MINOR;
  return c;
}();
}  // namespace

const void* HostTable::table() const {
  return &kHostFunctions;
}

void HostTable::fill(HostServices& services) {
  services.c = kHostFunctions;
  services.c.host_data = &services;
}

}  // namespace hookhost
