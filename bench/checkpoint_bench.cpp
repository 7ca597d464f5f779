// What a checkpoint save costs the training thread, against its floor: a memcpy of the workload's
// state into a fresh buffer, which any snapshot of the state has to pay.
//   BM_MemcpyFloor            one copy of the state's size into a newly allocated buffer
//   BM_Step                   one runtime step of a workload holding that much state, no save
//   BM_StepWithSave           the same step with a checkpoint requested before it: the step-path
//                             cost of a save is this minus BM_Step
// Each save starts with no other save in flight (the loop waits for the previous one outside the
// timed region): the cost of a save in a job whose saves are further apart than one write.
// BM_StepWithSaveEveryStep shows the other case, saves asked for faster than the disk takes them,
// where each one waits for the one in flight.
//
// cold:1 empties the caches before every iteration (outside the timed region), so the copy reads
// the state from memory in both measurements, as after a real step, whose data pushes the state
// out of the cache. This is the comparison the goal lines use. cold:0 is printed too: there the
// floor copies from a warm cache, which the save cannot, because the background write of the
// previous save (reading the snapshot, the kernel's copy into the page cache) has evicted the
// state by the time the next save copies it.
// Checkpoints go to a temporary folder, removed at the end.
#include <benchmark/benchmark.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <hookhost/host/runtime.hpp>
#include <memory>
#include <string>
#include <vector>

#include "bench_support.hpp"

namespace {

using namespace hookhost;
namespace fs = std::filesystem;

constexpr int64_t kMiB = 1024 * 1024;

// A workload whose step costs almost nothing and whose state is `bytes` bytes: save_state copies
// it, as a real workload copies its parameters out (the scripted workload's state is its step).
class StateSession : public Session {
 public:
  explicit StateSession(size_t bytes) : state_(bytes, '\0') {
    for (size_t i = 0; i < bytes; i += 4096) state_[i] = static_cast<char>(i / 4096);
  }
  void create(int) override {}
  int64_t global_step() const override { return step_; }
  std::vector<std::string> fetchable() const override { return {}; }
  std::vector<std::string> feedable() const override { return {}; }
  StepResult run(const std::vector<std::string>&, const TensorMap&) override {
    ++step_;
    state_[static_cast<size_t>(step_) % state_.size()] ^= 1;  // the state changes every step
    return {};
  }
  std::string save_state() const override { return state_; }

 private:
  std::string state_;
  int64_t step_ = 0;
};

// Touches twice the last-level cache, so what was cached before comes from memory afterwards.
void evict_caches() {
  static std::vector<char> buffer(64 * kMiB, 1);
  for (size_t i = 0; i < buffer.size(); i += 64) ++buffer[i];
  benchmark::DoNotOptimize(buffer.data());
  benchmark::ClobberMemory();
}

// The folder every checkpoint of this program goes to, removed when the program ends.
class ScratchFolder {
 public:
  ScratchFolder() {
    std::string pattern = (fs::temp_directory_path() / "hookhost-checkpoint-bench-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~ScratchFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

ScratchFolder& scratch() {
  static ScratchFolder folder;
  return folder;
}

std::unique_ptr<Runtime> make_runtime(StateSession& session, const std::string& folder) {
  RuntimeOptions options;
  options.logger =
      std::make_shared<spdlog::logger>("bench", std::make_shared<spdlog::sinks::null_sink_mt>());
  options.run_dir = scratch().path();
  options.checkpoint_dir = folder;
  options.keep_checkpoints = 2;
  auto rt = std::make_unique<Runtime>(session, options);
  if (!rt->start()) throw std::runtime_error("the runtime did not start");
  return rt;
}

// ---- the floor ------------------------------------------------------------------------------

void BM_MemcpyFloor(benchmark::State& state) {
  const std::string source(static_cast<size_t>(state.range(0)), 'x');
  const bool cold = state.range(1) != 0;
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      evict_caches();
      state.ResumeTiming();
    }
    auto copy = std::make_unique_for_overwrite<char[]>(source.size());
    std::memcpy(copy.get(), source.data(), source.size());
    benchmark::DoNotOptimize(copy.get());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

// ---- steps with and without a save ----------------------------------------------------------

// Both loops pause the same way, so the pause's own cost drops out of the difference.
void BM_Step(benchmark::State& state) {
  StateSession session(static_cast<size_t>(state.range(0)));
  auto rt = make_runtime(session, "step");
  const bool cold = state.range(1) != 0;
  for (auto _ : state) {
    state.PauseTiming();
    if (cold) evict_caches();
    state.ResumeTiming();
    benchmark::DoNotOptimize(rt->run());
  }
}

void BM_StepWithSave(benchmark::State& state) {
  StateSession session(static_cast<size_t>(state.range(0)));
  auto rt = make_runtime(session, "save");
  const bool cold = state.range(1) != 0;
  for (auto _ : state) {
    state.PauseTiming();
    rt->wait_for_checkpoints();  // the save starts with none in flight
    if (cold) evict_caches();
    state.ResumeTiming();
    rt->request_checkpoint("bench");
    benchmark::DoNotOptimize(rt->run());
  }
  rt->close();
  if (!rt->last_checkpoint()) state.SkipWithError("no checkpoint was written");
}

// Saves asked for at every step, faster than the disk takes them: each waits for the previous.
void BM_StepWithSaveEveryStep(benchmark::State& state) {
  StateSession session(static_cast<size_t>(state.range(0)));
  auto rt = make_runtime(session, "every-step");
  for (auto _ : state) {
    rt->request_checkpoint("bench");
    benchmark::DoNotOptimize(rt->run());
  }
  rt->close();
}
BENCHMARK(BM_StepWithSaveEveryStep)->ArgName("bytes")->Arg(kMiB)->UseRealTime()->Iterations(40);

// Each floor runs right before the step and the save it is compared with, so a machine whose load
// drifts during the run disturbs the three alike. A fixed count: emptying the caches and waiting
// for each save's fsync happen outside the timed region, so a time-based count would run for
// minutes.
void register_comparisons() {
  using Function = void (*)(benchmark::State&);
  const std::vector<std::pair<const char*, Function>> compared = {
      {"BM_MemcpyFloor", BM_MemcpyFloor},
      {"BM_Step", BM_Step},
      {"BM_StepWithSave", BM_StepWithSave}};
  for (const int64_t cold : {1, 0})
    for (const int64_t bytes : {kMiB, 16 * kMiB})
      for (const auto& [name, function] : compared)
        benchmark::RegisterBenchmark(name, function)
            ->ArgNames({"bytes", "cold"})
            ->Args({bytes, cold})
            ->UseRealTime()
            ->Iterations(40);
}

}  // namespace

int main(int argc, char** argv) {
  register_comparisons();
  hookhost::bench::TimesReporter reporter;
  if (!hookhost::bench::run_benchmarks(argc, argv, reporter)) return 1;

  std::printf("\nStep-path cost of a save against a memcpy of the state (real time):\n");
  for (const int cold : {1, 0}) {
    for (const auto& [label, bytes] :
         std::vector<std::pair<std::string, int64_t>>{{"1mib", kMiB}, {"16mib", 16 * kMiB}}) {
      const std::string args = "/bytes:" + std::to_string(bytes) + "/cold:" + std::to_string(cold) +
                               "/iterations:40/real_time";
      const double floor = reporter.ns("BM_MemcpyFloor" + args);
      const double step = reporter.ns("BM_Step" + args);
      const double with_save = reporter.ns("BM_StepWithSave" + args);
      if (floor <= 0 || step < 0 || with_save < 0) continue;  // filtered out
      const double save = with_save - step;
      std::printf("  %-5s %s  memcpy %9.1f us  save %9.1f us  ratio %5.2f\n", label.c_str(),
                  cold ? "cold cache" : "warm cache", floor / 1e3, save / 1e3, save / floor);
      if (cold)
        hookhost::bench::report_goal("checkpoint_save_" + label + "_x_memcpy", save / floor, 2.0);
    }
  }
  return 0;
}
