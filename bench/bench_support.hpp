// What the benchmarks share: a workload whose step costs almost nothing, so the hooks' share
// shows; the no-op plugin built for them; and the goal lines scripts/bench.sh collects.
#pragma once

#include <benchmark/benchmark.h>

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <hookhost/host/discovery.hpp>
#include <hookhost/host/loader.hpp>
#include <hookhost/host/session.hpp>

#include "bench_paths.hpp"

namespace hookhost::bench {

// A fresh folder "PREFIX.XXXXXX" in `parent`, removed with everything in it when this goes, so
// that no run appends to another's files and the files of many runs never pile up.
class ScratchFolder {
 public:
  explicit ScratchFolder(const std::string& prefix, const std::filesystem::path& parent =
                                                        std::filesystem::temp_directory_path()) {
    std::string pattern = (parent / (prefix + ".XXXXXX")).string();
    if (!::mkdtemp(pattern.data()))
      throw std::runtime_error("cannot create a scratch folder in " + parent.string());
    path_ = pattern;
  }
  ~ScratchFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The floor workload: a step that only counts. Hooks are tested and checked around the harness's
// scripted workload (host/src/testing/scripted_workload.hpp); its script lookups would add their
// own cost to every step measured here, so the benchmarks keep this one.
class CountingSession : public Session {
 public:
  void create(int) override {}
  int64_t global_step() const override { return step_; }
  std::vector<std::string> fetchable() const override { return {"loss"}; }
  std::vector<std::string> feedable() const override { return {}; }
  StepResult run(const std::vector<std::string>& fetches, const TensorMap&) override {
    ++step_;
    StepResult r;
    for (const auto& name : fetches) r.values.emplace(name, Tensor::scalar_f32(1.0f));
    return r;
  }

 private:
  int64_t step_ = 0;
};

// A 1-d f32 tensor viewing `data`; `shape` (one element, the size) must outlive the view.
inline hh_tensor f32_view(const char* name, std::vector<float>& data, int64_t (&shape)[1]) {
  shape[0] = static_cast<int64_t>(data.size());
  hh_tensor view;
  hh_tensor_init(&view);
  view.name = name;
  view.dtype = HH_DTYPE_F32;
  view.rank = 1;
  view.shape = shape;
  view.data = data.data();
  view.byte_size = data.size() * sizeof(float);
  return view;
}

// A workload that hands out a value it holds ("values", `bytes` long) without copying it, as a
// real workload hands out its parameters (the scripted workload builds its values per step).
class ValuesSession : public CountingSession {
 public:
  explicit ValuesSession(size_t bytes)
      : data_(std::make_shared<std::vector<float>>(bytes / sizeof(float), 1.5f)) {
    value_ = Tensor::borrow(f32_view("values", *data_, shape_), data_);
  }
  std::vector<std::string> fetchable() const override { return {"loss", "values"}; }
  StepResult run(const std::vector<std::string>& fetches, const TensorMap& feeds) override {
    StepResult r = CountingSession::run({}, feeds);
    for (const auto& name : fetches)
      r.values.emplace(name, name == "values" ? value_ : Tensor::scalar_f32(1.0f));
    return r;
  }

 private:
  std::shared_ptr<std::vector<float>> data_;
  int64_t shape_[1] = {0};
  Tensor value_;
};

inline std::shared_ptr<const LoadedPlugin> bench_plugin(const std::string& id) {
  DiscoveryResult found = discover_plugins({HOOKHOST_BENCH_PLUGIN_DIR});
  const DiscoveredPlugin* p = found.find(id);
  if (!p) throw std::runtime_error(id + " plugin not found in " + HOOKHOST_BENCH_PLUGIN_DIR);
  return load_plugin(*p);
}

inline std::shared_ptr<const LoadedPlugin> noop_plugin() {
  static std::shared_ptr<const LoadedPlugin> plugin = bench_plugin("bench_noop");
  return plugin;
}

// One goal of the performance issue, printed as scripts/bench.sh collects it:
//   goal NAME measured=X limit=Y PASS      (or MISS; lower is better, X <= Y passes)
inline bool report_goal(const std::string& name, double measured, double limit) {
  const bool pass = measured <= limit;
  std::printf("goal %s measured=%.3f limit=%.3f %s\n", name.c_str(), measured, limit,
              pass ? "PASS" : "MISS");
  std::fflush(stdout);
  return pass;
}

// The usual console table, and every benchmark's time per iteration (ns) kept by name: the median
// when --benchmark_repetitions asks for several runs, else the one run.
class TimesReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& run : runs) {
      if (run.error_occurred) continue;
      // CPU time for a benchmark on one thread (steadier on a busy machine), real time for one
      // that waits on another process (UseRealTime).
      const bool real = !run.run_name.time_type.empty();
      const double ns =
          (real ? run.GetAdjustedRealTime() : run.GetAdjustedCPUTime()) * to_ns(run.time_unit);
      if (run.run_type == Run::RT_Iteration) {
        if (!medians_.count(run.run_name.str())) keep(run, ns);
      } else if (run.aggregate_name == "median") {
        keep(run, ns);
        medians_.insert({run.run_name.str(), true});
      }
    }
  }
  // Nanoseconds per iteration, or a negative number when the benchmark did not run.
  double ns(const std::string& name) const {
    auto it = times_.find(name);
    return it == times_.end() ? -1 : it->second;
  }
  bool has(const std::string& name) const { return times_.count(name) != 0; }
  // A user counter of a benchmark (as kept with its time), or a negative number.
  double counter(const std::string& name, const std::string& counter) const {
    auto it = counters_.find(name);
    if (it == counters_.end()) return -1;
    auto c = it->second.find(counter);
    return c == it->second.end() ? -1 : c->second;
  }
  const std::map<std::string, double>& times() const { return times_; }

 private:
  static double to_ns(benchmark::TimeUnit unit) {
    switch (unit) {
      case benchmark::kNanosecond: return 1;
      case benchmark::kMicrosecond: return 1e3;
      case benchmark::kMillisecond: return 1e6;
      case benchmark::kSecond: return 1e9;
    }
    return 1;
  }
  void keep(const Run& run, double ns) {
    times_[run.run_name.str()] = ns;
    auto& counters = counters_[run.run_name.str()];
    for (const auto& [name, value] : run.counters) counters[name] = value.value;
  }
  std::map<std::string, double> times_;
  std::map<std::string, std::map<std::string, double>> counters_;
  std::map<std::string, bool> medians_;
};

// The values goal: a step's cost is flat in the size of what a hook fetches. Compares the
// benchmarks `<fetch>/bytes:67108864<suffix>` and `<fetch>/bytes:4<suffix>` when both ran.
inline void report_values_goal(const TimesReporter& t, const std::string& label,
                               const std::string& fetch, const std::string& suffix,
                               const std::string& goal) {
  const double small = t.ns(fetch + "/bytes:4" + suffix);
  const double large = t.ns(fetch + "/bytes:67108864" + suffix);
  if (small <= 0 || large < 0) return;
  std::printf("%s: a step fetching 64 MiB takes %.1f ns, one fetching 4 B %.1f ns\n", label.c_str(),
              large, small);
  report_goal(goal, large / small, 1.5);
}

// Runs the benchmarks the command line selects, reporting to `reporter`; false when the command
// line has arguments Google Benchmark does not know (it has said which).
inline bool run_benchmarks(int argc, char** argv, TimesReporter& reporter) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return false;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return true;
}

// A bench program's main: its benchmarks, then `report_goals` over their times (exit 1 for
// arguments Google Benchmark does not know).
inline int run_and_report(int argc, char** argv, void (*report_goals)(const TimesReporter&)) {
  TimesReporter reporter;
  if (!run_benchmarks(argc, argv, reporter)) return 1;
  report_goals(reporter);
  return 0;
}

}  // namespace hookhost::bench
