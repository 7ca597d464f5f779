// Runs programs under the MPI launcher the build found (mpirun), for tests of distributed jobs.
#pragma once

#include <string>
#include <vector>

#include "process.hpp"

namespace hookhost::testing {

// Set for the launched job only: Open MPI refuses to run as root without the first two; one
// machine needs no network interfaces probed; in a sanitizer build LeakSanitizer would report
// Open MPI's own allocations at exit, not hookhost's (AddressSanitizer and UBSan stay on).
inline const std::vector<std::string> kMpiEnv = {
    "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_btl=self,vader",
    "OMPI_MCA_btl_vader_single_copy_mechanism=none", "ASAN_OPTIONS=detect_leaks=0"};

// Starts `mpirun --oversubscribe -np RANKS PROGRAM ARGS...` in `cwd`.
inline Process mpirun_process(int ranks, const fs::path& program,
                              const std::vector<std::string>& args, const fs::path& cwd) {
  std::vector<std::string> all = {"--oversubscribe", "-np", std::to_string(ranks),
                                  program.string()};
  all.insert(all.end(), args.begin(), args.end());
  return Process(all, cwd, kMpiEnv, HOOKHOST_MPIEXEC);
}

// `mpirun ... hookhost run RUN_ARGS...`, waited for.
inline ProcessResult mpirun_hookhost(int ranks, const std::vector<std::string>& run_args,
                                     const fs::path& cwd) {
  std::vector<std::string> args = {"run"};
  args.insert(args.end(), run_args.begin(), run_args.end());
  return mpirun_process(ranks, hookhost_binary(), args, cwd).wait();
}

}  // namespace hookhost::testing
