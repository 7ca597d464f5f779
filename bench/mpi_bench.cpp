// What a distributed job's coordination costs per step: an empty runtime step over a workload
// that does nothing (so all that is left is the step boundary's agreement, one 8-byte allreduce,
// and the runtime's own work) against a raw 8-byte MPI_Allreduce in the same processes,
// for 1, 2, 4 and 8 processes. Goal: the agreement adds nothing beyond that one allreduce (at
// most 1.2x it), and with one process a step costs what it costs without MPI.
//
// Run without arguments, the program is the driver: it starts `mpirun -np N` of itself for each
// N (with the variables Open MPI needs to run as root, for those runs only) and prints the table
// and the goal lines. Under mpirun it is a worker: every rank runs the same benchmarks with fixed
// iteration counts (Google Benchmark's adaptive counts would differ between ranks and leave
// collectives unmatched); rank 0 reports.
#include <benchmark/benchmark.h>
#include <mpi.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include <hookhost/host/mpi.hpp>
#include <hookhost/host/runtime.hpp>

#include "bench_support.hpp"

namespace {

using hookhost::Runtime;
using hookhost::RuntimeOptions;

constexpr int64_t kIterations = 20000;
std::shared_ptr<hookhost::Communicator> g_comm;

// The floor: what one small collective costs between these processes.
void BM_RawAllreduce8B(benchmark::State& state) {
  int64_t value = 1, sum = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  for (auto _ : state) {
    MPI_Allreduce(&value, &sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    benchmark::DoNotOptimize(sum);
  }
}

// A runtime step with no hooks: the boundary's agreement plus the runtime's own work. `with_comm`
// 0 runs the same runtime without a communicator (the one-process job).
void BM_RuntimeStep(benchmark::State& state) {
  const bool with_comm = state.range(0) != 0;
  hookhost::bench::CountingSession session;
  RuntimeOptions options;
  options.run_dir = std::filesystem::temp_directory_path();
  options.logger =
      std::make_shared<spdlog::logger>("bench", std::make_shared<spdlog::sinks::null_sink_mt>());
  if (with_comm) options.communicator = g_comm;
  Runtime runtime(session, options);
  runtime.start();
  MPI_Barrier(MPI_COMM_WORLD);
  for (auto _ : state) {
    hookhost::RunOutput out = runtime.run();
    benchmark::DoNotOptimize(out);
  }
  runtime.close();
}

BENCHMARK(BM_RawAllreduce8B)->Iterations(kIterations)->Repetitions(3)->UseRealTime();
BENCHMARK(BM_RuntimeStep)->Arg(1)->Arg(0)->Iterations(kIterations)->Repetitions(3)->UseRealTime();

class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

int worker(int argc, char** argv) {
  hookhost::MpiEnvironment mpi;
  g_comm = hookhost::mpi_communicator(MPI_COMM_WORLD);
  benchmark::Initialize(&argc, argv);
  if (g_comm->rank() != 0) {
    NullReporter quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
    return 0;
  }
  hookhost::bench::TimesReporter times;
  benchmark::RunSpecifiedBenchmarks(&times);
  std::printf("result ranks=%d raw_ns=%.1f step_ns=%.1f plain_step_ns=%.1f\n", g_comm->size(),
              times.ns("BM_RawAllreduce8B/iterations:20000/repeats:3/real_time"),
              times.ns("BM_RuntimeStep/1/iterations:20000/repeats:3/real_time"),
              times.ns("BM_RuntimeStep/0/iterations:20000/repeats:3/real_time"));
  std::fflush(stdout);
  g_comm.reset();
  return 0;
}

struct Figures {
  double raw = -1, step = -1, plain = -1;
};

// Runs `mpirun -np ranks` of this program and reads rank 0's result line.
Figures run_workers(const std::string& self, int ranks) {
  const std::string command = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " +
                              std::string(HOOKHOST_MPIEXEC) + " --oversubscribe -np " +
                              std::to_string(ranks) + " " + self +
                              " --worker --benchmark_color=false";
  Figures f;
  FILE* out = ::popen(command.c_str(), "r");
  if (!out) return f;
  char line[4096];
  while (std::fgets(line, sizeof line, out)) {
    std::fputs(line, stdout);
    int n = 0;
    if (const char* result = std::strstr(line, "result ranks="))
      std::sscanf(result, "result ranks=%d raw_ns=%lf step_ns=%lf plain_step_ns=%lf", &n, &f.raw,
                  &f.step, &f.plain);
  }
  ::pclose(out);
  return f;
}

int driver(const std::string& self) {
  std::map<int, Figures> by_ranks;
  for (int ranks : {1, 2, 4, 8}) {
    std::printf("== %d process(es) ==\n", ranks);
    std::fflush(stdout);
    by_ranks[ranks] = run_workers(self, ranks);
  }
  // With one process the step makes no collective: its floor is the same step without MPI.
  std::printf("\n%-6s %16s %18s %22s %8s\n", "ranks", "allreduce 8 B ns", "runtime step ns",
              "step without MPI ns", "ratio");
  for (const auto& [ranks, f] : by_ranks)
    std::printf(
        "%-6d %16.1f %18.1f %22.1f %8.2f\n", ranks, f.raw, f.step, f.plain,
        ranks == 1 ? (f.plain > 0 ? f.step / f.plain : -1.0) : (f.raw > 0 ? f.step / f.raw : -1.0));
  bool measured = false;
  for (int ranks : {2, 4, 8}) {
    const Figures& f = by_ranks[ranks];
    if (f.raw <= 0 || f.step <= 0) continue;
    measured = true;
    hookhost::bench::report_goal("mpi_step_x_allreduce_" + std::to_string(ranks) + "_ranks",
                                 f.step / f.raw, 1.2);
  }
  const Figures& one = by_ranks[1];
  if (one.step > 0 && one.plain > 0) {
    measured = true;
    // A communicator of one process is dropped: the step must cost what it costs without one.
    hookhost::bench::report_goal("mpi_one_rank_added_ns_per_step",
                                 std::max(0.0, one.step - one.plain), 2.0);
  }
  return measured ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--worker") return worker(argc, argv);
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 1;
  self[n] = '\0';
  return driver(self);
}
