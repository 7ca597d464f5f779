#include "job/effective_isolation.hpp"

#include <spdlog/spdlog.h>

#include "support/display_text.hpp"
#include "support/text.hpp"

namespace hookhost {

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
  }
  return e;
}

}  // namespace hookhost
