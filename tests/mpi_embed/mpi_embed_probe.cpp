// An MPI program that embeds the hookhost runtime the way a user's training program would: it owns
// MPI and MPI_COMM_WORLD, makes a communicator of its own for hookhost, and keeps using its own
// collectives before, during and after the job. Run under mpirun by mpi_job_test.
//
//   mpi_embed_probe STEPS STOP_RANK STOP_AFTER RUN_DIR
// runs linreg until the runtime stops, with STOP_RANK asking for a stop after STOP_AFTER steps.
// Each rank prints one line: "rank R steps S global_step G outcome O reason <...> state <hash>".
#include <mpi.h>

#include <cstdio>
#include <functional>
#include <string>

#include <hookhost/host/mpi.hpp>
#include <hookhost/host/runtime.hpp>

#include "workloads/linreg.hpp"

int main(int argc, char** argv) {
  if (argc != 5) return 2;
  const int64_t steps = std::stoll(argv[1]);
  const int stop_rank = std::stoi(argv[2]);
  const int64_t stop_after = std::stoll(argv[3]);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int result = 0;
  {
    // The program's own traffic on MPI_COMM_WORLD, interleaved with hookhost's on its duplicate.
    int64_t mine = rank, total = 0;
    MPI_Allreduce(&mine, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);

    std::shared_ptr<hookhost::Communicator> comm = hookhost::mpi_communicator(MPI_COMM_WORLD);
    std::multimap<std::string, std::string> raw = {{"epochs", "0"}};
    auto session = hookhost::make_linreg_session(
        hookhost::resolve_params(hookhost::linreg_schema(), "workload", raw), comm);
    hookhost::RuntimeOptions options;
    options.run_dir = std::string(argv[4]) + "/rank-" + std::to_string(rank);
    options.communicator = comm;
    hookhost::Runtime runtime(*session, options);
    int64_t run = 0;
    if (runtime.start())
      while (!runtime.should_stop() && run < steps) {
        runtime.run({"loss"});
        ++run;
        if (rank == stop_rank && run == stop_after)
          runtime.request_stop(HH_STOP_CAUSE_HOST, "the embedding program asked");
        MPI_Allreduce(&mine, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
      }
    const hookhost::JobResult r = runtime.close();
    const std::size_t state = std::hash<std::string>{}(session->save_state());
    std::printf("rank %d steps %lld global_step %lld outcome %s reason <%s> state %zx total %lld\n",
                rank, static_cast<long long>(run), static_cast<long long>(r.global_step),
                hookhost::outcome_name(r.outcome), r.reason.c_str(), state,
                static_cast<long long>(total));
    std::fflush(stdout);
  }
  MPI_Finalize();
  return result;
}
