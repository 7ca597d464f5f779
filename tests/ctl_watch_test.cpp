// hookhost ctl RUN_DIR status --watch against a real running job: on a terminal each status
// replaces the last until Ctrl-C; into a file the statuses follow one another until the job ends;
// without a job it fails at once.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "control/server.hpp"
#include "control/token.hpp"
#include "process.hpp"
#include "support/unique_fd.hpp"
#include "test_support.hpp"

extern char** environ;

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr const char* kClearScreen = "\x1b[H\x1b[2J";  // what watch writes before each status

// A job slow enough to watch: 5 ms per step, no end in sight but the stop asked for.
std::string slow_job() {
  return "[run]\nrun_dir = run\n"
         "[workload]\nname = linreg\nepochs = 0\nstep_delay_ms = 5\n"
         "[hook.stop]\nplugin = stop_at_step\nlast_step = 1000000\n";
}

// The global step a status names ("job: running, global step N ..."); -1 when it names none.
int64_t step_in(const std::string& status) {
  std::smatch m;
  if (!std::regex_search(status, m, std::regex("global step (\\d+)"))) return -1;
  return std::stoll(m[1]);
}

std::vector<std::string> split(const std::string& text, const std::string& separator) {
  std::vector<std::string> pieces;
  std::size_t start = 0;
  for (std::size_t at; (at = text.find(separator, start)) != std::string::npos;
       start = at + separator.size())
    pieces.push_back(text.substr(start, at - start));
  pieces.push_back(text.substr(start));
  return pieces;
}

// The statuses a terminal was shown, without the terminal's '\r's: the text after each clear
// that the next clear has closed (the last one may still be arriving).
std::vector<std::string> whole_terminal_frames(const std::string& output) {
  std::string text;
  for (char c : output)
    if (c != '\r') text += c;
  std::vector<std::string> pieces = split(text, kClearScreen);
  if (pieces.size() < 3) return {};
  return {pieces.begin() + 1, pieces.end() - 1};
}

// hookhost with stdin, stdout and stderr on the slave of a new pseudo-terminal, as in a shell
// window; the test reads what it shows from the master. posix_spawn, not fork: no copy of the
// test process runs between the two.
class TerminalProcess {
 public:
  explicit TerminalProcess(const std::vector<std::string>& args) {
    master_ = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master_ < 0) throw std::runtime_error(std::string("posix_openpt: ") + std::strerror(errno));
    char slave[128];
    if (::grantpt(master_) != 0 || ::unlockpt(master_) != 0 ||
        ::ptsname_r(master_, slave, sizeof slave) != 0) {
      ::close(master_);
      throw std::runtime_error(std::string("pseudo-terminal: ") + std::strerror(errno));
    }
    posix_spawn_file_actions_t files;
    ::posix_spawn_file_actions_init(&files);
    ::posix_spawn_file_actions_addopen(&files, STDIN_FILENO, slave, O_RDWR, 0);
    ::posix_spawn_file_actions_adddup2(&files, STDIN_FILENO, STDOUT_FILENO);
    ::posix_spawn_file_actions_adddup2(&files, STDIN_FILENO, STDERR_FILENO);
    // SIGINT as a shell leaves it (the test runner may have it blocked or ignored).
    posix_spawnattr_t attributes;
    ::posix_spawnattr_init(&attributes);
    sigset_t none, interrupt;
    ::sigemptyset(&none);
    ::sigemptyset(&interrupt);
    ::sigaddset(&interrupt, SIGINT);
    ::posix_spawnattr_setsigmask(&attributes, &none);
    ::posix_spawnattr_setsigdefault(&attributes, &interrupt);
    ::posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    const std::string binary = hookhost_binary().string();
    std::vector<char*> argv = {const_cast<char*>(binary.c_str())};
    for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    const int error =
        ::posix_spawn(&pid_, binary.c_str(), &files, &attributes, argv.data(), environ);
    ::posix_spawn_file_actions_destroy(&files);
    ::posix_spawnattr_destroy(&attributes);
    if (error != 0) {
      ::close(master_);
      throw std::runtime_error(std::string("posix_spawn: ") + std::strerror(error));
    }
  }
  ~TerminalProcess() {
    if (!reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(master_);
  }
  TerminalProcess(const TerminalProcess&) = delete;
  TerminalProcess& operator=(const TerminalProcess&) = delete;

  void signal(int sig) { ::kill(pid_, sig); }
  const std::string& output() const { return output_; }

  // Reads the terminal until `done` holds; false if it did not by `limit`.
  bool read_until(const std::function<bool()>& done,
                  std::chrono::seconds limit = std::chrono::seconds(60)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      read_for(std::chrono::milliseconds(100));
    }
    return true;
  }

  // Waits for the exit, reading the terminal meanwhile (a full terminal would block the
  // process); its exit code, or 128+N for signal N. Kills it after `limit`, failing the test.
  int wait(std::chrono::seconds limit = std::chrono::seconds(60)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) != pid_) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        ADD_FAILURE() << "hookhost did not exit within " << limit.count() << " s";
        break;
      }
      read_for(std::chrono::milliseconds(50));
    }
    reaped_ = true;
    // What it wrote last, up to the end of the terminal (its last slave descriptor is closed).
    while (read_for(std::chrono::milliseconds(500))) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  // Appends what the terminal shows within `wait`; false at its end (EIO once the slave is
  // closed) or when nothing came.
  bool read_for(std::chrono::milliseconds wait) {
    pollfd ready{master_, POLLIN, 0};
    const int n = ::poll(&ready, 1, static_cast<int>(wait.count()));
    if (n <= 0) return false;
    char buffer[4096];
    const ssize_t got = ::read(master_, buffer, sizeof buffer);
    if (got <= 0) return false;
    output_.append(buffer, static_cast<std::size_t>(got));
    return true;
  }

  int master_ = -1;
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::string output_;
};

class CtlWatchTest : public ::testing::Test {
 protected:
  fs::path run_dir() const { return root_ / "run"; }

  // Starts the job and waits until it answers hookhost ctl.
  std::unique_ptr<Process> start_job() {
    write_file(root_ / "job.ini", slow_job());
    auto job = std::make_unique<Process>(
        std::vector<std::string>{"run", "--config", (root_ / "job.ini").string()}, root_.path());
    EXPECT_TRUE(
        wait_until([&] { return ctl({"status"}).exit_code == 0; }, std::chrono::seconds(60)))
        << read_file(root_ / ".stderr");
    return job;
  }

  // A folder of its own for one hookhost ctl process (Process writes .stdout and .stderr there).
  fs::path client_dir() {
    const fs::path cwd = root_ / ("ctl-" + std::to_string(next_client_++));
    fs::create_directories(cwd);
    return cwd;
  }

  ProcessResult ctl(const std::vector<std::string>& request) {
    std::vector<std::string> args = {"ctl", run_dir().string()};
    args.insert(args.end(), request.begin(), request.end());
    return run_hookhost(args, client_dir());
  }

  std::vector<std::string> watch_args(const fs::path& dir) const {
    return {"ctl", dir.string(), "status", "--watch", "--interval", "0.2"};
  }

  TempDir root_;
  int next_client_ = 0;
};

TEST_F(CtlWatchTest, OnATerminalEachStatusReplacesTheLastUntilCtrlC) {
  auto job = start_job();
  TerminalProcess watch(watch_args(run_dir()));
  // Three whole statuses, the newest at a later step than the first: the job runs meanwhile.
  const bool refreshed = watch.read_until([&] {
    const std::vector<std::string> frames = whole_terminal_frames(watch.output());
    return frames.size() >= 3 && step_in(frames.back()) > step_in(frames.front());
  });
  ASSERT_TRUE(refreshed) << watch.output();
  EXPECT_THAT(watch.output(), StartsWith(kClearScreen));  // cleared before the first status too
  const std::vector<std::string> frames = whole_terminal_frames(watch.output());
  for (const std::string& frame : frames) {
    EXPECT_THAT(frame, AllOf(StartsWith("job: running, global step "),
                             HasSubstr("newest checkpoint: "), HasSubstr("stop_at_step")));
    EXPECT_EQ(count_occurrences(frame, "job: "), 1) << frame;  // one status per clear
  }
  EXPECT_GE(step_in(frames.front()), 0);

  watch.signal(SIGINT);
  EXPECT_EQ(watch.wait(), 0) << watch.output();
  EXPECT_THAT(watch.output(), Not(HasSubstr("no longer answers")));
  // The job went on: the interrupt was the watch's alone.
  EXPECT_EQ(ctl({"status"}).exit_code, 0);

  EXPECT_EQ(ctl({"stop", "--reason", "test done"}).exit_code, 0);
  const ProcessResult done = job->wait();
  EXPECT_EQ(done.exit_code, 0) << done.err;
}

TEST_F(CtlWatchTest, IntoAFileStatusesFollowOneAnotherAndTheWatchEndsWithTheJob) {
  auto job = start_job();
  const fs::path cwd = client_dir();
  Process watch(watch_args(run_dir()), cwd);
  // A frame after the first begins after a blank line.
  ASSERT_TRUE(wait_until([&] {
    return count_occurrences(read_file(cwd / ".stdout"), "\n\njob: ") >= 2;
  })) << read_file(cwd / ".stdout");

  EXPECT_EQ(ctl({"stop", "--reason", "test done"}).exit_code, 0);
  const ProcessResult done = job->wait();
  EXPECT_EQ(done.exit_code, 0) << done.err;
  const ProcessResult watched = watch.wait(std::chrono::seconds(60));
  EXPECT_EQ(watched.exit_code, 0) << watched.err;
  EXPECT_EQ(watched.err, "");
  EXPECT_THAT(watched.out, Not(HasSubstr("\x1b[")));

  const std::vector<std::string> lines = lines_of(watched.out);
  ASSERT_FALSE(lines.empty());
  EXPECT_THAT(lines.back(), AllOf(StartsWith("hookhost ctl: the job no longer answers ("),
                                  HasSubstr("no job is running in " + run_dir().string())));
  // Everything before that line is statuses, one between each pair of blank lines.
  const std::string statuses = watched.out.substr(0, watched.out.size() - lines.back().size() - 1);
  const std::vector<std::string> frames = split(statuses, "\n\n");
  ASSERT_GE(frames.size(), 3u) << watched.out;
  EXPECT_THAT(frames.front(), StartsWith("job: running, global step "));
  for (const std::string& frame : frames) {
    EXPECT_THAT(frame, AllOf(StartsWith("job: "), HasSubstr("newest checkpoint: ")));
    EXPECT_EQ(count_occurrences(frame, "job: "), 1) << frame;
  }
  EXPECT_GT(step_in(frames[frames.size() - 1]), step_in(frames.front()));
}

TEST_F(CtlWatchTest, CtrlCEndsAWatchThatWaitsForAnAnswerAtOnce) {
  // A job that takes the request and does not answer (busy with a long change): a listener with
  // the job's token that never replies.
  fs::create_directories(run_dir());
  UniqueFd folder(::open(run_dir().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(folder);
  control::write_token(folder.get());
  UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string name = control::socket_address_in(folder.get());
  std::memcpy(address.sun_path, name.c_str(), name.size() + 1);
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener.get(), 4), 0);

  // Its --timeout is far beyond the test's wait: only the interrupt can end it in time.
  TerminalProcess watch({"ctl", run_dir().string(), "status", "--watch", "--timeout", "600000"});
  pollfd incoming{listener.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&incoming, 1, 60000), 1) << watch.output();
  UniqueFd connection(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_TRUE(connection);
  // The request came whole (the token's line, then "status"): the client now waits.
  std::string request;
  char buffer[512];
  while (request.find("status\n") == std::string::npos) {
    const ssize_t n = ::read(connection.get(), buffer, sizeof buffer);
    ASSERT_GT(n, 0);
    request.append(buffer, static_cast<std::size_t>(n));
  }
  watch.signal(SIGINT);
  EXPECT_EQ(watch.wait(std::chrono::seconds(30)), 0) << watch.output();
  EXPECT_THAT(watch.output(), Not(HasSubstr("did not answer")));
  control::remove_token(folder.get());
}

TEST_F(CtlWatchTest, WithoutARunningJobTheFirstRequestFailsWithNoStatus) {
  fs::create_directories(run_dir());  // a run directory whose job has ended: no socket
  const ProcessResult no_job = run_hookhost(watch_args(run_dir()), client_dir());
  EXPECT_EQ(no_job.exit_code, 1);
  EXPECT_EQ(no_job.out, "");
  EXPECT_THAT(no_job.err, StartsWith("hookhost ctl: no job is running in " + run_dir().string()));

  const ProcessResult no_folder = run_hookhost(watch_args(root_ / "nowhere"), client_dir());
  EXPECT_EQ(no_folder.exit_code, 1);
  EXPECT_EQ(no_folder.out, "");
  EXPECT_THAT(no_folder.err, AllOf(StartsWith("hookhost ctl: " + (root_ / "nowhere").string()),
                                   HasSubstr("name the run directory of a running job")));
}

// `hookhost ctl --help` tells the outcome a detached hook's end gets, as operations.md does.
TEST_F(CtlWatchTest, HelpSaysADetachedHooksEndHasOutcomeDetached) {
  const ProcessResult help = run_hookhost({"ctl", "--help"}, client_dir());
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_THAT(help.out, HasSubstr("end: outcome detached, reason \"detached: by hookhost"));
  EXPECT_THAT(help.out, HasSubstr("before ABI 1.6 gets outcome stopped"));
}

TEST_F(CtlWatchTest, AnIntervalOutOfRangeOrWatchWithAnotherRequestIsAUsageError) {
  fs::create_directories(run_dir());
  const ProcessResult too_often = run_hookhost(
      {"ctl", run_dir().string(), "status", "--watch", "--interval", "0.05"}, client_dir());
  EXPECT_EQ(too_often.exit_code, 2);
  EXPECT_THAT(too_often.err, HasSubstr("--interval is 0.1 to 3600 seconds"));
  const ProcessResult not_status =
      run_hookhost({"ctl", run_dir().string(), "checkpoint", "--watch"}, client_dir());
  EXPECT_EQ(not_status.exit_code, 2);
  EXPECT_THAT(not_status.err, HasSubstr("--watch goes with status"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
