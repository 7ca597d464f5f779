#include "check/scenario_run.hpp"

#include "check/failing_hook.hpp"
#include "hookhost/host/params.hpp"
#include "sandbox/process_dispatch.hpp"
#include "testing/call_recorder.hpp"
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

}  // namespace

RunOutcome run_scenario(CheckTarget& target, const RunSpec& spec) {
  RunOutcome out;
  target.sink->take();  // nothing of an earlier scenario
  target.logger->info("hookhost check: scenario '{}'", spec.scenario);
  std::error_code ec;
  std::filesystem::create_directories(spec.run_dir, ec);

  testing::ScriptedWorkload session(workload_script(target.names, spec.workload));
  testing::CallLog calls;  // outlives the runtime: destroy() is recorded too
  {
    RuntimeOptions options;
    options.run_dir = spec.run_dir;
    options.logger = target.logger;
    options.recovery_backoff = std::chrono::milliseconds(1);
    Runtime runtime(session, options);
    if (spec.restore) runtime.restore_hook_states(*spec.restore);

    // The hook keeps every call after an error (on_error = continue), so each fault is seen, and a
    // lost runner is not restarted (on_crash = disable): one crash is one finding.
    HookSettings settings{target.instance, 0, FailurePolicy::keep_going};
    settings.on_crash = CrashPolicy::disable;
    SandboxOptions sandbox;
    sandbox.call_timeout = target.call_timeout;
    const LoadedPlugin& plugin = *target.plugin;
    try {
      const ResolvedParams params = resolve_params(plugin.metadata(), target.instance, spec.params);
      runtime.add_hook(plugin.metadata().id, 1, settings, [&](const hh_host& host) {
        return testing::recording_dispatch(
            make_process_dispatch(plugin, target.instance, params, host, sandbox), calls,
            spec.workload.first_step);
      });
      out.created = true;
    } catch (const ConfigError& e) {
      out.create_error = e.what();
    }

    if (out.created) {
      if (spec.neighbour_fails_at)
        runtime.add_hook(std::make_unique<FailingHook>(*spec.neighbour_fails_at),
                         HookSettings{neighbour_name(target.instance), 1, FailurePolicy::fail});
      try {
        int64_t steps = 0;
        auto sample = spec.memory_samples_after.begin();
        if (runtime.start()) {
          while (!runtime.should_stop()) {
            runtime.run();
            ++steps;
            if (spec.stop_after_steps && steps == *spec.stop_after_steps)
              runtime.request_stop(HH_STOP_CAUSE_HOST,
                                   "hookhost check: a stop requested by the embedding program");
            if (sample != spec.memory_samples_after.end() && steps == *sample) {
              ++sample;
              if (calls.runner_lost) continue;
              if (const auto bytes = resident_bytes(calls.runner_pid))
                out.memory.push_back({steps, *bytes});
            }
          }
        }
      } catch (const std::exception& e) {
        out.internal_error = e.what();
        runtime.fail_job(std::string("hookhost check: internal error: ") + e.what());
      }
      out.result = runtime.close();
      out.states = runtime.saved_hook_states();
    }
  }  // the runtime destroys the hook here: destroy() is observed too
  out.calls = judged_calls(calls, session);
  out.log = target.sink->take();
  return out;
}

}  // namespace hookhost::check
