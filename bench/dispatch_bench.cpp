// What a hook costs on the step path, each figure next to its floor measured in the same run:
// - per-step dispatch of 1, 10 and 100 no-op plugin hooks through the whole runtime, against the
//   same hooks' before_run and after_run called directly through their function pointers (indirect
//   calls into the plugin's .so, which the compiler cannot see through);
// - hooks that implement neither before_run nor after_run (they must cost nothing);
// - the runtime with no hook, against the workload's step alone;
// - one hook fetching a value of 4 B to 64 MiB (zero-copy: the cost must not grow with the size);
// - full per-call timing (every call timed) next to the default sampled timing;
// - what the latency histogram (p50/p99) adds to recording one timed call, against the same record
//   without it (count, total, max), over the same varied durations.
#include <benchmark/benchmark.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <hookhost/host/runtime.hpp>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "bench_support.hpp"

namespace {

using namespace hookhost;
using hookhost::bench::CountingSession;
using hookhost::bench::noop_plugin;
using hookhost::bench::ValuesSession;

// ---- the floor: the plugin's own functions, called through their pointers ------------------

// `count` instances of bench_noop created through the plugin's entry, as a host would, and
// destroyed with it.
class RawHooks {
 public:
  explicit RawHooks(int count) {
    auto plugin = noop_plugin();
    const ResolvedParams params = resolve_params(plugin->metadata(), "raw", {});
    ResolvedParams::CValues c = params.c_values();
    hh_create_args args{};
    args.struct_size = HH_CREATE_ARGS_SIZE;
    args.instance_name = "raw";
    args.params = c.values.empty() ? nullptr : c.values.data();
    args.param_count = static_cast<uint32_t>(c.values.size());
    args.param_stride = sizeof(hh_param_value);
    for (int i = 0; i < count; ++i) {
      hh_hook* hook = nullptr;
      hh_error err;
      hh_error_init(&err);
      // bench_noop never calls its host, so it gets none.
      if (plugin->entry().create(nullptr, &args, &hook, &err) != HH_OK || !hook)
        throw std::runtime_error(std::string("bench_noop create failed: ") + err.message);
      hooks_.push_back(hook);
    }
  }
  ~RawHooks() {
    for (hh_hook* h : hooks_) h->destroy(h);
  }
  RawHooks(const RawHooks&) = delete;
  RawHooks& operator=(const RawHooks&) = delete;
  const std::vector<hh_hook*>& hooks() const { return hooks_; }

 private:
  std::vector<hh_hook*> hooks_;
};

// What the runtime cannot avoid per step: each hook's before_run, then each hook's after_run.
void BM_IndirectCallFloor(benchmark::State& state) {
  RawHooks raw(static_cast<int>(state.range(0)));
  hh_run_context ctx{};
  ctx.struct_size = HH_RUN_CONTEXT_SIZE;
  hh_run_request request{};
  hh_run_values values{};
  values.struct_size = HH_RUN_VALUES_SIZE;
  hh_error err;
  hh_error_init(&err);
  for (auto _ : state) {
    for (hh_hook* h : raw.hooks()) benchmark::DoNotOptimize(h->before_run(h, &ctx, &request, &err));
    for (hh_hook* h : raw.hooks()) benchmark::DoNotOptimize(h->after_run(h, &ctx, &values, &err));
    ++ctx.global_step;
  }
}
BENCHMARK(BM_IndirectCallFloor)->ArgName("hooks")->Arg(1)->Arg(10)->Arg(100);

// ---- the runtime ---------------------------------------------------------------------------

RuntimeOptions quiet_options() {
  RuntimeOptions options;
  options.logger =
      std::make_shared<spdlog::logger>("bench", std::make_shared<spdlog::sinks::null_sink_mt>());
  return options;
}

std::unique_ptr<Runtime> make_runtime(Session& session, int hooks, const std::string& plugin_id,
                                      const std::string& fetch = "",
                                      RuntimeOptions options = quiet_options()) {
  auto rt = std::make_unique<Runtime>(session, std::move(options));
  auto plugin =
      plugin_id == "bench_noop" ? noop_plugin() : hookhost::bench::bench_plugin(plugin_id);
  for (int i = 0; i < hooks; ++i) {
    std::multimap<std::string, std::string> raw;
    if (!fetch.empty()) raw.emplace("fetch", fetch);
    const std::string name = "hook" + std::to_string(i);
    rt->add_hook(plugin, {name, 0, FailurePolicy::disable},
                 resolve_params(plugin->metadata(), name, raw));
  }
  if (!rt->start()) throw std::runtime_error("the runtime did not start");
  return rt;
}

// The caller fetches nothing in the dispatch figures: a fetched value costs the workload an
// allocation whose time varies with the heap's state by more than the hooks' cost.
const std::vector<std::string> kCallerFetches;
const std::vector<std::string> kCallerFetchesLoss{"loss"};

// The workload's step alone, with the same fetches the runtime's caller asks for.
void BM_SessionStepAlone(benchmark::State& state) {
  CountingSession session;
  const TensorMap feeds;
  const auto& fetches = state.range(0) ? kCallerFetchesLoss : kCallerFetches;
  for (auto _ : state) benchmark::DoNotOptimize(session.run(fetches, feeds));
}
BENCHMARK(BM_SessionStepAlone)->ArgName("fetch")->Arg(0)->Arg(1);

// The runtime with no hook around a step whose caller fetches 'loss' (the value is moved out).
void BM_RuntimeStepCallerFetch(benchmark::State& state) {
  CountingSession session;
  auto rt = make_runtime(session, 0, "bench_noop");
  for (auto _ : state) benchmark::DoNotOptimize(rt->run(kCallerFetchesLoss));
}
BENCHMARK(BM_RuntimeStepCallerFetch);

// One runtime step with N no-op hooks (before_run and after_run each, default timing).
void BM_RuntimeStep(benchmark::State& state) {
  CountingSession session;
  auto rt = make_runtime(session, static_cast<int>(state.range(0)), "bench_noop");
  for (auto _ : state) benchmark::DoNotOptimize(rt->run(kCallerFetches));
}
BENCHMARK(BM_RuntimeStep)->ArgName("hooks")->Arg(0)->Arg(1)->Arg(10)->Arg(100);

// The same with every call timed (two clock reads per call): the cost of full accounting.
void BM_RuntimeStepEveryCallTimed(benchmark::State& state) {
  CountingSession session;
  RuntimeOptions options = quiet_options();
  options.time_every_n_steps = 1;
  auto rt =
      make_runtime(session, static_cast<int>(state.range(0)), "bench_noop", "", std::move(options));
  for (auto _ : state) benchmark::DoNotOptimize(rt->run(kCallerFetches));
}
BENCHMARK(BM_RuntimeStepEveryCallTimed)->ArgName("hooks")->Arg(10);

// Hooks implementing neither before_run nor after_run.
void BM_RuntimeStepIdleHooks(benchmark::State& state) {
  CountingSession session;
  auto rt = make_runtime(session, static_cast<int>(state.range(0)), "bench_idle");
  for (auto _ : state) benchmark::DoNotOptimize(rt->run(kCallerFetches));
}
BENCHMARK(BM_RuntimeStepIdleHooks)->ArgName("hooks")->Arg(1000);

// ---- values of growing size --------------------------------------------------------------

// One hook fetching the value each step; the caller fetches nothing.
void BM_RuntimeStepFetch(benchmark::State& state) {
  ValuesSession session(static_cast<size_t>(state.range(0)));
  auto rt = make_runtime(session, 1, "bench_noop", "values");
  const std::vector<std::string> none;
  for (auto _ : state) benchmark::DoNotOptimize(rt->run(none));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_RuntimeStepFetch)->ArgName("bytes")->Arg(4)->Arg(4 << 10)->Arg(4 << 20)->Arg(64 << 20);

// ---- recording one timed call ------------------------------------------------------------------

// Durations from 20 ns to 2 ms, log-uniform, so records land in many buckets as a real job's do;
// drawn at run time, so the compiler cannot fold them.
const std::vector<std::chrono::nanoseconds>& varied_durations() {
  static const std::vector<std::chrono::nanoseconds> durations = [] {
    std::mt19937_64 random(12345);
    std::uniform_real_distribution<double> exponent(std::log(20.0), std::log(2e6));
    std::vector<std::chrono::nanoseconds> out(4096);
    for (auto& d : out)
      d = std::chrono::nanoseconds(static_cast<int64_t>(std::exp(exponent(random))));
    return out;
  }();
  return durations;
}

// The floor: the record as it was before the histogram (count, total, max).
void BM_TimedCallRecordFloor(benchmark::State& state) {
  const auto& durations = varied_durations();
  struct {
    uint64_t timed_calls = 0;
    std::chrono::nanoseconds total{0}, max{0};
  } stats;
  size_t i = 0;
  for (auto _ : state) {
    const std::chrono::nanoseconds dt = durations[i++ & 4095];
    ++stats.timed_calls;
    stats.total += dt;
    stats.max = std::max(stats.max, dt);
    benchmark::DoNotOptimize(stats);
  }
}
BENCHMARK(BM_TimedCallRecordFloor);

// CallStats::record: the same, plus the histogram's bucket.
void BM_TimedCallRecord(benchmark::State& state) {
  const auto& durations = varied_durations();
  CallStats stats;
  size_t i = 0;
  for (auto _ : state) {
    stats.record(durations[i++ & 4095]);
    benchmark::DoNotOptimize(stats);
  }
  if (stats.quantile(0.99) < stats.quantile(0.5)) state.SkipWithError("quantiles out of order");
}
BENCHMARK(BM_TimedCallRecord);

// ---- the goals -------------------------------------------------------------------------------

void report_goals(const hookhost::bench::TimesReporter& t) {
  std::printf("\n");
  const double empty = t.ns("BM_RuntimeStep/hooks:0");
  for (int hooks : {1, 10, 100}) {
    const std::string n = std::to_string(hooks);
    const double step = t.ns("BM_RuntimeStep/hooks:" + n);
    const double floor = t.ns("BM_IndirectCallFloor/hooks:" + n);
    if (step < 0 || floor < 0 || empty < 0) continue;
    std::printf("dispatch: %s hooks add %.1f ns per step; their calls alone take %.1f ns\n",
                n.c_str(), step - empty, floor);
    hookhost::bench::report_goal("dispatch_" + n + "_hooks_x_indirect_calls",
                                 (step - empty) / floor, 1.5);
  }
  if (const double idle = t.ns("BM_RuntimeStepIdleHooks/hooks:1000"); idle >= 0 && empty >= 0)
    hookhost::bench::report_goal("idle_hook_ns_per_step", std::max(0.0, (idle - empty) / 1000),
                                 0.1);
  if (const double alone = t.ns("BM_SessionStepAlone/fetch:0"); alone >= 0 && empty >= 0) {
    std::printf("empty runtime: %.1f ns per step around a workload step of %.1f ns\n", empty,
                alone);
    hookhost::bench::report_goal("empty_runtime_ns_per_step", std::max(0.0, empty - alone), 10);
  }
  const double alone_fetch = t.ns("BM_SessionStepAlone/fetch:1");
  const double empty_fetch = t.ns("BM_RuntimeStepCallerFetch");
  if (alone_fetch >= 0 && empty_fetch >= 0)
    std::printf("empty runtime, the caller fetching 'loss': %.1f ns around a step of %.1f ns\n",
                empty_fetch, alone_fetch);
  const double sampled = t.ns("BM_RuntimeStep/hooks:10");
  const double every = t.ns("BM_RuntimeStepEveryCallTimed/hooks:10");
  if (sampled >= 0 && every >= 0)
    std::printf("full per-call timing: %.1f ns more per hook call than sampled timing\n",
                (every - sampled) / 20);
  const double record = t.ns("BM_TimedCallRecord");
  const double record_floor = t.ns("BM_TimedCallRecordFloor");
  if (record >= 0 && record_floor >= 0) {
    std::printf("p50/p99 histogram: a timed call's record takes %.2f ns, %.2f ns without it\n",
                record, record_floor);
    hookhost::bench::report_goal("histogram_ns_per_timed_call",
                                 std::max(0.0, record - record_floor), 5);
  }
  hookhost::bench::report_values_goal(t, "values", "BM_RuntimeStepFetch", "",
                                      "values_inprocess_64mib_x_4b");
}

}  // namespace

int main(int argc, char** argv) {
  return hookhost::bench::run_and_report(argc, argv, report_goals);
}
