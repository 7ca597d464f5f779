#include "check/scenario_run.hpp"

#include "check/failing_hook.hpp"
#include "hookhost/host/params.hpp"
#include "job/hook_policy.hpp"
#include "testing/harness_run.hpp"
#include "testing/scripted_workload.hpp"

namespace hookhost::check {

namespace {

constexpr const char* kNeighbour = "failing_neighbour";

std::string neighbour_name(const std::string& instance) {
  return instance == kNeighbour ? std::string(kNeighbour) + "_2" : kNeighbour;
}

constexpr const char* kGlobalStep = "global_step";

// The plan as a script of the harness's workload.
testing::detail::Script workload_script(const std::set<std::string>& names,
                                        const WorkloadPlan& plan) {
  testing::detail::Script script;
  script.builtin_values = false;
  script.start_step = plan.first_step;
  script.end_of_data_step = plan.first_step + plan.steps + 1;
  script.end_of_data_message = "the synthetic workload's data ended";
  for (const std::string& name : names) {
    if (name == kGlobalStep) continue;
    script.feedable.insert(name);
    if (name == "loss")
      script.values[name] = [](int64_t step) {
        return testing::Value(1.0f / (1.0f + 0.01f * static_cast<float>(step)));
      };
    else
      script.values[name] = [](int64_t) { return testing::Value(0.5f); };
  }
  script.values[kGlobalStep] = [](int64_t step) { return testing::Value(step); };
  if (plan.recoverable_error_at)
    script.faults[*plan.recoverable_error_at + 1].push_back(
        {StepStatus::aborted,
         "hookhost check: a recoverable error from the workload (the session was lost)", false});
  return script;
}

// The hook under check in its own runner. It keeps every call after an error (on_error =
// continue), so each fault is seen, and a lost runner is not restarted (on_crash = disable): one
// crash is one finding. Throws ConfigError for parameters the plugin does not take.
testing::HarnessHook hook_under_check(const CheckTarget& target, const RunSpec& spec) {
  testing::HarnessHook hook;
  hook.plugin = target.plugin;
  hook.isolation = Isolation::process;
  hook.sandbox.call_timeout = target.call_timeout;
  hook.settings = HookSettings{target.instance, 0, FailurePolicy::keep_going};
  hook.settings.on_crash = CrashPolicy::disable;
  hook.params = resolve_params(target.plugin->metadata(), target.instance, spec.params);
  // Under the policy its plugin declares, granted (grant = declared: the check tests the
  // declaration; in a job the operator grants it): the scenario's run folder is its own,
  // relative paths are taken from the current folder (as --set's are).
  JobConfig config;
  HookConfig section;
  section.name = target.instance;
  EffectiveIsolation granted;
  granted.grant_declared = true;
  const PlannedHook planned{&section, target.plugin, hook.params, granted, {}, {}, {}};
  hook.sandbox.policy = hook_policy(config, planned, spec.run_dir);
  return hook;
}

}  // namespace

RunOutcome run_scenario(CheckTarget& target, const RunSpec& spec) {
  RunOutcome out;
  target.sink->take();  // nothing of an earlier scenario
  target.logger->info("hookhost check: scenario '{}'", spec.scenario);
  std::error_code ec;
  std::filesystem::create_directories(spec.run_dir, ec);

  testing::HarnessSpec run;
  run.script = workload_script(target.names, spec.workload);
  run.options.run_dir = spec.run_dir;
  run.options.logger = target.logger;
  run.restored_states = spec.restore;
  run.internal_error_label = "hookhost check: internal error";
  run.log_internal_error = false;
  try {
    run.hook = hook_under_check(target, spec);
  } catch (const ConfigError& e) {
    out.create_error = e.what();
    out.log = target.sink->take();
    return out;
  }
  if (spec.neighbour_fails_at)
    run.extra_hooks.push_back(
        {HookSettings{neighbour_name(target.instance), 1, FailurePolicy::fail},
         [fail_at = *spec.neighbour_fails_at] { return std::make_unique<FailingHook>(fail_at); }});
  auto sample = spec.memory_samples_after.begin();
  run.after_step = [&](int64_t steps, Runtime& runtime, const testing::CallLog& calls) {
    if (spec.stop_after_steps && steps == *spec.stop_after_steps)
      runtime.request_stop(HH_STOP_CAUSE_HOST,
                           "hookhost check: a stop requested by the embedding program");
    if (sample == spec.memory_samples_after.end() || steps != *sample) return;
    ++sample;
    if (calls.runner_lost) return;
    if (const auto bytes = resident_bytes(calls.runner_pid)) out.memory.push_back({steps, *bytes});
  };

  testing::HarnessOutcome harness = testing::run_harness(run);
  out.created = harness.created;
  if (harness.create_error) out.create_error = harness.create_error->what();
  out.internal_error = std::move(harness.internal_error);
  out.result = std::move(harness.result);
  out.states = std::move(harness.states);
  out.calls = judged_calls(harness.calls, run.script);
  out.log = target.sink->take();
  return out;
}

}  // namespace hookhost::check
