// Finding an instance's handle behind a plugin-supplied hh_host, and the misbehaviour line.
#include "context/host_services.hpp"

#include <spdlog/spdlog.h>

namespace hookhost {

constinit thread_local const HostServices* t_current_call = nullptr;
constinit thread_local int64_t t_observed_step = kNoObservedStep;
constinit thread_local int64_t t_observed_wall_ns = 0;
constinit thread_local const RunningCall* t_observer_call = nullptr;

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

}  // namespace hookhost
