// What the out-of-process tier costs: one process-isolated no-op hook call against the floor of
// the mechanism it uses (a raw two-process ping-pong over the same SEQPACKET socketpair, with the
// same poll on the socket and the runner's pidfd), measured in the same run, plus a call that
// carries a 1 MiB fetched value, a whole runtime step with one sandboxed hook, and starting and
// stopping a runner.
// Each figure's ratio to the ping-pong floor is a counter (x_pingpong); the call with a value is
// also put next to its own floor, the same ping-pong plus one copy of the value into shared memory
// (x_copy_floor).
#include <benchmark/benchmark.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <hookhost/host/discovery.hpp>
#include <hookhost/host/loader.hpp>
#include <hookhost/host/runtime.hpp>
#include <map>
#include <optional>
#include <vector>

#include "bench_support.hpp"
#include "sandbox/channel.hpp"
#include "sandbox/process_dispatch.hpp"
#include "sandbox/runner_process.hpp"

namespace {

using namespace hookhost;
using hookhost::bench::CountingSession;
using hookhost::bench::f32_view;
using hookhost::bench::noop_plugin;
using Clock = std::chrono::steady_clock;

// Nanoseconds per iteration of the floor, once it has run.
double g_pingpong_ns = 0;
namespace fs = std::filesystem;

// Times the benchmark loop itself, so a figure can be put next to the floor as a counter.
class LoopTimer {
 public:
  explicit LoopTimer(benchmark::State& state) : state_(state), start_(Clock::now()) {}
  double ns_per_iteration() const {
    const auto ns = std::chrono::duration<double, std::nano>(Clock::now() - start_).count();
    return state_.iterations() ? ns / static_cast<double>(state_.iterations()) : 0;
  }

 private:
  benchmark::State& state_;
  Clock::time_point start_;
};

void ratio_to_floor(benchmark::State& state, const LoopTimer& timer) {
  if (g_pingpong_ns > 0) state.counters["x_pingpong"] = timer.ns_per_iteration() / g_pingpong_ns;
}

RuntimeOptions quiet_options() {
  RuntimeOptions options;
  options.logger =
      std::make_shared<spdlog::logger>("bench", std::make_shared<spdlog::sinks::null_sink_mt>());
  return options;
}

// How a sandboxed benchmark hook's runner is confined (the benchmarks' argument).
enum Confined : int64_t { kUnconfined = 0, kBaseline = 1, kPolicy = 2 };

// The sandbox options of `confined`: kPolicy is a hook's default policy (the system's runtime to
// read, one folder of its own to write, no network, no processes).
SandboxOptions sandbox_options(int64_t confined) {
  static const fs::path own = [] {
    const fs::path folder =
        fs::temp_directory_path() / ("hookhost-bench-" + std::to_string(::getpid()));
    fs::create_directories(folder);
    return folder;
  }();
  SandboxOptions options;
  options.confine = confined != kUnconfined;
  if (confined == kPolicy) {
    confine::CapabilityPolicy policy;
    policy.write = {own.string()};
    options.policy = policy;
  }
  return options;
}

// A runtime with `hooks` no-op hooks, sandboxed (confined as `confined` says) or not, each
// fetching `fetch` when not empty; `sandboxed_out` gets the first sandboxed dispatcher.
std::unique_ptr<Runtime> make_runtime(Session& session, int hooks, bool sandboxed,
                                      ProcessDispatch** sandboxed_out = nullptr,
                                      const std::string& fetch = "", int64_t confined = kBaseline) {
  auto rt = std::make_unique<Runtime>(session, quiet_options());
  auto plugin = noop_plugin();
  for (int i = 0; i < hooks; ++i) {
    const std::string name = "noop" + std::to_string(i);
    std::multimap<std::string, std::string> raw;
    if (!fetch.empty()) raw.emplace("fetch", fetch);
    const ResolvedParams params = resolve_params(plugin->metadata(), name, raw);
    if (!sandboxed) {
      rt->add_hook(plugin, {name, 0, FailurePolicy::disable}, params);
      continue;
    }
    HookSettings settings;
    settings.instance_name = name;
    rt->add_hook(
        plugin->metadata().id, plugin->entry().state_version, settings, [&](const hh_host& host) {
          auto d = make_process_dispatch(*plugin, name, params, host, sandbox_options(confined));
          if (sandboxed_out && !*sandboxed_out)
            *sandboxed_out = dynamic_cast<ProcessDispatch*>(d.get());
          return d;
        });
  }
  return rt;
}

// ---- the floor: a raw ping-pong with a runner in echo mode ----------------------------------

// A runner in --echo mode and the host's end of its channel.
struct EchoRunner {
  sandbox::RunnerProcess process;
  sandbox::Channel channel;

  static std::optional<EchoRunner> start(benchmark::State& state) {
    using namespace hookhost::sandbox;
    std::string tried;
    const auto program = find_runner_program({}, &tried);
    if (program.empty()) {
      state.SkipWithError(("hookhost-runner not found " + tried).c_str());
      return std::nullopt;
    }
    auto [mine, theirs] = Channel::make_pair();
    SpawnSpec spec;
    spec.program = program;
    spec.args = {"--parent-pid", std::to_string(::getpid()), "--echo"};
    spec.fds = {-1, -1, -1, theirs.get(), -1};
    return EchoRunner{
        RunnerProcess::spawn(spec), Channel(std::move(mine)), std::vector<std::byte>(64), {}};
  }

  // One 64-byte message there and back; false (the benchmark marked failed) when the runner went
  // away.
  bool round_trip(benchmark::State& state) {
    using namespace hookhost::sandbox;
    channel.send(MessageType::echo, 1, payload, kNoDeadline, process.pidfd());
    if (channel.receive(reply, kNoDeadline, process.pidfd()) == ChannelStatus::ok) return true;
    state.SkipWithError("the echo runner went away");
    return false;
  }

  void stop() {
    channel.close();
    process.wait_for_exit(std::chrono::seconds(2));
  }

  std::vector<std::byte> payload;  // 64 bytes
  sandbox::Message reply;
};

void BM_RawPingPong(benchmark::State& state) {
  auto echo = EchoRunner::start(state);
  if (!echo) return;
  LoopTimer timer(state);
  for (auto _ : state)
    if (!echo->round_trip(state)) break;
  g_pingpong_ns = timer.ns_per_iteration();
  echo->stop();
}
BENCHMARK(BM_RawPingPong)->UseRealTime();

// ---- one process-isolated no-op call ------------------------------------------------------

void BM_SandboxedNoopCall(benchmark::State& state) {
  CountingSession session;
  ProcessDispatch* hook = nullptr;
  auto rt = make_runtime(session, 1, true, &hook, "", state.range(0));
  hh_run_context ctx{};
  ctx.struct_size = HH_RUN_CONTEXT_SIZE;
  hh_run_request unused{};  // the no-op hook adds nothing
  LoopTimer timer(state);
  for (auto _ : state) benchmark::DoNotOptimize(hook->before_run(ctx, unused));
  ratio_to_floor(state, timer);
}
// confined: 0 none, 1 the baseline filter, 2 a hook's default capability policy.
BENCHMARK(BM_SandboxedNoopCall)->UseRealTime()->ArgName("confined")->Arg(0)->Arg(1)->Arg(2);

// ---- the floor of a call that carries a value: one copy into shared memory and a ping-pong
// -------

// Nanoseconds per iteration of the copy floor, once it has run.
double g_copy_floor_ns = 0;

// What any design that keeps the runner out of the host's memory must do per call with a value:
// copy it into memory the runner can see (a memfd mapping) and make one round trip.
void BM_RawPingPongWithCopy(benchmark::State& state) {
  using namespace hookhost::sandbox;
  const size_t bytes = static_cast<size_t>(state.range(0));
  UniqueFd memfd(::memfd_create("copy-floor", MFD_CLOEXEC));
  if (!memfd || ::ftruncate(memfd.get(), static_cast<off_t>(bytes)) != 0) {
    state.SkipWithError("memfd_create failed");
    return;
  }
  void* shared = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd.get(), 0);
  if (shared == MAP_FAILED) {
    state.SkipWithError("mmap failed");
    return;
  }
  const std::vector<float> data(bytes / sizeof(float), 1.5f);
  auto echo = EchoRunner::start(state);
  if (!echo) return;
  LoopTimer timer(state);
  for (auto _ : state) {
    std::memcpy(shared, data.data(), bytes);
    benchmark::ClobberMemory();
    if (!echo->round_trip(state)) break;
  }
  g_copy_floor_ns = timer.ns_per_iteration();
  ratio_to_floor(state, timer);
  echo->stop();
  ::munmap(shared, bytes);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_RawPingPongWithCopy)->UseRealTime()->Arg(1 << 20);

// ---- a call carrying one 1 MiB fetched value --------------------------------------------------

void BM_SandboxedCallWithValue(benchmark::State& state) {
  CountingSession session;
  ProcessDispatch* hook = nullptr;
  auto rt = make_runtime(session, 1, true, &hook);
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<float> data(bytes / sizeof(float), 1.5f);
  int64_t shape[1];
  const hh_tensor value = f32_view("weights", data, shape);
  hh_run_values values{};
  values.struct_size = HH_RUN_VALUES_SIZE;
  values.count = 1;
  values.tensors = &value;
  values.tensor_stride = sizeof(hh_tensor);
  hh_run_context ctx{};
  ctx.struct_size = HH_RUN_CONTEXT_SIZE;
  LoopTimer timer(state);
  for (auto _ : state) benchmark::DoNotOptimize(hook->after_run(ctx, values));
  ratio_to_floor(state, timer);
  if (g_copy_floor_ns > 0)
    state.counters["x_copy_floor"] = timer.ns_per_iteration() / g_copy_floor_ns;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_SandboxedCallWithValue)->UseRealTime()->Arg(1 << 20);

// ---- a whole runtime step: no hooks, one in-process hook, one sandboxed hook -----------------

void BM_RuntimeStep(benchmark::State& state) {
  CountingSession session;
  auto rt = make_runtime(session, static_cast<int>(state.range(0)), state.range(1) != 0);
  rt->start();
  LoopTimer timer(state);
  for (auto _ : state) benchmark::DoNotOptimize(rt->run());
  ratio_to_floor(state, timer);
}
BENCHMARK(BM_RuntimeStep)
    ->UseRealTime()
    ->ArgNames({"hooks", "sandboxed"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({1, 1});

// ---- one sandboxed hook fetching a value of 4 B to 64 MiB ----------------------------------

void BM_SandboxedStepFetch(benchmark::State& state) {
  hookhost::bench::ValuesSession session(static_cast<size_t>(state.range(0)));
  auto rt = make_runtime(session, 1, true, nullptr, "values");
  if (!rt->start()) {
    state.SkipWithError("the runtime did not start");
    return;
  }
  const std::vector<std::string> none;
  for (auto _ : state) benchmark::DoNotOptimize(rt->run(none));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_SandboxedStepFetch)
    ->UseRealTime()
    ->ArgName("bytes")
    ->Arg(4)
    ->Arg(4 << 10)
    ->Arg(4 << 20)
    ->Arg(64 << 20);

// ---- starting and stopping a runner: spawn, load, create, destroy, exit --------------------

void BM_RunnerStartAndStop(benchmark::State& state) {
  for (auto _ : state) {
    CountingSession session;
    auto rt = make_runtime(session, 1, true, nullptr, "", state.range(0));
    rt.reset();  // destroy: the instance is destroyed and the runner exits and is reaped
  }
}
BENCHMARK(BM_RunnerStartAndStop)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->ArgName("confined")
    ->Arg(0)
    ->Arg(1)
    ->Arg(2);

void report_goals(const hookhost::bench::TimesReporter& t) {
  std::printf("\n");
  const double floor = t.ns("BM_RawPingPong/real_time");
  const double call = t.ns("BM_SandboxedNoopCall/confined:0/real_time");
  if (floor > 0 && call >= 0) {
    std::printf("sandbox: one no-op call %.0f ns, the raw ping-pong %.0f ns\n", call, floor);
    hookhost::bench::report_goal("sandbox_call_x_pingpong", call / floor, 2.0);
  }
  // Confinement against the unconfined runner of the same run.
  const double baseline_call = t.ns("BM_SandboxedNoopCall/confined:1/real_time");
  const double policy_call = t.ns("BM_SandboxedNoopCall/confined:2/real_time");
  if (call > 0 && policy_call > 0) {
    std::printf(
        "confinement: a no-op call %.0f ns unconfined, %.0f ns with the baseline filter, "
        "%.0f ns with a capability policy\n",
        call, baseline_call, policy_call);
    hookhost::bench::report_goal("confined_call_x_unconfined", policy_call / call, 1.1);
  }
  const double start = t.ns("BM_RunnerStartAndStop/confined:0/real_time");
  const double policy_start = t.ns("BM_RunnerStartAndStop/confined:2/real_time");
  if (start > 0 && policy_start > 0) {
    std::printf("confinement: runner start and stop %.2f ms unconfined, %.2f ms confined\n",
                start / 1e6, policy_start / 1e6);
    hookhost::bench::report_goal("confined_start_extra_ms", (policy_start - start) / 1e6, 5.0);
  }
  hookhost::bench::report_values_goal(t, "sandbox values", "BM_SandboxedStepFetch", "/real_time",
                                      "values_sandbox_64mib_x_4b");
}

}  // namespace

int main(int argc, char** argv) {
  return hookhost::bench::run_and_report(argc, argv, report_goals);
}
