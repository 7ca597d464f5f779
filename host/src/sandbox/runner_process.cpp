#include "runner_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "runner_registry.hpp"

namespace hookhost::sandbox {

namespace {

// The wait status of a child someone else reaped (SIGCHLD ignored, a waitpid(-1) elsewhere).
constexpr int kStatusUnknown = INT_MIN;

// Called through syscall(2): glibc before 2.36 has no wrappers.
int open_pidfd(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));  // close-on-exec by default
}
int send_signal(int pidfd, int signal) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0));
}

// A posix_spawn object, initialised and destroyed with its pair of functions.
template <class T, int (*Init)(T*), int (*Destroy)(T*)>
class SpawnObject {
 public:
  SpawnObject() { Init(&object_); }
  ~SpawnObject() { Destroy(&object_); }
  SpawnObject(const SpawnObject&) = delete;
  SpawnObject& operator=(const SpawnObject&) = delete;
  T* get() { return &object_; }

 private:
  T object_;
};
using FileActions = SpawnObject<posix_spawn_file_actions_t, ::posix_spawn_file_actions_init,
                                ::posix_spawn_file_actions_destroy>;
using SpawnAttributes =
    SpawnObject<posix_spawnattr_t, ::posix_spawnattr_init, ::posix_spawnattr_destroy>;

void check(int rc, const char* what) {
  if (rc != 0) throw std::runtime_error(std::string(what) + ": " + std::strerror(rc));
}

}  // namespace

std::string describe_wait_status(int status) {
  if (status == kStatusUnknown) return "ended (its exit status was collected elsewhere)";
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    const char* abbrev = ::sigabbrev_np(signal);
    const char* description = ::sigdescr_np(signal);
    std::string text = "was killed by signal " + std::to_string(signal);
    if (abbrev)
      text += std::string(" (SIG") + abbrev + (description ? std::string(", ") + description : "") +
              ")";
    return text;
  }
  return "ended with wait status " + std::to_string(status);
}

RunnerProcess RunnerProcess::spawn(const SpawnSpec& spec) {
  const std::string program = spec.program.string();
  auto fail = [&](const std::string& why) {
    return std::runtime_error("cannot start " + program + ": " + why);
  };
  // Sources above every target descriptor, so no dup2 overwrites the source of a later one (and
  // none is a no-op dup2 onto itself, which would keep its close-on-exec flag).
  const int floor = std::max<int>(10, static_cast<int>(spec.fds.size()));
  std::vector<UniqueFd> sources;
  for (int fd : spec.fds) {
    if (fd < 0) {
      sources.emplace_back();
      continue;
    }
    const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, floor);
    if (copy < 0) throw fail(std::string("dup: ") + std::strerror(errno));
    sources.emplace_back(copy);
  }

  FileActions actions;
  for (size_t target = 0; target < sources.size(); ++target) {
    const int to = static_cast<int>(target);
    if (sources[target])
      check(::posix_spawn_file_actions_adddup2(actions.get(), sources[target].get(), to),
            "posix_spawn_file_actions_adddup2");
    else
      check(::posix_spawn_file_actions_addopen(actions.get(), to, "/dev/null", O_RDWR, 0),
            "posix_spawn_file_actions_addopen");
  }
  // Whatever this process opened without close-on-exec stays out of the child.
  check(::posix_spawn_file_actions_addclosefrom_np(actions.get(), static_cast<int>(sources.size())),
        "posix_spawn_file_actions_addclosefrom_np");

  // No blocked signals (the host may block SIGINT/SIGTERM for a signal thread), default handlers,
  // and a process group of its own, so a terminal's Ctrl-C reaches the host only and the host
  // ends its hooks in order.
  SpawnAttributes attr;
  sigset_t none, all;
  ::sigemptyset(&none);
  ::sigfillset(&all);
  ::sigdelset(&all, SIGKILL);
  ::sigdelset(&all, SIGSTOP);
  check(::posix_spawnattr_setsigmask(attr.get(), &none), "posix_spawnattr_setsigmask");
  check(::posix_spawnattr_setsigdefault(attr.get(), &all), "posix_spawnattr_setsigdefault");
  check(::posix_spawnattr_setpgroup(attr.get(), 0), "posix_spawnattr_setpgroup");
  check(::posix_spawnattr_setflags(
            attr.get(), POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP),
        "posix_spawnattr_setflags");

  std::vector<std::string> argv_text{program};
  argv_text.insert(argv_text.end(), spec.args.begin(), spec.args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  // A clean environment: no LD_PRELOAD, LD_LIBRARY_PATH or anything else of the host's.
  std::vector<std::string> env_text;
  for (const auto& name : spec.keep_env)
    if (const char* value = std::getenv(name.c_str())) env_text.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = -1;
  const int rc =
      ::posix_spawn(&pid, program.c_str(), actions.get(), attr.get(), argv.data(), envp.data());
  if (rc != 0) throw fail(std::strerror(rc));
  RunnerProcess process;
  process.pid_ = pid;
  process.pidfd_.reset(open_pidfd(pid));  // -1 on a kernel before 5.3: waits then poll waitpid
  return process;
}

RunnerProcess::RunnerProcess(RunnerProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::move(other.pidfd_)),
      wait_status_(std::exchange(other.wait_status_, std::nullopt)) {}

RunnerProcess& RunnerProcess::operator=(RunnerProcess&& other) noexcept {
  if (this != &other) {
    if (started() && !reaped()) kill_and_reap();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::move(other.pidfd_);
    wait_status_ = std::exchange(other.wait_status_, std::nullopt);
  }
  return *this;
}

RunnerProcess::~RunnerProcess() {
  if (started() && !reaped()) kill_and_reap();
}

UniqueFd RunnerProcess::kill_handle() const {
  if (!pidfd_) return {};
  return UniqueFd(::fcntl(pidfd_.get(), F_DUPFD_CLOEXEC, 0));
}

bool RunnerProcess::kill_through(const UniqueFd& handle) {
  return handle && send_signal(handle.get(), SIGKILL) == 0;
}

bool RunnerProcess::try_reap(bool block) {
  if (reaped()) return true;
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
    if (r == pid_) break;
    if (r == 0) return false;
    if (errno == EINTR) continue;
    status = kStatusUnknown;  // ECHILD: reaped elsewhere
    break;
  }
  wait_status_ = status;
  pidfd_.reset();
  forget_runner(pid_);  // the pid may be another process's from now on
  return true;
}

std::optional<int> RunnerProcess::wait_for_exit(std::chrono::milliseconds timeout) {
  if (!started()) return std::nullopt;
  if (reaped()) return wait_status_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  if (pidfd_) {
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{pidfd_.get(), POLLIN, 0};
      const int n = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return std::nullopt;
      // Ended but not reaped, so its pid (the group's id) is not free yet: sweep up whatever it
      // started in its process group, then reap.
      ::kill(-pid_, SIGKILL);
      try_reap(true);
      return wait_status_;
    }
  }
  while (std::chrono::steady_clock::now() < deadline) {
    if (try_reap(false)) return wait_status_;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return try_reap(false) ? wait_status_ : std::nullopt;
}

bool RunnerProcess::dumping_core() const {
  if (!started() || reaped()) return false;
  std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("CoreDumping:", 0) == 0) return line.find('1') != std::string::npos;
  return false;
}

int RunnerProcess::kill_and_reap() {
  if (!started()) return 0;
  if (!reaped()) {
    if (!pidfd_ || send_signal(pidfd_.get(), SIGKILL) != 0) ::kill(pid_, SIGKILL);
    ::kill(-pid_, SIGKILL);  // and what it started in its process group (the pid is not free yet)
    try_reap(true);
  }
  return *wait_status_;
}

}  // namespace hookhost::sandbox
