#include "job/observer_keys.hpp"

#include <charconv>
#include <optional>

#include "support/display_text.hpp"

namespace hookhost {
namespace {

constexpr const char* kMode = "mode";
constexpr const char* kQueue = "queue";
constexpr const char* kPolicy = "policy";
constexpr uint32_t kMaxQueue = 65536;

}  // namespace

ObserverSettings split_observer_keys(const JobConfig& cfg, const HookConfig& hook,
                                     const PluginMetadata& plugin, CrashPolicy on_crash,
                                     std::multimap<std::string, std::string>& params) {
  ObserverSettings out;
  out.enabled = plugin.observes;  // the plugin's declaration, unless the section says otherwise
  bool mode_set = false;
  std::optional<std::string> queue_key, policy_key;
  for (auto it = params.begin(); it != params.end();) {
    const auto& [key, value] = *it;
    const bool host_key = key == kMode || key == kQueue || key == kPolicy;
    if (!host_key || plugin.find_param(key)) {
      ++it;
      continue;
    }
    const std::string at = cfg.where(hook, key);
    const std::string got = "; got '" + display_text(value) + "'";
    if (key == kMode) {
      if (value != "observe" && value != "step")
        throw ConfigError(at +
                              "expected observe (the hook runs behind the step, on a thread of its "
                              "own) or step (the default: it runs on the step)" +
                              got,
                          key);
      out.enabled = value == "observe";
      mode_set = true;
    } else if (key == kQueue) {
      uint32_t n = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (value.empty() || value.front() == '+' || ec != std::errc() ||
          end != value.data() + value.size() || n == 0 || n > kMaxQueue)
        throw ConfigError(at + "expected an integer from 1 to " + std::to_string(kMaxQueue) +
                              " (the steps an observer's queue holds)" + got,
                          key);
      out.queue = n;
      queue_key = at;
    } else {
      if (value != "block" && value != "skip")
        throw ConfigError(at +
                              "expected block (a step waits for room in the observer's queue) or "
                              "skip (a step that finds it full is not queued, and counted)" +
                              got,
                          key);
      out.when_full =
          value == "skip" ? ObserverSettings::WhenFull::skip : ObserverSettings::WhenFull::block;
      policy_key = at;
    }
    it = params.erase(it);
  }
  // queue or policy on a hook that is no observer.
  const auto refuse_queue_keys = [&](const std::string& what_to_do) {
    if (!queue_key && !policy_key) return;
    const char* key = queue_key ? kQueue : kPolicy;
    throw ConfigError((queue_key ? *queue_key : *policy_key) + "'" + key +
                          "' applies to observers only; " + what_to_do,
                      key);
  };
  if (!out.enabled) {
    refuse_queue_keys("add mode = observe to this section, or remove the key");
    return out;
  }
  const FailurePolicy on_error = hook.on_error.value_or(cfg.on_error);
  if (!mode_set && (on_error == FailurePolicy::fail || on_crash == CrashPolicy::fail)) {
    // Declared by its plugin, not asked for here: a policy that fails the job needs the step.
    out = ObserverSettings{};
    refuse_queue_keys(
        "this hook's plugin declares it an observer but its on_error or on_crash = fail keeps it "
        "on the step; remove the key, or set a policy that does not fail the job");
    return out;
  }
  if (on_error == FailurePolicy::fail)
    throw ConfigError(cfg.where(hook, kMode) +
                          "an observer cannot fail the job, and this hook's on_error is fail" +
                          (hook.on_error ? "" : " (from [run])") +
                          ": its calls run behind the step; set on_error = stop or disable in "
                          "this section, or remove mode = observe",
                      kMode);
  if (on_crash == CrashPolicy::fail)
    throw ConfigError(cfg.where(hook, kMode) +
                          "an observer cannot fail the job, and this hook's on_crash is fail: its "
                          "calls run behind the step; set on_crash = stop, disable or restart, or "
                          "remove mode = observe",
                      kMode);
  return out;
}

}  // namespace hookhost
