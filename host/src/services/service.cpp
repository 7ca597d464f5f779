// What every service entry shares: finding the caller behind a handle, and the messages for a
// refused or failed call.
#include "service.hpp"

#include <spdlog/spdlog.h>

#include "context/host_services.hpp"
#include "context/service_context.hpp"
#include "services.hpp"

namespace hookhost {

namespace service_detail {

HostServices* caller_of(const hh_host* host, const char* function) {
  return HostServices::from(host, function);
}

bool has_ended(const HostServices& caller) {
  return caller.ended.load();
}

bool is_orphaned(const HostServices& caller) {
  return caller.orphaned.load(std::memory_order_acquire);
}

void log_misuse(const HostServices& caller, const char* function, const std::string& what) {
  caller.misuse(function, what);
}

void log_refusal(const HostServices& caller, const std::string& what) {
  caller.logger->error("{}", what);
}

void log_failure(const HostServices& caller, const char* function, const std::string& what) {
  caller.logger->error("{} failed: {} ({}, plugin '{}')", function, what, caller.instance_name,
                       caller.plugin_id);
}

void report(hh_error* error, const std::string& message) {
  if (error && error->struct_size >= HH_ERROR_SIZE_1_0)
    copy_cut(message, error->message, HH_ERROR_MESSAGE_SIZE);
}

}  // namespace service_detail

std::vector<std::string> ServiceRegistry::embedder_ids() const {
  std::vector<std::string> ids;
  for (const auto& [id, table] : embedder_) ids.push_back(id);
  return ids;
}

std::vector<std::string> embedder_service_ids(const hh_host& host) {
  const auto* caller = static_cast<const HostServices*>(host.host_data);
  if (!caller || caller->magic != HostServices::kMagic || &caller->c != &host ||
      caller->orphaned.load(std::memory_order_acquire))
    return {};
  return caller->context->services().embedder_ids();
}

const void* ServiceRegistry::find(std::string_view id) const {
  if (auto it = embedder_.find(id); it != embedder_.end()) return it->second;
  for (const HostService* s :
       {static_cast<const HostService*>(&steps), static_cast<const HostService*>(&checkpoints),
        static_cast<const HostService*>(&summaries), static_cast<const HostService*>(&job),
        static_cast<const HostService*>(&dist)})
    if (s->id() == id) return s->table();
  return nullptr;
}

}  // namespace hookhost
