// Runs the real hookhost binary for end-to-end tests: fork + exec with output captured to files.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace hookhost::testing {

inline fs::path hookhost_binary() {
  return fs::path(HOOKHOST_BINARY_DIR) / "bin" / "hookhost";
}

struct ProcessResult {
  int exit_code = -1;  // 128+N when killed by signal N
  std::string out;
  std::string err;
};

class Process {
 public:
  // Starts `program args...` (by default the hookhost program) in `cwd`; `env` entries
  // ("NAME=value") are added to the environment.
  Process(const std::vector<std::string>& args, const fs::path& cwd,
          const std::vector<std::string>& env = {}, const fs::path& program = {})
      : out_(cwd / ".stdout"), err_(cwd / ".stderr") {
    const fs::path binary = program.empty() ? hookhost_binary() : program;
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      if (::chdir(cwd.c_str()) != 0) ::_exit(126);
      int o = ::open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int e = ::open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int in = ::open("/dev/null", O_RDONLY);
      ::dup2(in, 0);
      ::dup2(o, 1);
      ::dup2(e, 2);
      for (const auto& kv : env) ::putenv(const_cast<char*>(kv.c_str()));
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(binary.c_str()));
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(binary.c_str(), argv.data());
      ::_exit(127);
    }
  }
  ~Process() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  void signal(int sig) { ::kill(pid_, sig); }
  pid_t pid() const { return pid_; }

  // Waits for the exit (killing the process after `limit`, which fails the caller's test).
  ProcessResult wait(std::chrono::seconds limit = std::chrono::seconds(120)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (true) {
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) break;
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        ADD_FAILURE() << "hookhost did not exit within " << limit.count() << " s";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    reaped_ = true;
    ProcessResult result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = read_file(out_);
    result.err = read_file(err_);
    return result;
  }

 private:
  fs::path out_, err_;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

inline ProcessResult run_hookhost(const std::vector<std::string>& args, const fs::path& cwd,
                                  const std::vector<std::string>& env = {}) {
  return Process(args, cwd, env).wait();
}

// Polls `ready` every 10 ms for at most `limit`; returns whether it became true.
inline bool wait_until(const std::function<bool()>& ready,
                       std::chrono::seconds limit = std::chrono::seconds(60)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return ready();
}

}  // namespace hookhost::testing
