#include "job/effective_isolation.hpp"

#include <spdlog/spdlog.h>

#include "hookhost/host/job.hpp"
#include "support/display_text.hpp"
#include "support/text.hpp"

namespace hookhost {
namespace {

// Whether `file` is one of the plugins shipped with hookhost (in builtin_plugin_dir()).
bool is_builtin_plugin(const std::filesystem::path& file) {
  std::error_code ec;
  const auto folder = std::filesystem::weakly_canonical(file, ec).parent_path();
  const auto builtin = std::filesystem::weakly_canonical(builtin_plugin_dir(), ec);
  return !ec && folder == builtin;
}

}  // namespace

EffectiveIsolation effective_isolation(const JobConfig& cfg, const HookConfig& hook,
                                       const DiscoveredPlugin& plugin, spdlog::logger& log) {
  const IsolationConfig& own = hook.isolation;
  const IsolationConfig& run = cfg.isolation;
  EffectiveIsolation e;
  e.isolation = own.isolation.value_or(run.isolation.value_or(e.isolation));
  // [run] untrusted only fills in an isolation set nowhere: an explicit one is the operator's call.
  // Imports that could not be read count as suspect: "unknown" is not "none".
  const auto& calls = plugin.process_wide_calls;
  if (!own.isolation && !run.isolation && cfg.untrusted == Isolation::process &&
      (!calls || !calls->empty())) {
    e.isolation = Isolation::process;
    const std::string what =
        calls ? "imports " + join(*calls, ", ") : "has imports that could not be read";
    log.info("{} {}: running it with isolation = process because [run] untrusted = process",
             describe_hook(hook.name, display_text(plugin.metadata.id)), what);
  }
  const Confinement run_confine = run.confine.value_or(Confinement::sandboxed);
  if (!own.isolation && run_confine == Confinement::all_untrusted &&
      e.isolation == Isolation::in_process && !is_builtin_plugin(plugin.file)) {
    e.isolation = Isolation::process;
    log.info(
        "{}: running it with isolation = process, confined, because [run] confine = "
        "all-untrusted and its plugin is not one of hookhost's own ({})",
        describe_hook(hook.name, display_text(plugin.metadata.id)),
        display_text(plugin.file.string()));
  }
  // A sandboxed hook that hangs is contained by its limit only: it has one unless set to 0.
  const uint64_t default_timeout_ms =
      e.isolation == Isolation::process ? kSandboxedCallTimeoutMs : 0;
  e.call_timeout_ms =
      own.call_timeout_ms.value_or(run.call_timeout_ms.value_or(default_timeout_ms));
  if (e.isolation == Isolation::process && e.call_timeout_ms == 0)
    log.warn(
        "{} runs with isolation = process and call_timeout_ms = 0: a call that hangs there hangs "
        "the whole job; remove the key for the default limit ({} ms) or set one",
        describe_hook(hook.name, display_text(plugin.metadata.id)), kSandboxedCallTimeoutMs);
  e.memory_limit_mb = own.memory_limit_mb.value_or(run.memory_limit_mb.value_or(0));
  e.on_crash = own.on_crash.value_or(run.on_crash.value_or(e.on_crash));
  e.max_restarts = own.max_restarts.value_or(run.max_restarts.value_or(e.max_restarts));
  e.group = own.isolation_group.value_or(run.isolation_group.value_or(""));
  if (e.isolation == Isolation::in_process) {
    // A group in [run] applies to the sandboxed hooks only; one named on the hook itself is a
    // mistake for an in-process hook.
    if (own.isolation_group && !own.isolation_group->empty())
      throw ConfigError(cfg.where(hook, "isolation_group") + "hook '" + hook.name +
                            "' runs in process, so it has no runner to share: set isolation = "
                            "process for it, or remove isolation_group",
                        "isolation_group");
    e.group.clear();
    if (own.confine == Confinement::required)
      throw ConfigError(cfg.where(hook, "confine") + "hook '" + hook.name +
                            "' runs in process, where nothing can confine it: set isolation = "
                            "process for it, or remove confine = required",
                        "confine");
    return e;
  }
  e.confine = own.confine.value_or(
      run_confine == Confinement::all_untrusted ? Confinement::sandboxed : run_confine);
  e.allow_read =
      own.allow_read.value_or(run.allow_read.value_or(std::vector<std::filesystem::path>{}));
  e.allow_write =
      own.allow_write.value_or(run.allow_write.value_or(std::vector<std::filesystem::path>{}));
  e.allow_network = own.allow_network ? own.allow_network : run.allow_network;
  e.allow_processes = own.allow_processes ? own.allow_processes : run.allow_processes;
  e.grant_declared = own.grant_declared.value_or(run.grant_declared.value_or(false));
  e.limit_cpu_secs = own.limit_cpu_secs.value_or(run.limit_cpu_secs.value_or(0));
  e.limit_file_mb = own.limit_file_mb.value_or(run.limit_file_mb.value_or(0));
  e.limit_open_files = own.limit_open_files.value_or(run.limit_open_files.value_or(0));
  e.limit_processes = own.limit_processes.value_or(run.limit_processes.value_or(0));
  return e;
}

}  // namespace hookhost
