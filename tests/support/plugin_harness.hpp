// Drives real plugin files through the real runtime around a scripted workload: the harness every
// built-in plugin's tests use. Plugins are copied into a temporary folder, discovered, loaded.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hookhost/host/discovery.hpp>
#include <hookhost/host/loader.hpp>
#include <hookhost/host/runtime.hpp>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "storage/checkpoint.hpp"
#include "test_support.hpp"
#include "testing/scripted_workload.hpp"

namespace hookhost::testing {

class PluginHarness {
 public:
  // `builtins` are plugins/<name> targets, `fixtures` tests/fixtures/<name> targets.
  explicit PluginHarness(const std::vector<std::string>& builtins,
                         const std::vector<std::string>& fixtures = {}) {
    fs::create_directories(plugin_dir());
    fs::create_directories(run_dir());
    for (const auto& name : builtins) copy_plugin(builtin_plugin(name), plugin_dir());
    for (const auto& name : fixtures) copy_plugin(fixture_plugin(name), plugin_dir());
    found_ = discover_plugins({plugin_dir()});
    for (const auto& r : found_.rejected)
      ADD_FAILURE() << "rejected " << r.file << ": " << r.reason;
  }

  // One record per run() call of the workload, failed attempts included.
  std::vector<SessionRun> runs;
  // Steps 1..10 run, then the data ends (the script's defaults).
  ScriptedWorkload workload{detail::Script{}, &runs};
  // Adjust before the first add(). Every requested checkpoint is written (checkpoint_wait), so
  // a test can list them; a test of coalescing turns it off.
  RuntimeOptions options = [] {
    RuntimeOptions o;
    o.checkpoint_wait = true;
    return o;
  }();

  fs::path plugin_dir() const { return dir_ / "plugins"; }
  fs::path run_dir() const { return dir_ / "run"; }
  const fs::path& root() const { return dir_.path(); }

  std::shared_ptr<const LoadedPlugin> plugin(const std::string& id) {
    const DiscoveredPlugin* p = found_.find(id);
    if (!p) throw std::runtime_error("plugin '" + id + "' was not discovered");
    return load_plugin(*p);
  }

  Runtime& runtime() {
    if (!runtime_) {
      auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_);
      sink->set_pattern("[%n] [%l] %v");
      if (!options.logger) options.logger = std::make_shared<spdlog::logger>("hookhost", sink);
      options.logger->set_level(spdlog::level::debug);
      if (options.run_dir == ".") options.run_dir = run_dir();
      options.recovery_backoff = std::chrono::milliseconds(1);
      runtime_ = std::make_unique<Runtime>(workload, options);
    }
    return *runtime_;
  }

  // Adds an instance; throws ConfigError for a bad configuration (like the program would).
  void add(const std::string& instance, const std::string& plugin_id,
           const std::multimap<std::string, std::string>& params = {}, int order = 0,
           FailurePolicy policy = FailurePolicy::disable) {
    auto p = plugin(plugin_id);
    runtime().add_hook(p, HookSettings{instance, order, policy},
                       resolve_params(p->metadata(), instance, params));
  }

  // The ConfigError text for a configuration, or "" when it is accepted.
  std::string config_error(const std::string& instance, const std::string& plugin_id,
                           const std::multimap<std::string, std::string>& params) {
    try {
      add(instance, plugin_id, params);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  }

  JobResult run() { return runtime().run_to_end(); }

  // A job that dies mid-run: a forked child starts the runtime, runs `steps` steps, waits until
  // the checkpoint of `checkpoint_step` or a later one is on disk, then is killed by SIGKILL (no
  // end(), no flush, no destructor). Returns the child's wait status; -1 when fork or waitpid
  // failed.
  int run_and_die_after_checkpoint(int steps, int64_t checkpoint_step) {
    const pid_t child = ::fork();
    if (child < 0) return -1;
    if (child == 0) {
      try {
        if (!runtime().start()) ::_exit(2);
        for (int i = 0; i < steps; ++i) runtime().run();
        while (!runtime().last_checkpoint() ||
               runtime().last_checkpoint()->global_step < checkpoint_step)
          std::this_thread::yield();
      } catch (...) {
        ::_exit(3);
      }
      ::raise(SIGKILL);
      ::_exit(4);
    }
    int status = 0;
    return ::waitpid(child, &status, 0) == child ? status : -1;
  }

  // Ends the runtime (end and destroy delivered) so files are closed.
  void finish() { runtime_.reset(); }

  std::string log() const { return log_.str(); }

 private:
  TempDir dir_;
  DiscoveryResult found_;
  std::ostringstream log_;
  std::unique_ptr<Runtime> runtime_;
};

// A loss of 10/step (10, 5, 3.33, ...), for tests whose numbers are written for it:
// `h.workload.script().values["loss"] = loss_of_ten_over_step;` (the default is 1/step).
inline Value loss_of_ten_over_step(int64_t step) {
  return Value(10.0f / static_cast<float>(step));
}

// The global steps of the checkpoint files in `dir`, oldest first.
inline std::vector<int64_t> saved_steps(const fs::path& dir) {
  std::vector<int64_t> steps;
  for (const auto& file : list_checkpoints(dir)) {
    const std::string name = file.filename().string();
    steps.insert(steps.begin(), std::stoll(name.substr(name.rfind('-') + 1)));
  }
  return steps;
}

// The messages `instance` logged at info level, in order, from a log in the harness's pattern.
inline std::vector<std::string> info_lines(const std::string& log, const std::string& instance) {
  const std::string prefix = "[" + instance + "] [info] ";
  std::vector<std::string> out;
  for (const std::string& line : lines_of(log))
    if (line.rfind(prefix, 0) == 0) out.push_back(line.substr(prefix.size()));
  return out;
}

}  // namespace hookhost::testing
