// The keys the host takes in every [hook.NAME] section of a job's configuration; any other key is
// a plugin parameter. Discovery (plugins/) refuses a plugin that declares a parameter with one of
// these names, so the list sits with the plugins, below the configuration (job/), whose key table
// a static_assert in job/config_keys.cpp keeps equal to it. config.hpp includes this header.
#pragma once

#include <array>
#include <string_view>

namespace hookhost {

inline constexpr std::array<std::string_view, 24> kHostHookKeys = {
    "plugin",          "enabled",          "order",           "on_error",     "isolation",
    "call_timeout_ms", "memory_limit_mb",  "on_crash",        "max_restarts", "isolation_group",
    "ranks",           "sha256",           "log_level",       "confine",      "allow_read",
    "allow_write",     "allow_network",    "allow_processes", "grant",        "limit_cpu_secs",
    "limit_file_mb",   "limit_open_files", "limit_processes", "resume_state"};
inline bool is_host_hook_key(std::string_view key) {
  for (std::string_view host_key : kHostHookKeys)
    if (key == host_key) return true;
  return false;
}

}  // namespace hookhost
