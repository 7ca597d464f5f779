// One scenario of a check: a run of the test harness (testing/harness_run.hpp) with the hook under
// check in its own hookhost-runner (isolation = process), optionally a failing hook beside it, a
// stop or memory samples after given steps; what it saw is kept for judging.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "check/call_record.hpp"
#include "check/runner_memory.hpp"
#include "hookhost/host/hook_state.hpp"
#include "hookhost/host/loader.hpp"
#include "hookhost/host/runtime.hpp"
#include "testing/log_capture.hpp"

namespace hookhost::check {

using testing::CaptureSink;
using testing::LogRecord;
using testing::make_capture_logger;

// The scenario's workload: every name of CheckTarget::names served (a float scalar each,
// "global_step" as an int64 scalar) and feedable, data until a planned step, and optionally one
// recoverable error.
struct WorkloadPlan {
  int64_t first_step = 0;  // the global step the session starts at (a resumed job's)
  int64_t steps = 20;      // steps until the end of data
  // The step attempted at this global step fails once with StepStatus::aborted (recoverable).
  std::optional<int64_t> recoverable_error_at;
};

// The plugin under check and what every scenario shares.
struct CheckTarget {
  std::shared_ptr<const LoadedPlugin> plugin;  // its file and note; never loaded in this process
  std::string instance;                        // the hook's instance name
  std::chrono::milliseconds call_timeout{5000};
  std::shared_ptr<CaptureSink> sink;
  std::shared_ptr<spdlog::logger> logger;
  std::set<std::string> names;  // the tensors the workload serves; grows as hooks ask for more
};

struct RunSpec {
  std::string scenario;
  std::multimap<std::string, std::string> params;  // configuration text, as --set gives it
  std::filesystem::path run_dir;
  WorkloadPlan workload;
  std::optional<int64_t> stop_after_steps;    // Runtime::request_stop after this many steps
  std::optional<int64_t> neighbour_fails_at;  // a failing hook beside it (on_error = fail)
  std::optional<std::map<std::string, SavedHookState>> restore;  // given before create()
  std::vector<int64_t> memory_samples_after;  // steps after which the runner's RSS is read
  bool edge = false;  // a parameter is at an edge: create() may refuse it, later errors are warned
  bool restored = false;  // the run after a restore: errors mean the state did not restore
  // Edge runs: failures the plain run showed too (failure_signature), so not the edge's doing.
  std::set<std::string> plain_failures;
};

struct RunOutcome {
  bool created = false;
  std::string create_error;    // the ConfigError text when the hook could not be created
  std::string internal_error;  // the runtime threw: a checker or host problem, not the plugin's
  CallRecord calls;
  std::vector<LogRecord> log;
  JobResult result;
  std::map<std::string, SavedHookState> states;  // after close()
  std::vector<MemorySample> memory;
};

RunOutcome run_scenario(CheckTarget& target, const RunSpec& spec);

}  // namespace hookhost::check
