#include "job/widening.hpp"

#include <algorithm>
#include <filesystem>

#include "job/hook_policy.hpp"

namespace hookhost {
namespace fs = std::filesystem;

namespace {

// How strictly a sandboxed hook is confined.
int strictness(Confinement c) {
  switch (c) {
    case Confinement::off: return 0;
    case Confinement::sandboxed:
    case Confinement::all_untrusted: return 1;
    case Confinement::required: return 2;
  }
  return 0;
}

bool adds_paths(const std::vector<fs::path>& before, const std::vector<fs::path>& after) {
  return std::any_of(after.begin(), after.end(),
                     [&](const fs::path& p) { return !beneath_any(p, before); });
}

std::vector<fs::path> as_paths(const std::vector<std::string>& texts) {
  return {texts.begin(), texts.end()};
}

// A limit of 0 is none.
bool raised(uint64_t before, uint64_t after) {
  return before != 0 && (after == 0 || after > before);
}

}  // namespace

std::vector<std::string> widened_keys(const PlannedHook& before, const PlannedHook& after) {
  const EffectiveIsolation& b = before.isolation;
  const EffectiveIsolation& a = after.isolation;
  const PluginNeeds& needs = after.plugin->metadata().needs;
  std::vector<std::string> keys;
  if (b.isolation == Isolation::process && a.isolation == Isolation::in_process)
    keys.push_back("isolation");
  // The rest bounds a sandboxed hook only: a hook that was in the host's process had no bounds.
  if (b.isolation != Isolation::process || a.isolation != Isolation::process) return keys;
  if (strictness(a.confine) < strictness(b.confine)) keys.push_back("confine");
  if (!a.group.empty() && a.group != b.group) keys.push_back("isolation_group");
  if (adds_paths(b.allow_read, a.allow_read)) keys.push_back("allow_read");
  if (adds_paths(b.allow_write, a.allow_write)) keys.push_back("allow_write");
  if (network_granted(a, needs) && !network_granted(b, needs)) keys.push_back("allow_network");
  if (processes_granted(a, needs) && !processes_granted(b, needs))
    keys.push_back("allow_processes");
  if (a.grant_declared && !b.grant_declared) keys.push_back("grant");
  const std::pair<const char*, std::pair<uint64_t, uint64_t>> limits[] = {
      {"memory_limit_mb", {b.memory_limit_mb, a.memory_limit_mb}},
      {"call_timeout_ms", {b.call_timeout_ms, a.call_timeout_ms}},
      {"limit_cpu_secs", {b.limit_cpu_secs, a.limit_cpu_secs}},
      {"limit_file_mb", {b.limit_file_mb, a.limit_file_mb}},
      {"limit_open_files", {b.limit_open_files, a.limit_open_files}},
      {"limit_processes", {b.limit_processes, a.limit_processes}}};
  for (const auto& [key, values] : limits)
    if (raised(values.first, values.second)) keys.push_back(key);
  // Parameters that name what the plugin reads or writes widen its policy with their paths.
  for (const auto* names : {&needs.read_params, &needs.write_params})
    for (const std::string& name : *names)
      if (adds_paths(as_paths(param_paths(before.params, name)),
                     as_paths(param_paths(after.params, name))))
        keys.push_back(name);
  return keys;
}

}  // namespace hookhost
