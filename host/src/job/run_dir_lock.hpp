// One job per run directory: an flock on <run_dir>/.hookhost.lock, held while the job runs and
// released by the kernel when the process ends in any way (a SIGKILL included), so no stale lock
// is ever left behind.
#pragma once

#include <filesystem>

#include "support/unique_fd.hpp"

namespace hookhost {

class RunDirLock {
 public:
  // Takes the lock, or throws ConfigError naming the run directory and the pid of the job that
  // holds it. The folder must exist.
  explicit RunDirLock(const std::filesystem::path& run_dir);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

 private:
  UniqueFd fd_;  // closing it releases the lock
};

}  // namespace hookhost
