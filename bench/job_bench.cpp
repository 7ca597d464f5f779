// End to end: the demo job (examples/demo.ini: linear regression on mtcars with the standard hooks
// at their demo intervals) against the same job with no hook, as the hookhost program runs them.
// Each job runs a short and a long length; the difference per extra step is the steady per-step
// cost, free of start-up and end (loading plugins, the final checkpoint, flushing outputs).
#include <benchmark/benchmark.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <hookhost/host/job.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace hookhost;

// The mtcars data has 32 rows; the demo's batch of 8 makes 4 steps an epoch.
constexpr int64_t kStepsPerEpoch = 4;
constexpr int64_t kShortSteps = 2000;
constexpr int64_t kLongSteps = 22000;

const fs::path& scratch_dir() {
  static const hookhost::bench::ScratchFolder dir("hookhost-job-bench");
  return dir.path();
}

struct JobTimes {
  double seconds = 0;       // the whole job's wall time
  double wait_seconds = 0;  // of which its steps waited for checkpoint writes (the disk's time)
};

// One whole job of `steps` steps, with the demo's hooks or none.
JobTimes run_job(bool with_hooks, int64_t steps, int run) {
  const fs::path run_dir = scratch_dir() / ("run-" + std::to_string(run));
  fs::remove_all(run_dir);
  std::vector<std::string> overrides{"run.run_dir=" + run_dir.string()};
  std::optional<fs::path> file;
  if (with_hooks) {
    // The demo's stop hook ends the job; the data would last one epoch longer.
    file = fs::path(HOOKHOST_SOURCE_DIR) / "examples" / "demo.ini";
    overrides.push_back("workload.epochs=" + std::to_string(steps / kStepsPerEpoch + 1));
    overrides.push_back("hook.stop.last_step=" + std::to_string(steps));
  } else {
    // The demo's workload, ended by its data.
    for (const char* setting :
         {"workload.name=linreg", "workload.batch_size=8", "workload.learning_rate=0.1"})
      overrides.emplace_back(setting);
    overrides.push_back("workload.epochs=" + std::to_string(steps / kStepsPerEpoch));
  }
  JobOptions options;
  options.config = load_job_config(file, overrides);
  options.logger =
      std::make_shared<spdlog::logger>("bench", std::make_shared<spdlog::sinks::null_sink_mt>());
  options.fresh = true;
  const auto start = std::chrono::steady_clock::now();
  Job job(std::move(options));
  const std::atomic<int> no_signal{0};
  const JobResult result = job.run(no_signal);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (result.steps_run != steps)
    throw std::runtime_error("the job ran " + std::to_string(result.steps_run) + " steps, not " +
                             std::to_string(steps) + ": " + result.reason);
  fs::remove_all(run_dir);
  return {seconds, std::chrono::duration<double>(result.checkpoint_wait_time).count()};
}

void BM_Job(benchmark::State& state) {
  static int run = 0;
  const bool with_hooks = state.range(0) != 0;
  const int64_t steps = state.range(1);
  double wait_seconds = 0;
  for (auto _ : state) {
    try {
      const JobTimes times = run_job(with_hooks, steps, ++run);
      state.SetIterationTime(times.seconds);
      wait_seconds += times.wait_seconds;
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      return;
    }
  }
  state.counters["steps"] = static_cast<double>(steps);
  state.counters["checkpoint_wait_ns"] = wait_seconds * 1e9;
}
BENCHMARK(BM_Job)
    ->ArgNames({"hooks", "steps"})
    ->Args({0, kShortSteps})
    ->Args({0, kLongSteps})
    ->Args({1, kShortSteps})
    ->Args({1, kLongSteps})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

void report_goals(const hookhost::bench::TimesReporter& t) {
  // The long job's time less the short one's, per step: the start and the end cancel out. On a
  // busy machine the difference can come out negative; it is still a measurement (of noise), not
  // a missing one, so the goal line is printed either way.
  // The steps' waits for checkpoint writes ([run] checkpoint_wait = true, the default) are the
  // disk's time, not the hooks': they are taken out of the goal and reported on their own line.
  struct PerStep {
    double ns = 0;       // wall time per step, the waits taken out
    double wait_ns = 0;  // the waits per step
  };
  auto per_step = [&](int hooks) -> std::optional<PerStep> {
    const std::string base = "BM_Job/hooks:" + std::to_string(hooks) + "/steps:";
    const std::string short_name = base + std::to_string(kShortSteps) + "/iterations:1/manual_time";
    const std::string long_name = base + std::to_string(kLongSteps) + "/iterations:1/manual_time";
    if (!t.has(short_name) || !t.has(long_name)) return std::nullopt;
    const double waits = std::max(0.0, t.counter(long_name, "checkpoint_wait_ns")) -
                         std::max(0.0, t.counter(short_name, "checkpoint_wait_ns"));
    const double steps = kLongSteps - kShortSteps;
    return PerStep{(t.ns(long_name) - t.ns(short_name) - waits) / steps, waits / steps};
  };
  const std::optional<PerStep> bare = per_step(0);
  const std::optional<PerStep> demo = per_step(1);
  if (!bare || !demo) {
    std::printf("\njob: a job did not run (its error is above): no demo_hooks_ns_per_step\n");
    return;
  }
  std::printf(
      "\njob: %.0f ns per step with the demo's hooks, %.0f ns with none (waits for the "
      "disk taken out)\n",
      demo->ns, bare->ns);
  std::printf(
      "job: the demo's steps waited %.0f ns per step for checkpoint writes (the disk's "
      "time, [run] checkpoint_wait = true; not part of the goal)\n",
      demo->wait_ns);
  hookhost::bench::report_goal("demo_hooks_ns_per_step", std::max(0.0, demo->ns - bare->ns), 1000);
}

}  // namespace

int main(int argc, char** argv) {
  return hookhost::bench::run_and_report(argc, argv, report_goals);
}
