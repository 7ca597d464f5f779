// A hook's isolation settings as the job applies them: its own, else the [run] ones, else the
// built-in defaults, with [run] untrusted = process applied to plugins that import process-wide
// calls.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "hookhost/host/config.hpp"
#include "hookhost/host/discovery.hpp"

namespace spdlog {
class logger;
}

namespace hookhost {

// A hook's isolation settings: its own, else the [run] ones, else the built-in defaults.
struct EffectiveIsolation {
  Isolation isolation = Isolation::in_process;
  uint64_t call_timeout_ms = 0;
  uint64_t memory_limit_mb = 0;
  CrashPolicy on_crash = CrashPolicy::restart;
  uint32_t max_restarts = 3;
  std::string group;  // the isolation group (sandboxed hooks only), or empty
  // Sandboxed hooks only: off, sandboxed (confined as far as the kernel can) or required.
  Confinement confine = Confinement::off;
  // What the config adds to (or, for the two flags, takes from) the plugin's declared needs.
  std::vector<std::filesystem::path> allow_read;
  std::vector<std::filesystem::path> allow_write;
  std::optional<bool> allow_network;
  std::optional<bool> allow_processes;
  bool grant_declared = false;  // grant = declared
  uint64_t limit_cpu_secs = 0, limit_file_mb = 0, limit_open_files = 0, limit_processes = 0;
};

// Throws ConfigError for an isolation_group or confine = required on an in-process hook; logs why
// a hook was sandboxed by [run] untrusted or confine = all-untrusted, and a sandboxed hook without
// a call limit.
EffectiveIsolation effective_isolation(const JobConfig& cfg, const HookConfig& hook,
                                       const DiscoveredPlugin& plugin, spdlog::logger& log);

}  // namespace hookhost
