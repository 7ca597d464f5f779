// What a hook costs: the host's dispatch through the C ABI and a whole runtime step, each reported
// as a ratio to a baseline measured in the same run (a direct virtual call, a bare session step).
#include <benchmark/benchmark.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <hookhost/host/discovery.hpp>
#include <hookhost/host/loader.hpp>
#include <hookhost/host/runtime.hpp>
#include <map>

#include "bench_support.hpp"

namespace {

using namespace hookhost;
using hookhost::bench::CountingSession;
using hookhost::bench::noop_plugin;

// ---- baselines ------------------------------------------------------------------------------

struct VirtualHook {
  virtual ~VirtualHook() = default;
  virtual int after_run(int64_t step) = 0;
};
struct NoopVirtualHook final : VirtualHook {
  int after_run(int64_t step) override { return static_cast<int>(step & 1); }
};

void BM_DirectVirtualCall(benchmark::State& state) {
  std::unique_ptr<VirtualHook> hook = std::make_unique<NoopVirtualHook>();
  benchmark::DoNotOptimize(hook);
  int64_t step = 0;
  for (auto _ : state) benchmark::DoNotOptimize(hook->after_run(step++));
}
BENCHMARK(BM_DirectVirtualCall);

std::unique_ptr<Runtime> make_runtime(CountingSession& session, int hooks, bool fetch) {
  RuntimeOptions options;
  options.logger =
      std::make_shared<spdlog::logger>("bench", std::make_shared<spdlog::sinks::null_sink_mt>());
  auto rt = std::make_unique<Runtime>(session, options);
  for (int i = 0; i < hooks; ++i) {
    std::multimap<std::string, std::string> raw{{"fetch", fetch ? "true" : "false"}};
    auto plugin = noop_plugin();
    std::string name = "noop" + std::to_string(i);
    rt->add_hook(plugin, {name, 0, FailurePolicy::disable},
                 resolve_params(plugin->metadata(), name, raw));
  }
  rt->start();
  return rt;
}

// One step of the bare workload: the baseline for the runtime figures.
void BM_SessionStepAlone(benchmark::State& state) {
  CountingSession session;
  TensorMap feeds;
  std::vector<std::string> fetches{"loss"};
  for (auto _ : state) benchmark::DoNotOptimize(session.run(fetches, feeds));
}
BENCHMARK(BM_SessionStepAlone);

// One runtime step with N no-op plugin hooks (each calls before_run and after_run through the ABI).
void BM_RuntimeStep(benchmark::State& state) {
  CountingSession session;
  auto rt = make_runtime(session, static_cast<int>(state.range(0)), state.range(1) != 0);
  std::vector<std::string> fetches{"loss"};
  for (auto _ : state) benchmark::DoNotOptimize(rt->run(fetches));
  state.counters["hooks"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_RuntimeStep)
    ->ArgNames({"hooks", "fetch"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({5, 0})
    ->Args({5, 1})
    ->Args({20, 1});

// Reading a plugin's note (what listing costs per file), against nothing to compare but itself.
void BM_DiscoverOnePlugin(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(discover_plugins({HOOKHOST_BENCH_PLUGIN_DIR}));
}
BENCHMARK(BM_DiscoverOnePlugin);

// Prints each result as a ratio to its baseline after the usual table.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& run : runs)
      if (run.run_type == Run::RT_Iteration)
        times_[run.benchmark_name()] = run.GetAdjustedRealTime();
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    auto ratio = [&](const std::string& name, const std::string& base) {
      if (!times_.count(name) || !times_.count(base)) return;
      std::printf("  %-40s %8.2f x %s\n", name.c_str(), times_[name] / times_[base], base.c_str());
    };
    std::printf("\nRatios (real time):\n");
    for (const auto& [name, t] : times_) {
      if (name.rfind("BM_RuntimeStep", 0) == 0) ratio(name, "BM_SessionStepAlone");
    }
    // Per-hook dispatch cost: (5 hooks - 0 hooks) / 5 / 2 calls, against one virtual call.
    const std::string h0 = "BM_RuntimeStep/hooks:0/fetch:0", h5 = "BM_RuntimeStep/hooks:5/fetch:0";
    if (times_.count(h0) && times_.count(h5) && times_.count("BM_DirectVirtualCall")) {
      double per_call = (times_[h5] - times_[h0]) / 10.0;
      std::printf("  %-40s %8.2f x BM_DirectVirtualCall (%.1f ns per hook call)\n",
                  "one hook call through the runtime", per_call / times_["BM_DirectVirtualCall"],
                  per_call);
    }
  }

 private:
  std::map<std::string, double> times_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
