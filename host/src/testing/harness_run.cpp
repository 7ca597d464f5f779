#include "testing/harness_run.hpp"

#include <spdlog/logger.h>

#include <stdexcept>
#include <utility>

#include "testing/scripted_workload.hpp"

namespace hookhost::testing {

namespace {

// Adds the recorded hook to `runtime`; throws ConfigError when it cannot be created. `entry` and
// `calls` outlive the runtime: the hook calls through them until it is destroyed.
void add_recorded_hook(Runtime& runtime, const HarnessHook& hook, int64_t start_step,
                       std::shared_ptr<hh_plugin_entry>& entry, CallLog& calls) {
  const LoadedPlugin& plugin = *hook.plugin;
  if (hook.isolation == Isolation::process) {
    HookSettings settings = hook.settings;
    if (settings.plugin_build.empty()) settings.plugin_build = plugin.sha256();
    runtime.add_hook(plugin.metadata().id, 1, settings, [&](const hh_host& host) {
      return recording_dispatch(make_process_dispatch(plugin, hook.settings.instance_name,
                                                      hook.params, host, hook.sandbox),
                                calls, start_step);
    });
    return;
  }
  // The plugin's entry, copied with a create() that records the hook it makes.
  entry = recording_entry(plugin.entry());
  auto recording = std::make_shared<const LoadedPlugin>(plugin.file(), plugin.metadata(),
                                                        entry.get(), plugin.sha256());
  const RecordingScope scope(plugin.entry(), calls, start_step);
  runtime.add_hook(std::move(recording), hook.settings, hook.params);
}

// The program's loop (Job::run): nothing may skip the ending.
void run_loop(Runtime& runtime, const HarnessSpec& spec, const CallLog& calls,
              HarnessOutcome& out) {
  try {
    int64_t steps_run = 0;
    if (runtime.start()) {
      while (!runtime.should_stop()) {
        runtime.run();
        if (spec.after_step) spec.after_step(++steps_run, runtime, calls);
      }
    }
  } catch (const std::exception& e) {
    out.internal_error = e.what();
    const std::string what = spec.internal_error_label + ": " + e.what();
    if (spec.log_internal_error && spec.options.logger) spec.options.logger->error("{}", what);
    runtime.fail_job(what);
  }
}

}  // namespace

HarnessOutcome run_harness(const HarnessSpec& spec) {
  HarnessOutcome out;
  ScriptedWorkload session(spec.script, spec.session_runs);
  std::shared_ptr<hh_plugin_entry> entry;  // outlives the runtime, as `calls`
  CallLog calls;
  {
    RuntimeOptions options = spec.options;
    options.recovery_backoff = std::chrono::milliseconds(1);
    Runtime runtime(session, std::move(options));
    session.set_runtime(&runtime);
    if (spec.restored_states) runtime.restore_hook_states(*spec.restored_states);
    try {
      add_recorded_hook(runtime, spec.hook, spec.script.start_step, entry, calls);
      out.created = true;
    } catch (const ConfigError& e) {
      out.create_error = e;
    }
    if (out.created && spec.run_steps) {
      for (const ExtraHook& extra : spec.extra_hooks)
        runtime.add_hook(extra.make(), extra.settings);
      run_loop(runtime, spec, calls, out);
      out.result = runtime.close();
      out.states = runtime.saved_hook_states();
      out.reports = runtime.reports();
    }
  }  // the runtime destroys the hooks here: destroy() is recorded too, and what it logs
  session.set_runtime(nullptr);
  out.calls = std::move(calls);
  return out;
}

}  // namespace hookhost::testing
