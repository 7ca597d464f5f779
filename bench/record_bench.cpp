// What one TensorBoard event record and one history CSV row cost the training thread, each next to
// a floor measured in the same run: a memcpy of the record's bytes, and a runtime step whose one
// hook fetches the same tensor and writes nothing. Files go to a temporary folder, removed as each
// run ends.
#include <benchmark/benchmark.h>
#include <hookhost/ext/summary.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <hookhost/host/hook_dispatch.hpp>
#include <hookhost/host/params.hpp>
#include <hookhost/host/runtime.hpp>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "storage/event_writer.hpp"

namespace {

namespace fs = std::filesystem;
using namespace hookhost;
using hookhost::bench::CountingSession;

// The benchmarks' folder, removed at exit; each run writes in a fresh folder inside it.
const fs::path& scratch_root() {
  static const bench::ScratchFolder root("record_bench");
  return root.path();
}

RuntimeOptions quiet_options(const fs::path& run_dir) {
  RuntimeOptions options;
  options.run_dir = run_dir;
  options.logger =
      std::make_shared<spdlog::logger>("bench", std::make_shared<spdlog::sinks::null_sink_mt>());
  return options;
}

// A hook that implements nothing: it only gives the benchmark an instance's hh_host, so records go
// through the same service entry a plugin calls.
class HostOnlyDispatch final : public HookDispatch {
 public:
  std::string plugin_id() const override { return "bench_host_only"; }
  std::string plugin_file() const override { return "(benchmark)"; }
  bool implements(Callback) const override { return false; }
  bool accepts_device(hh_device) override { return true; }
  CallResult begin() override { return {}; }
  CallResult after_create_session(const hh_session_info&) override { return {}; }
  CallResult before_run(const hh_run_context&, hh_run_request&) override { return {}; }
  CallResult after_run(const hh_run_context&, const hh_run_values&) override { return {}; }
  CallResult end(const hh_end_info&) override { return {}; }
  std::string destroy() override { return {}; }
};

// ---- one event record ------------------------------------------------------------------------

// The floor: appending the bytes of one framed scalar record to a buffer.
void BM_MemcpyEventRecord(benchmark::State& state) {
  const std::string record = frame_record(encode_scalar_event(1.7e9, 1234, "loss", 0.5f));
  std::string buffer;
  buffer.reserve(1 << 20);
  for (auto _ : state) {
    if (buffer.size() + record.size() > buffer.capacity()) buffer.clear();
    const std::size_t at = buffer.size();
    buffer.resize(at + record.size());
    std::memcpy(buffer.data() + at, record.data(), record.size());
    benchmark::DoNotOptimize(buffer.data());
    benchmark::ClobberMemory();
  }
  state.counters["record_bytes"] = static_cast<double>(record.size());
}
BENCHMARK(BM_MemcpyEventRecord);

// hh.summary/1 add_scalar into the run directory's event file, as summary_saver calls it.
void BM_SummaryRecordThroughService(benchmark::State& state) {
  bench::ScratchFolder folder("service", scratch_root());
  CountingSession session;
  Runtime runtime(session, quiet_options(folder.path()));
  const hh_host* host = nullptr;
  runtime.add_hook("bench_host_only", 1, {"records", 0, FailurePolicy::disable},
                   [&](const hh_host& h) {
                     host = &h;
                     return std::make_unique<HostOnlyDispatch>();
                   });
  if (!runtime.start()) {
    state.SkipWithError("the runtime did not start");
    return;
  }
  const auto* summaries =
      static_cast<const hh_summary_service*>(host->get_service(host, HH_SERVICE_SUMMARY));
  hh_error err;
  hh_error_init(&err);
  int64_t step = 0;
  for (auto _ : state) {
    if (summaries->add_scalar(host, nullptr, "loss", 0.5, ++step, &err) != HH_OK) {
      state.SkipWithError(err.message);
      break;
    }
  }
  runtime.close();  // the end of the job writes what is still buffered (not timed)
}
BENCHMARK(BM_SummaryRecordThroughService);

// The same record straight into the writer, without the service entry (for comparison).
void BM_SummaryRecordIntoWriter(benchmark::State& state) {
  bench::ScratchFolder folder("writer", scratch_root());
  EventWriters writers;
  EventFileWriter& writer = writers.for_folder(folder.path());
  const std::string tag = "loss";
  int64_t step = 0;
  for (auto _ : state) writer.add_scalar(++step, tag, 0.5f);
  writers.flush_all();
}
BENCHMARK(BM_SummaryRecordIntoWriter);

// ---- one history row -------------------------------------------------------------------------

std::shared_ptr<const LoadedPlugin> builtin_plugin(const std::string& id) {
  // The built-in plugins sit in lib/hookhost/plugins of the same build as the bench plugins.
  static const fs::path dir =
      fs::path(HOOKHOST_BENCH_PLUGIN_DIR).parent_path() / "lib/hookhost/plugins";
  DiscoveryResult found = discover_plugins({dir});
  const DiscoveredPlugin* p = found.find(id);
  if (!p) throw std::runtime_error(id + " plugin not found in " + dir.string());
  return load_plugin(*p);
}

// One runtime step with a single hook, `plugin_id` with `params`, or none when empty.
void run_steps(benchmark::State& state, const std::string& plugin_id,
               const std::multimap<std::string, std::string>& params) {
  bench::ScratchFolder folder("steps", scratch_root());
  CountingSession session;
  Runtime runtime(session, quiet_options(folder.path()));
  if (!plugin_id.empty()) {
    auto plugin =
        plugin_id == "bench_noop" ? hookhost::bench::noop_plugin() : builtin_plugin(plugin_id);
    runtime.add_hook(plugin, {"hook", 0, FailurePolicy::fail},
                     resolve_params(plugin->metadata(), "hook", params));
  }
  if (!runtime.start()) {
    state.SkipWithError("the runtime did not start");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(runtime.run());
  const JobResult result = runtime.close();  // history_saver's end() writes the rest (not timed)
  if (result.outcome == Outcome::failed) state.SkipWithError(result.reason.c_str());
}

void BM_RuntimeStepNoHooks(benchmark::State& state) {
  run_steps(state, "", {});
}
BENCHMARK(BM_RuntimeStepNoHooks);

// The floor of a row: the hook's two calls and its fetch of `loss`, writing nothing.
void BM_RuntimeStepHookFetchingLoss(benchmark::State& state) {
  run_steps(state, "bench_noop", {{"fetch", "loss"}});
}
BENCHMARK(BM_RuntimeStepHookFetchingLoss);

// history_saver recording `loss` at every step: one CSV row per step.
void BM_RuntimeStepHistoryRow(benchmark::State& state) {
  run_steps(state, "history_saver", {{"every_n_steps", "1"}, {"path", "history.csv"}});
}
BENCHMARK(BM_RuntimeStepHistoryRow);

}  // namespace

int main(int argc, char** argv) {
  hookhost::bench::TimesReporter reporter;
  if (!hookhost::bench::run_benchmarks(argc, argv, reporter)) return 1;

  // A record's whole cost on the calling thread is the service call.
  const double record = reporter.ns("BM_SummaryRecordThroughService");
  // A row's cost on the step path: what the hook adds to a bare runtime step (its two calls, its
  // fetch and the row).
  const double with_row = reporter.ns("BM_RuntimeStepHistoryRow");
  const double bare = reporter.ns("BM_RuntimeStepNoHooks");
  std::printf("\n");
  if (reporter.has("BM_MemcpyEventRecord") && record >= 0)
    std::printf("  event record: %.1f ns, %.1f x the memcpy of its bytes (%.1f ns)\n", record,
                record / reporter.ns("BM_MemcpyEventRecord"), reporter.ns("BM_MemcpyEventRecord"));
  if (with_row >= 0 && bare >= 0 && reporter.has("BM_RuntimeStepHookFetchingLoss"))
    std::printf(
        "  history row: %.1f ns added to the step; a hook fetching loss and writing "
        "nothing adds %.1f ns\n",
        with_row - bare, reporter.ns("BM_RuntimeStepHookFetchingLoss") - bare);
  if (record >= 0) hookhost::bench::report_goal("summary_record_ns", record, 1000);
  if (with_row >= 0 && bare >= 0)
    hookhost::bench::report_goal("history_row_ns", with_row - bare, 1000);
  return 0;
}
