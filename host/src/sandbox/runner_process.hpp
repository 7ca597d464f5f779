// One child process: started with posix_spawn (the host never forks: a fork of a multi-threaded
// host copies locks held by other threads), watched through a pidfd, killed and reaped by its
// owner. The destructor kills and reaps a child that still runs, so no zombie is ever left.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "support/unique_fd.hpp"

namespace hookhost::sandbox {

struct SpawnSpec {
  std::filesystem::path program;
  std::vector<std::string> args;  // after argv[0]
  // The child's descriptors 0, 1, 2, ...: each a descriptor of this process (dup'ed into place), or
  // -1 for /dev/null. Every other descriptor is closed in the child.
  std::vector<int> fds;
  // Environment variables kept from this process when set (everything else is dropped).
  std::vector<std::string> keep_env = {"PATH", "HOME", "LANG", "TZ"};
};

// How a wait status reads in a message: "exited with status 3", "was killed by signal 11
// (SIGSEGV, Segmentation fault)".
std::string describe_wait_status(int status);

class RunnerProcess {
 public:
  // Throws std::runtime_error naming the program and the reason when it cannot be started.
  static RunnerProcess spawn(const SpawnSpec& spec);

  RunnerProcess() = default;
  RunnerProcess(RunnerProcess&& other) noexcept;
  RunnerProcess& operator=(RunnerProcess&& other) noexcept;
  ~RunnerProcess();

  pid_t pid() const { return pid_; }
  // Readable once the process has ended (-1 when the kernel has no pidfd_open).
  int pidfd() const { return pidfd_.get(); }
  bool started() const { return pid_ > 0; }
  bool reaped() const { return wait_status_.has_value(); }
  // The wait status once reaped.
  std::optional<int> wait_status() const { return wait_status_; }

  // Waits up to `timeout` for the process to end and reaps it; the wait status, or nothing when
  // it still runs.
  std::optional<int> wait_for_exit(std::chrono::milliseconds timeout);
  // SIGKILL (through the pidfd when there is one: never a recycled pid), then reaps. Returns the
  // wait status.
  int kill_and_reap();
  // True while the kernel writes its core dump (it crashed, and is not dead yet).
  bool dumping_core() const;
  // A duplicate of the pidfd, for another thread to kill this process through while its owner
  // waits on it (empty without pidfd support: a bare pid could be recycled once reaped).
  UniqueFd kill_handle() const;
  // SIGKILL through a kill_handle(); false when it was not sent (the process is already gone is
  // not an error the caller can act on).
  static bool kill_through(const UniqueFd& handle);

 private:
  bool try_reap(bool block);

  pid_t pid_ = -1;
  UniqueFd pidfd_;
  std::optional<int> wait_status_;
};

}  // namespace hookhost::sandbox
