// hh_host: the functions every hook instance calls, each checking what the plugin handed over
// (the handle, pointers, lengths, the calling thread, the instance's lifecycle) before using it.
#include <hookhost/ext/checkpoint.h>

#include <algorithm>
#include <cstring>

#include "runtime_impl.hpp"

namespace hookhost {

thread_local const HostServices* t_current_call = nullptr;

std::string bounded_text(const char* text, size_t max) {
  if (!text) return {};
  const size_t n = ::strnlen(text, max + 1);
  return n > max ? std::string(text, max) + "..." : std::string(text, n);
}

HostServices* HostServices::from(const hh_host* host, const char* function) {
  auto* s = host ? static_cast<HostServices*>(host->host_data) : nullptr;
  if (s && s->magic == kMagic && &s->c == host) return s;
  // Nothing trustworthy to log through but the default logger.
  spdlog::error(
      "a plugin called hh_host.{} with a host pointer this host never issued{}; call "
      "refused (plugin misbehaving)",
      function, host ? "" : " (NULL)");
  return nullptr;
}

void HostServices::misuse(const char* function, const std::string& what) const {
  logger->error("plugin misbehaving: {} {} ({}, plugin '{}'); call refused", function, what,
                instance_name, plugin_id);
}

namespace {

const char* svc_instance_name(const hh_host* h) {
  auto* s = HostServices::from(h, "instance_name");
  return s ? s->instance_name.c_str() : "";
}

void svc_log(const hh_host* h, int32_t level, const char* message, size_t size) {
  auto* s = HostServices::from(h, "log");
  if (!s || !message) return;
  level = std::clamp<int32_t>(level, HH_LOG_TRACE, HH_LOG_ERROR);
  const auto spd_level = static_cast<spdlog::level::level_enum>(level);
  if (!s->logger->should_log(spd_level)) return;
  if (size > HH_MAX_LOG_MESSAGE) {
    s->logger->log(spd_level, "{}... [cut at {} of {} bytes]",
                   std::string_view(message, HH_MAX_LOG_MESSAGE), HH_MAX_LOG_MESSAGE, size);
    return;
  }
  s->logger->log(spd_level, std::string_view(message, size));
}

int32_t svc_log_enabled(const hh_host* h, int32_t level) {
  auto* s = HostServices::from(h, "log_enabled");
  if (!s) return 0;
  level = std::clamp<int32_t>(level, HH_LOG_TRACE, HH_LOG_ERROR);
  return s->logger->should_log(static_cast<spdlog::level::level_enum>(level)) ? 1 : 0;
}

int64_t svc_global_step(const hh_host* h) {
  auto* s = HostServices::from(h, "global_step");
  return s ? s->owner->live_step.load() : 0;
}

void svc_request_stop(const hh_host* h, const char* reason) {
  auto* s = HostServices::from(h, "request_stop");
  if (!s) return;
  if (s->ended) {
    s->misuse("request_stop", "after end()");
    return;
  }
  std::string text = bounded_text(reason, HH_MAX_STOP_REASON);
  s->owner->request_stop(HH_STOP_CAUSE_HOOK, "hook '" + s->instance_name +
                                                 "': " + (text.empty() ? "stop requested" : text));
}

int32_t svc_should_stop(const hh_host* h) {
  auto* s = HostServices::from(h, "should_stop");
  return s && s->owner->stop_requested.load() ? 1 : 0;
}

const char* svc_run_dir(const hh_host* h) {
  auto* s = HostServices::from(h, "run_dir");
  return s ? s->run_dir.c_str() : "";
}

hh_status svc_state_put(const hh_host* h, const void* data, size_t size) {
  auto* s = HostServices::from(h, "state_put");
  if (!s) return HH_ERROR;
  if (s->ended) {
    s->misuse("state_put", "after end()");
    return HH_ERROR;
  }
  if (!data && size > 0) {
    s->misuse("state_put", "with NULL data and size " + std::to_string(size));
    return HH_ERROR;
  }
  if (size > s->owner->options.max_state_bytes) {
    s->logger->error(
        "state_put refused: {} bytes is more than the job's state limit of {} bytes ([run] "
        "max_state_mb); the previous state is kept",
        size, s->owner->options.max_state_bytes);
    return HH_ERROR;
  }
  try {
    std::string bytes(static_cast<const char*>(data), data ? size : 0);
    std::lock_guard lock(s->state_mutex);
    s->state = SavedHookState{s->plugin_id, s->state_version, std::move(bytes)};
    s->has_state = true;
    return HH_OK;
  } catch (...) {
    return HH_ERROR;
  }
}

int32_t svc_state_info(const hh_host* h, size_t* size, uint32_t* version) {
  auto* s = HostServices::from(h, "state_info");
  if (!s) return 0;
  std::lock_guard lock(s->state_mutex);
  if (size) *size = s->has_state ? s->state.bytes.size() : 0;
  if (version) *version = s->has_state ? s->state.state_version : 0;
  return s->has_state ? 1 : 0;
}

hh_status svc_state_get(const hh_host* h, void* buffer, size_t capacity, size_t* size) {
  auto* s = HostServices::from(h, "state_get");
  if (!s) return HH_ERROR;
  std::lock_guard lock(s->state_mutex);
  const size_t needed = s->has_state ? s->state.bytes.size() : 0;
  if (size) *size = needed;
  if (!s->has_state) return HH_ERROR;
  if (needed > capacity || (needed > 0 && !buffer)) return HH_ERROR;
  if (needed) std::memcpy(buffer, s->state.bytes.data(), needed);
  return HH_OK;
}

const void* svc_get_service(const hh_host* h, const char* id) {
  auto* s = HostServices::from(h, "get_service");
  if (!s || !id) return nullptr;
  if (::strnlen(id, 256) > 255) return nullptr;
  auto& services = s->owner->options.services;
  if (auto it = services.find(id); it != services.end()) return it->second;
  return s->owner->builtin_service(id);
}

}  // namespace

void fill_host_table(HostServices& s) {
  hh_host& c = s.c;
  c.struct_size = HH_HOST_SIZE;
  c.abi_major = HH_ABI_MAJOR;
  c.abi_minor = HH_ABI_MINOR;
  c.host_data = &s;
  c.instance_name = &svc_instance_name;
  c.log = &svc_log;
  c.log_enabled = &svc_log_enabled;
  c.global_step = &svc_global_step;
  c.request_stop = &svc_request_stop;
  c.should_stop = &svc_should_stop;
  c.run_dir = &svc_run_dir;
  c.state_put = &svc_state_put;
  c.state_info = &svc_state_info;
  c.state_get = &svc_state_get;
  c.get_service = &svc_get_service;
}

}  // namespace hookhost
