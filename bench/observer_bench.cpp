// Observers (mode = observe) on the training thread: a step of fixed length (100 us, spinning)
// that times itself, so what the runtime adds around it is the loop's time minus the steps' own.
// Against that floor: no hook, one in-process no-op hook, a no-op observer in process and
// sandboxed, and an observer whose after_run takes 1 ms behind the step (queue = 64, skip).
#include <benchmark/benchmark.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <hookhost/host/runtime.hpp>
#include <map>

#include "bench_support.hpp"
#include "sandbox/process_dispatch.hpp"

namespace {

using namespace hookhost;
using Clock = std::chrono::steady_clock;

// A step that takes `length` on the clock (a busy wait, as compute would) and adds up the time
// spent inside it, which the runtime cannot shorten.
class TimedStepSession : public Session {
 public:
  explicit TimedStepSession(std::chrono::nanoseconds length) : length_(length) {}
  void create(int) override {}
  int64_t global_step() const override { return step_; }
  std::vector<std::string> fetchable() const override { return {"loss"}; }
  std::vector<std::string> feedable() const override { return {}; }
  StepResult run(const std::vector<std::string>& fetches, const TensorMap&) override {
    const auto start = Clock::now();
    auto now = start;
    while (now - start < length_) now = Clock::now();
    inside_ += now - start;
    ++step_;
    StepResult r;
    for (const auto& name : fetches) r.values.emplace(name, Tensor::scalar_f32(1.0f));
    return r;
  }
  double inside_ns() const { return std::chrono::duration<double, std::nano>(inside_).count(); }

 private:
  std::chrono::nanoseconds length_;
  Clock::duration inside_{0};
  int64_t step_ = 0;
};

enum Kind : int64_t {
  kNone = 0,
  kInProcessHook = 1,
  kInProcessObserver = 2,
  kSandboxedObserver = 3,
  kSlowObserver = 4,   // after_run takes 1 ms; queue = 64, policy = skip
  kSandboxedHook = 5,  // the sandboxed no-op hook on the step
};

std::unique_ptr<Runtime> make_runtime(Session& session, int64_t kind) {
  RuntimeOptions options;
  options.logger =
      std::make_shared<spdlog::logger>("bench", std::make_shared<spdlog::sinks::null_sink_mt>());
  auto rt = std::make_unique<Runtime>(session, options);
  if (kind == kNone) return rt;
  HookSettings settings;
  settings.instance_name = "hook";
  settings.observer.enabled = kind != kInProcessHook && kind != kSandboxedHook;
  auto plugin = kind == kSlowObserver ? hookhost::bench::bench_plugin("bench_slow")
                                      : hookhost::bench::noop_plugin();
  std::multimap<std::string, std::string> raw;
  if (kind == kSlowObserver) {
    settings.observer.queue = 64;
    settings.observer.when_full = ObserverSettings::WhenFull::skip;
  } else {
    raw.emplace("fetch", "loss");  // an observer that reads the loss, as loggers do
  }
  const ResolvedParams params = resolve_params(plugin->metadata(), "hook", raw);
  if (kind == kSandboxedObserver) settings.observer.queue = 64;
  if (kind != kSandboxedObserver && kind != kSandboxedHook) {
    rt->add_hook(plugin, settings, params);
    return rt;
  }
  rt->add_hook(plugin->metadata().id, plugin->entry().state_version, settings,
               [&](const hh_host& host) {
                 return make_process_dispatch(*plugin, "hook", params, host, SandboxOptions{});
               });
  return rt;
}

void BM_ObserverStep(benchmark::State& state) {
  TimedStepSession session(std::chrono::microseconds(state.range(1)));
  auto rt = make_runtime(session, state.range(0));
  if (!rt->start()) {
    state.SkipWithError("the runtime did not start");
    return;
  }
  const auto start = Clock::now();
  for (auto _ : state) benchmark::DoNotOptimize(rt->run());
  const double loop_ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  const double steps = static_cast<double>(state.iterations());
  // What the runtime added to each step on the training thread.
  state.counters["host_ns"] = steps > 0 ? (loop_ns - session.inside_ns()) / steps : 0;
  rt->close();  // the observers' queues drain here, outside the timed loop
  const auto reports = rt->reports();
  if (!reports.empty() && state.range(0) == kSlowObserver) {
    state.counters["skipped"] = static_cast<double>(reports[0].observer_skipped_steps);
    state.counters["delivered"] = static_cast<double>(reports[0].callbacks.at("after_run").calls);
  }
}
// A sandboxed observer's worker sends one message per step to its runner, tens of microseconds on
// two busy cores: its step is long enough for the worker to keep up, as the goal is what the
// training thread pays, not how long the queue holds out (BM_SandboxedThroughput times that).
BENCHMARK(BM_ObserverStep)
    ->UseRealTime()
    ->ArgNames({"kind", "step_us"})
    ->Args({kNone, 100})
    ->Args({kInProcessHook, 100})
    ->Args({kInProcessObserver, 100})
    ->Args({kSlowObserver, 100})
    ->Args({kNone, 500})
    ->Args({kInProcessHook, 500})
    ->Args({kSandboxedObserver, 500});

// How many steps a sandboxed observer takes per second when the step itself costs nothing (its
// queue full, policy = block, the drain at close counted): what its worker spends per step, one
// message to its runner, against the same hook on the step (three round trips: before_run, its
// add_fetch, after_run).
void BM_SandboxedThroughput(benchmark::State& state) {
  TimedStepSession session(std::chrono::nanoseconds(0));
  auto rt = make_runtime(session, state.range(0));
  if (!rt->start()) {
    state.SkipWithError("the runtime did not start");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(rt->run());
  rt->close();  // every queued step reaches the observer inside the timed run
}
BENCHMARK(BM_SandboxedThroughput)
    ->UseRealTime()
    ->ArgName("kind")
    ->Arg(kSandboxedHook)
    ->Arg(kSandboxedObserver);

void report_goals(const hookhost::bench::TimesReporter& t) {
  std::printf("\n");
  const auto host_ns = [&](Kind kind, int step_us) {
    return t.counter("BM_ObserverStep/kind:" + std::to_string(kind) +
                         "/step_us:" + std::to_string(step_us) + "/real_time",
                     "host_ns");
  };
  const double none = host_ns(kNone, 100), hook = host_ns(kInProcessHook, 100),
               observer = host_ns(kInProcessObserver, 100), slow = host_ns(kSlowObserver, 100);
  std::printf(
      "observers: host ns per 100 us step: no hook %.1f, one in-process no-op hook %.1f, an "
      "in-process observer %.1f, a 1 ms observer (queue 64, skip) %.1f\n",
      none, hook, observer, slow);
  const double none_500 = host_ns(kNone, 500), hook_500 = host_ns(kInProcessHook, 500),
               sandboxed = host_ns(kSandboxedObserver, 500);
  std::printf(
      "observers: host ns per 500 us step: no hook %.1f, one in-process no-op hook %.1f, a "
      "sandboxed observer %.1f\n",
      none_500, hook_500, sandboxed);
  if (hook_500 > 0 && sandboxed >= 0)
    hookhost::bench::report_goal("sandboxed_observer_x_inprocess_hook", sandboxed / hook_500, 2.0);
  const double on_step = t.ns("BM_SandboxedThroughput/kind:5/real_time"),
               behind = t.ns("BM_SandboxedThroughput/kind:3/real_time");
  if (on_step > 0 && behind > 0) {
    std::printf(
        "observers: a sandboxed no-op hook fetching loss, ns per zero-length step: on the step "
        "%.0f, as an observer (its worker's pace) %.0f\n",
        on_step, behind);
    hookhost::bench::report_goal("sandboxed_observer_pace_x_on_step", behind / on_step, 0.6);
  }
  if (slow >= 0 && none >= 0)
    hookhost::bench::report_goal("slow_observer_added_ns_per_step", std::max(0.0, slow - none),
                                 2000);
}

}  // namespace

int main(int argc, char** argv) {
  return hookhost::bench::run_and_report(argc, argv, report_goals);
}
