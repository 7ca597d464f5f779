#include "check/load_probe.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <thread>

#include "hookhost/host/loader.hpp"
#include "runtime/crash_blame.hpp"
#include "sandbox/runner_process.hpp"
#include "support/unique_fd.hpp"

namespace hookhost::check {

namespace {

using Clock = std::chrono::steady_clock;

// The child's side: load, write one answer ("ok", or "refused:" and the loader's message), leave
// without running any exit handler of this process.
[[noreturn]] void load_in_child(const DiscoveredPlugin& plugin, int answer_fd) {
  // A constructor's crash must end the child by its signal, and its exit status come through as
  // it is: no crash blame line, no sanitizer report turning a signal into an exit status.
  CrashBlame::program_exits();
  for (int signal : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) {
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    ::sigaction(signal, &default_action, nullptr);
  }
  if (const UniqueFd null(::open("/dev/null", O_WRONLY | O_CLOEXEC)); null) {
    ::dup2(null.get(), STDOUT_FILENO);
    ::dup2(null.get(), STDERR_FILENO);
  }
  spdlog::default_logger()->set_level(spdlog::level::off);
  std::string answer;
  try {
    load_plugin(plugin);
    answer = "ok";
  } catch (const std::exception& e) {
    answer = std::string("refused:") + e.what();
  }
  for (size_t done = 0; done < answer.size();) {
    const ssize_t n = ::write(answer_fd, answer.data() + done, answer.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::syscall(SYS_exit_group, 0);
  __builtin_unreachable();
}

// Reads until end of file or `deadline`; false when the deadline passed first.
bool read_answer(int fd, Clock::time_point deadline, std::string* answer) {
  char buffer[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) return false;
    if (ready <= 0) continue;
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    answer->append(buffer, static_cast<size_t>(n));
  }
}

// The child's wait status, waiting at most `grace` before killing it; nullopt when it had to be
// killed.
std::optional<int> reap(pid_t pid, std::chrono::milliseconds grace) {
  const auto deadline = Clock::now() + grace;
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return std::nullopt;
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return std::nullopt;
}

}  // namespace

LoadProbeResult probe_load(const DiscoveredPlugin& plugin, std::chrono::milliseconds timeout) {
  auto [read_end, write_end] = open_pipe();
  if (!read_end)
    throw std::runtime_error(std::string("cannot load the plugin in a child: pipe: ") +
                             std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error(std::string("cannot load the plugin in a child: fork: ") +
                             std::strerror(errno));
  if (pid == 0) load_in_child(plugin, write_end.get());
  write_end.reset();

  std::string answer;
  const bool answered = read_answer(read_end.get(), Clock::now() + timeout, &answer);
  const std::optional<int> status =
      reap(pid, answered ? std::chrono::milliseconds(2000) : std::chrono::milliseconds(0));
  LoadProbeResult result;
  if (answered && answer == "ok") {
    result.loaded = true;
    return result;
  }
  constexpr std::string_view kRefused = "refused:";
  if (answered && answer.starts_with(kRefused)) {
    result.kind = "metadata";
    result.message = "the loader refused it: " + answer.substr(kRefused.size());
    return result;
  }
  if (!answered || !status) {
    result.kind = "hang";
    result.message = "loading it (its library constructors) did not finish within " +
                     std::to_string(timeout.count()) + " ms; the process was killed";
    return result;
  }
  result.kind = WIFSIGNALED(*status) ? "crash" : "exit";
  result.message = "the process loading it " + sandbox::describe_wait_status(*status) +
                   " while its library constructors ran";
  return result;
}

}  // namespace hookhost::check
