// hookhost::testing::HookTest: one plugin file, configured as `hookhost run --set` reads it, run
// through the harness (harness_run.hpp) with its log captured (log_capture.hpp), and what happened
// told as a RunResult. Everything else (create, validation, policies, services, checkpoints) is
// the runtime's own path.
#include "hookhost/testing.hpp"

#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <algorithm>
#include <stdexcept>
#include <system_error>

#include "hookhost/host/job.hpp"
#include "hookhost/host/loader.hpp"
#include "job/observer_keys.hpp"
#include "job/step_filter_keys.hpp"
#include "plugins/elf_note.hpp"
#include "plugins/trust.hpp"
#include "sandbox/process_dispatch.hpp"
#include "storage/checkpoint.hpp"
#include "support/display_text.hpp"
#include "testing/call_recorder.hpp"
#include "testing/harness_run.hpp"
#include "testing/log_capture.hpp"
#include "testing/run_result.hpp"

namespace hookhost::testing {

namespace fs = std::filesystem;

namespace {

constexpr const char* kCheckpointFolder = "checkpoints";
constexpr const char* kCheckpointBasename = "model.ckpt";  // the program's

// The hook keys of a [hook.NAME] section this harness cannot apply to its one hook (`ranks`: a
// test runs one process, so there is no rank to choose).
const std::set<std::string>& unapplied_hook_keys() {
  static const std::set<std::string> keys{"plugin",          "enabled", "order",
                                          "isolation_group", "sha256",  "ranks"};
  return keys;
}

bool valid_log_level(const std::string& level) {
  static const std::set<std::string> levels{"trace", "debug",    "info", "warn",
                                            "error", "critical", "off"};
  return levels.count(level) != 0;
}

// The level names of the configuration's log_level (spdlog says "warning").
std::string level_name(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace: return "trace";
    case spdlog::level::debug: return "debug";
    case spdlog::level::info: return "info";
    case spdlog::level::warn: return "warn";
    case spdlog::level::err: return "error";
    case spdlog::level::critical: return "critical";
    default: return "off";
  }
}

// A folder of its own under the system's temporary folder.
fs::path make_run_dir() {
  std::string pattern = (fs::temp_directory_path() / "hookhost-hooktest-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw std::system_error(errno, std::generic_category(),
                            "hookhost::testing: cannot create a run directory " + pattern);
  return pattern;
}

// The program's runtime options: a recovery continues from the newest checkpoint, hook states
// included.
RuntimeOptions runtime_options(const fs::path& run_dir, std::shared_ptr<spdlog::logger> logger) {
  RuntimeOptions options;
  options.run_dir = run_dir;
  options.config_dir = fs::current_path();  // no configuration file: the working directory
  options.logger = logger;
  options.checkpoint_dir = kCheckpointFolder;
  options.checkpoint_basename = kCheckpointBasename;
  // Every checkpoint the hook asks for is written, so a test sees each one (the program's default
  // lets a newer request replace one waiting behind a write).
  options.checkpoint_wait = true;
  const fs::path checkpoint_dir = run_dir / kCheckpointFolder;
  options.on_recover = [checkpoint_dir, logger](Runtime& rt) {
    const auto restore_into_session = [&rt](const fs::path& file, const Checkpoint& c) {
      rt.session().restore_state(c.workload_state);
      if (rt.session().global_step() != c.global_step)
        throw std::runtime_error(file.string() + ": its workload state is not at its step");
    };
    if (auto restored =
            restore_latest_checkpoint(checkpoint_dir, kCheckpointBasename, restore_into_session);
        restored && !restored->file.empty()) {
      rt.restore_hook_states(restored->checkpoint.hook_states);
      logger->info("recovery: restored {} at global step {}", restored->file.string(),
                   restored->checkpoint.global_step);
    }
  };
  return options;
}

}  // namespace

HookTest::HookTest(fs::path plugin_file, std::string instance_name)
    : plugin_file_(std::move(plugin_file)), instance_name_(std::move(instance_name)) {
  NoteReadResult note = read_plugin_note(plugin_file_);
  if (!note.metadata)
    throw LoadError(plugin_file_.string() + ": not a usable hookhost plugin: " + note.error);
  plugin_ = std::move(*note.metadata);
  if (instance_name_.empty()) {
    // An id may hold '.', an instance name may not.
    instance_name_ = plugin_.id;
    std::replace(instance_name_.begin(), instance_name_.end(), '.', '_');
  }
}

HookTest& HookTest::set(const std::string& key, const std::string& value) {
  if (unapplied_hook_keys().count(key))
    throw std::invalid_argument("HookTest::set(\"" + key + "\", ...): '" + key +
                                "' is a [hook] key a test of one hook does not apply");
  auto it = std::find_if(settings_.begin(), settings_.end(),
                         [&](const auto& setting) { return setting.first == key; });
  if (it != settings_.end())
    it->second = value;
  else
    settings_.emplace_back(key, value);
  return *this;
}

HookTest& HookTest::on_error(FailurePolicy policy) {
  return set("on_error", policy_name(policy));
}

bool use_installed_runner(const char* program) {
  set_installed_runner_program(program ? program : "");
  return true;
}

HookTest& HookTest::isolation(Isolation where) {
  return set("isolation", isolation_name(where));
}

HookTest& HookTest::log_level(const std::string& level) {
  if (!valid_log_level(level))
    throw std::invalid_argument("HookTest::log_level(\"" + level +
                                "\"): expected trace, debug, info, warn, error, critical or off");
  log_level_ = level;
  return *this;
}

HookTest& HookTest::steps(int64_t count) {
  return end_of_data_at(count + 1);
}

HookTest& HookTest::end_of_data_at(int64_t step) {
  script_.end_of_data_step = step;
  return *this;
}

HookTest& HookTest::value(const std::string& name, Value value) {
  return this->value(name, [value](int64_t) { return value; });
}

HookTest& HookTest::value(const std::string& name, std::function<Value(int64_t step)> per_step) {
  script_.values.insert_or_assign(name, std::move(per_step));
  return *this;
}

HookTest& HookTest::value_at(const std::string& name, int64_t step, Value value) {
  script_.values_at.insert_or_assign({name, step}, std::move(value));
  return *this;
}

HookTest& HookTest::feedable(const std::string& name) {
  script_.feedable.insert(name);
  return *this;
}

HookTest& HookTest::recoverable_error_at(int64_t step) {
  script_.faults[step].push_back(
      {StepStatus::aborted, "scripted recoverable error at step " + std::to_string(step), false});
  return *this;
}

HookTest& HookTest::workload_error_at(int64_t step) {
  script_.faults[step].push_back(
      {StepStatus::error, "scripted workload error at step " + std::to_string(step), true});
  return *this;
}

HookTest& HookTest::stop_requested_at(int64_t step, std::string reason, hh_stop_cause cause) {
  script_.stops.insert_or_assign(step, std::make_pair(std::move(reason), cause));
  return *this;
}

HookTest& HookTest::start_at(int64_t global_step) {
  script_.start_step = global_step;
  return *this;
}

HookTest& HookTest::restore_state(SavedHookState state) {
  restored_state_ = std::move(state);
  restored_bytes_.reset();
  return *this;
}

HookTest& HookTest::restore_state(std::string bytes) {
  restored_bytes_ = std::move(bytes);
  restored_state_.reset();
  return *this;
}

HookTest& HookTest::resume_from(const RunResult& previous) {
  start_at(previous.global_step);
  restored_bytes_.reset();
  restored_state_ = previous.saved_state;
  return *this;
}

HookTest& HookTest::keep_run_dir(bool keep) {
  keep_run_dir_ = keep;
  return *this;
}

struct HookTest::Prepared {
  JobConfig config;  // for the program's "where" in messages
  HookConfig hook;
  ResolvedParams params;
  HookSettings settings;
  Isolation isolation = Isolation::in_process;
  std::chrono::milliseconds call_timeout{0};
  uint64_t memory_limit_mb = 0;

  HarnessHook hook_under_test(const fs::path& plugin_file, const PluginMetadata& plugin) const;
};

// The configuration as `hookhost run --set hook.NAME.KEY=VALUE ...` reads and checks it.
HookTest::Prepared HookTest::prepare() const {
  Prepared p;
  const std::string section = "hook." + instance_name_ + ".";
  std::vector<std::string> overrides{section + "plugin=" + plugin_.id};
  for (const auto& [key, value] : settings_) overrides.push_back(section + key + "=" + value);
  p.config = load_job_config(std::nullopt, overrides);
  p.hook = p.config.hooks.front();
  const IsolationConfig& iso = p.hook.isolation;
  // The host's step filter and observer keys, as the program takes them out of the section.
  SplitHookKeys keys = split_step_filter(p.config, p.hook, plugin_);
  p.settings.observer = split_observer_keys(
      p.config, p.hook, plugin_, iso.on_crash.value_or(CrashPolicy::restart), keys.plugin_params);
  try {
    check_param_texts(plugin_, keys.plugin_params);
    p.params = resolve_params(plugin_, p.hook.name, keys.plugin_params);
  } catch (const ConfigError& e) {
    throw ConfigError(p.config.where(p.hook, e.key()) + e.what(), e.key());
  }
  p.settings.step_filter = keys.filter;
  p.settings.step_filter.cadence_every_n_steps = declared_cadence(plugin_, p.params);
  p.isolation = iso.isolation.value_or(Isolation::in_process);
  p.call_timeout = std::chrono::milliseconds(iso.call_timeout_ms.value_or(0));
  p.memory_limit_mb = iso.memory_limit_mb.value_or(0);
  p.settings.instance_name = p.hook.name;
  p.settings.on_error = p.hook.on_error.value_or(p.config.on_error);
  p.settings.on_crash = iso.on_crash.value_or(CrashPolicy::restart);
  p.settings.max_restarts = iso.max_restarts.value_or(3);
  p.settings.log_level = p.hook.log_level.value_or("");
  p.settings.resume_state = p.hook.resume_state.value_or(ResumeState::same_build);
  // The runtime's waits only slow a test down; what happens is the same.
  p.settings.restart_backoff = std::chrono::milliseconds(1);
  // In process the watchdog names a call over its limit; a runner enforces its own.
  if (p.isolation == Isolation::in_process) p.settings.call_timeout = p.call_timeout;
  return p;
}

// The hook under test as the program makes it: loaded into this process, or under isolation =
// process its file and note only (its code runs in its runner only).
HarnessHook HookTest::Prepared::hook_under_test(const fs::path& plugin_file,
                                                const PluginMetadata& plugin) const {
  HarnessHook hook;
  hook.isolation = isolation;
  hook.settings = settings;
  hook.params = params;
  if (isolation == Isolation::in_process) {
    try {
      DiscoveredPlugin found;
      found.file = plugin_file;
      found.metadata = plugin;
      hook.plugin = load_plugin(found);
    } catch (const LoadError& e) {
      throw ConfigError(config.where(this->hook, "plugin") + e.what(), "plugin");
    }
    return hook;
  }
  try {
    hook.plugin = std::make_shared<const LoadedPlugin>(plugin_file, plugin, nullptr,
                                                       sha256_of_file(plugin_file));
  } catch (const std::exception& e) {
    throw ConfigError(config.where(this->hook, "plugin") + display_text(e.what(), 1024));
  }
  hook.sandbox.call_timeout = call_timeout;
  hook.sandbox.memory_limit_mb = memory_limit_mb;
  return hook;
}

RunResult HookTest::execute(const Prepared& p, bool run_steps) {
  RunResult run;
  const bool keep = keep_run_dir_;
  run.run_dir = fs::canonical(make_run_dir());  // as the program's
  run.run_dir_owner_ =
      std::shared_ptr<const fs::path>(new fs::path(run.run_dir), [keep](const fs::path* dir) {
        std::error_code ec;
        if (!keep) fs::remove_all(*dir, ec);
        delete dir;
      });

  auto sink = std::make_shared<CaptureSink>();
  auto logger = make_capture_logger(sink, false);
  logger->set_level(spdlog::level::from_str(log_level_));

  HarnessSpec spec;
  spec.script = script_;
  spec.session_runs = &run.session_runs;
  spec.options = runtime_options(run.run_dir, logger);
  spec.hook = p.hook_under_test(plugin_file_, plugin_);
  if (restored_state_ || restored_bytes_) {
    const uint32_t state_version =
        p.isolation == Isolation::in_process ? spec.hook.plugin->entry().state_version : 1;
    SavedHookState state = restored_state_
                               ? *restored_state_
                               : SavedHookState{plugin_.id, state_version, *restored_bytes_};
    spec.restored_states =
        std::map<std::string, SavedHookState>{{p.settings.instance_name, std::move(state)}};
  }
  spec.run_steps = run_steps;

  HarnessOutcome outcome = run_harness(spec);
  if (outcome.create_error) {
    // As the program: a plugin's refusal points at the key its message names.
    const ConfigError& e = *outcome.create_error;
    const std::string key = e.key().empty() ? key_named_in(e.what(), p.hook.params) : e.key();
    throw ConfigError(p.config.where(p.hook, key) + display_text(e.what(), 1024), key);
  }
  if (!run_steps) return run;  // the runtime destroyed the instance, never begun

  const JobResult& result = outcome.result;
  run.outcome = result.outcome;
  run.stop_cause = result.stop_cause;
  run.reason = result.reason;
  run.global_step = result.global_step;
  run.steps_run = result.steps_run;
  if (auto it = outcome.states.find(p.settings.instance_name); it != outcome.states.end())
    run.saved_state = it->second;
  if (!outcome.reports.empty()) run.report = outcome.reports.front();
  for (RecordedCall& call : outcome.calls.calls) run.calls.push_back(std::move(call.call));

  run.disabled = run.report.disabled;
  for (const LogRecord& line : sink->take()) {
    LogLine entry_line{level_name(line.level), line.text};
    if (line.logger == p.settings.instance_name)
      run.log.push_back(entry_line);
    else
      run.host_log.push_back(entry_line);
    run.all_log_.push_back({line.logger, std::move(entry_line)});
  }
  read_failure_checkpoints_and_stop(run, p.settings.instance_name);
  return run;
}

RunResult HookTest::run() {
  return execute(prepare(), true);
}

std::string HookTest::configuration_error() {
  try {
    execute(prepare(), false);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return {};
}

}  // namespace hookhost::testing
