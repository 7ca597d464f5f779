// Who may steer a job through its control socket (docs/operations.md, "Who may control a job"):
// no hook, even one granted the network (refused by its runner's pid and by the control token
// it cannot read); a client without the token is refused; a set that widens what a hook may do
// needs --allow-widen; an idle client holds up no other; a shortage of descriptors does not make
// the server spin.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <regex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "control/client.hpp"
#include "control/server.hpp"
#include "control/token.hpp"
#include "process.hpp"
#include "support/unique_fd.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

long count(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator());
}

// Connects to `socket` (a path) and sends `bytes`; the reply, or "" (after `limit`) when none.
std::string ask_raw(const fs::path& socket, const std::string& bytes,
                    std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, socket.c_str(), sizeof address.sun_path - 1);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) return "";
  timeval tv{static_cast<time_t>(limit.count() / 1000),
             static_cast<suseconds_t>(limit.count() % 1000 * 1000)};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  (void)!::send(fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
  std::string reply;
  char buffer[1024];
  for (ssize_t n; (n = ::read(fd.get(), buffer, sizeof buffer)) > 0;)
    reply.append(buffer, static_cast<size_t>(n));
  return reply;
}

class ControlAccess : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root_ / "plugins");
    for (const char* name : {"hostile_control", "scripted"})
      copy_plugin(fixture_plugin(name), root_ / "plugins");
  }
  fs::path run_dir() const { return root_ / "run"; }

  // A hostile_control hook, sandboxed and granted the network, next to the lifecycle trace: one
  // epoch of linreg (4 steps), run to its end.
  ProcessResult run_hostile(const std::string& extra) {
    write_file(root_ / "job.ini",
               "[run]\nrun_dir = run\n\n[workload]\nname = linreg\nepochs = 1\n\n"
               "[hook.hostile]\nplugin = hostile_control\nisolation = process\n"
               "allow_network = true\n" +
                   extra + "\n[hook.trace]\nplugin = lifecycle_trace\norder = 1\n");
    ProcessResult r = run_hookhost({"run", "--config", (root_ / "job.ini").string(), "--plugin-dir",
                                    (root_ / "plugins").string(), "--fresh"},
                                   root_.path());
    r.out += r.err;
    return r;
  }

  // The hostile hook asked to stop the job and to leave its sandbox: nothing of it happened.
  void expect_nothing_happened(const ProcessResult& r) {
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_THAT(r.out, HasSubstr("job completed"));
    // Every step ran: the stop was not taken.
    const fs::path own = run_dir() / "hooks" / "trace" / "trace.jsonl";
    const std::string trace = read_file(fs::exists(own) ? own : run_dir() / "trace.jsonl");
    EXPECT_EQ(count(trace, "\"callback\":\\s*\"after_run\""), 4) << r.out;
    // Its one begin ran in its runner: the hook was not recreated in the host's process.
    EXPECT_EQ(count(r.out, "hostile: begin ran in "), 1) << r.out;
    EXPECT_THAT(r.out, HasSubstr("hostile: begin ran in hookhost-runner"));
    EXPECT_THAT(r.out, Not(HasSubstr("recreated with its saved state")));
    // Every request it made was answered with a refusal naming its runner, and logged so.
    EXPECT_EQ(count(r.out,
                    "hostile: control [^:]*: error refused: the peer \\(pid \\d+\\) is "
                    "hook 'hostile''s runner"),
              4)
        << r.out;
    EXPECT_GE(count(r.out,
                    "hookhost ctl: refused: the peer \\(pid \\d+\\) is hook 'hostile''s "
                    "runner"),
              4)
        << r.out;
  }

  // Starts a job that runs until stopped, and waits until it answers.
  std::unique_ptr<Process> start(const std::string& extra = "") {
    write_file(root_ / "job.ini",
               "[run]\nrun_dir = run\n[workload]\nname = linreg\nepochs = 0\nstep_delay_ms = 5\n"
               "[hook.stop]\nplugin = stop_at_step\nlast_step = 1000000\n" +
                   extra);
    auto job = std::make_unique<Process>(
        std::vector<std::string>{"run", "--config", (root_ / "job.ini").string(), "--plugin-dir",
                                 (root_ / "plugins").string()},
        root_.path());
    EXPECT_TRUE(
        wait_until([&] { return ctl({"status"}).exit_code == 0; }, std::chrono::seconds(60)))
        << read_file(root_ / ".stderr");
    return job;
  }
  ProcessResult ctl(const std::vector<std::string>& request) {
    const fs::path cwd = root_ / ("ctl-" + std::to_string(next_client_++));
    fs::create_directories(cwd);
    std::vector<std::string> args = {"ctl", run_dir().string()};
    args.insert(args.end(), request.begin(), request.end());
    return run_hookhost(args, cwd);
  }
  ProcessResult stop(Process& job) {
    EXPECT_EQ(ctl({"stop"}).exit_code, 0);
    return job.wait();
  }

  TempDir root_;
  std::atomic<int> next_client_{0};
};

TEST_F(ControlAccess, AConfinedHookGrantedTheNetworkCannotSteerTheJob) {
  const ProcessResult r = run_hostile("");
  expect_nothing_happened(r);
  // Its capability policy does not reach the token's folder (where Landlock is enforced).
  EXPECT_THAT(r.out, Not(HasSubstr("hostile: open(the control token): ok")));
}

// confine = off: the runner reads the token, so the refusal by its pid is what holds.
TEST_F(ControlAccess, AnUnconfinedRunnerThatReadsTheTokenIsStillRefusedByItsPid) {
  const ProcessResult r = run_hostile("confine = off\n");
  EXPECT_THAT(r.out, HasSubstr("hostile: open(the control token): ok"));
  expect_nothing_happened(r);
}

TEST_F(ControlAccess, AGrantThatReachesTheTokenIsRefused) {
  const ProcessResult r =
      run_hostile("allow_read = " + control::token_folder().parent_path().string() + "\n");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, AllOf(HasSubstr("allow_read"), HasSubstr("holds the job's control token")));
}

TEST_F(ControlAccess, AClientWithoutTheTokenIsRefusedAndTheOperatorIsAnswered) {
  auto job = start();
  struct stat st {};
  ASSERT_EQ(::stat(run_dir().c_str(), &st), 0);
  const fs::path token = control::token_folder() /
                         ("control-" + std::to_string(st.st_dev) + "-" + std::to_string(st.st_ino));
  ASSERT_EQ(::stat(control::token_folder().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat(token.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const fs::path socket = run_dir() / "control.sock";
  EXPECT_THAT(ask_raw(socket, "stop\n"), HasSubstr("error\nrefused: no valid control token"));
  EXPECT_THAT(ask_raw(socket, "token\t" + std::string(64, '0') + "\nstop\n"),
              HasSubstr("error\nrefused: no valid control token"));
  EXPECT_THAT(ask_raw(socket, "token\tshort\nstop\n"),
              HasSubstr("error\nrefused: no valid control token"));
  // The operator's hookhost ctl sends the token: answered, and the job still runs.
  const ProcessResult status = ctl({"status"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("job: running"));
  const ProcessResult done = stop(*job);
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_GE(count(done.err, "hookhost ctl: refused: no valid control token \\(the peer, pid " +
                                std::to_string(::getpid()) + ","),
            3)
      << done.err;
  EXPECT_FALSE(fs::exists(token));  // the job removed it
}

TEST_F(ControlAccess, ASetThatWidensAHookIsRefusedWithoutAllowWiden) {
  auto job = start("[hook.boxed]\nplugin = scripted\ntrace = " + (root_ / "boxed.txt").string() +
                   "\nisolation = process\nlimit_cpu_secs = 100\n");
  for (const auto& [change, key] : std::vector<std::pair<std::string, std::string>>{
           {"boxed.isolation=in_process", "boxed.isolation"},
           {"boxed.confine=off", "boxed.confine"},
           {"boxed.allow_network=true", "boxed.allow_network"},
           {"boxed.grant=declared", "boxed.grant"},
           {"boxed.allow_read=/usr/share", "boxed.allow_read"},
           {"boxed.limit_cpu_secs=1000", "boxed.limit_cpu_secs"},
           {"boxed.limit_cpu_secs=0", "boxed.limit_cpu_secs"}}) {
    const ProcessResult refused = ctl({"set", change});
    EXPECT_EQ(refused.exit_code, 2) << change << ": " << refused.err;
    EXPECT_THAT(refused.err, AllOf(HasSubstr("refused: this set widens what hook 'boxed' may do"),
                                   HasSubstr(key), HasSubstr("--allow-widen")))
        << change;
  }
  // Narrowing, or a parameter: no consent needed.
  ProcessResult ok = ctl({"set", "boxed.limit_cpu_secs=50"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  ok = ctl({"set", "boxed.fetch=loss"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  // The operator's consent: taken, and logged.
  ok = ctl({"set", "boxed.isolation=in_process", "--allow-widen"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("recreated with its saved state"));
  // in_process -> process narrows.
  ok = ctl({"set", "boxed.isolation=process"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  const ProcessResult done = stop(*job);
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_THAT(done.err, AllOf(HasSubstr("refused set hook.boxed.isolation=in_process: it widens "
                                        "boxed.isolation and came without --allow-widen"),
                              HasSubstr("widens boxed.isolation (--allow-widen given)")));
}

TEST_F(ControlAccess, TheClientSendsNothingToASocketAnotherUserServes) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to serve the socket as another user";
  // A shared folder (as /tmp) where another user's socket has the job's socket's name, and this
  // user's token for the folder is there (a job of this user ran there and was killed).
  const fs::path shared = root_ / "shared";
  fs::create_directories(shared);
  // The other user passes through the test's folder to the shared one.
  fs::permissions(root_.path(), fs::perms::others_exec, fs::perm_options::add);
  fs::permissions(shared, fs::perms::all | fs::perms::sticky_bit);
  UniqueFd folder(::open(shared.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(folder);
  control::write_token(folder.get());
  int ready[2];
  ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
  const pid_t other = ::fork();
  ASSERT_GE(other, 0);
  if (other == 0) {
    // The other user: serves the name, and exits 1 when anything arrives (else 0).
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) ::_exit(3);
    const int listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string name = (shared / control::kSocketName).string();
    std::memcpy(address.sun_path, name.c_str(), name.size() + 1);
    if (listener < 0 ||
        ::bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener, 4) != 0)
      ::_exit(4);
    (void)!::write(ready[1], "x", 1);
    const int connection = ::accept(listener, nullptr, nullptr);
    char byte;
    ::_exit(connection >= 0 && ::read(connection, &byte, 1) > 0 ? 1 : 0);
  }
  ::close(ready[1]);
  char byte;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  const ProcessResult r = run_hookhost({"ctl", shared.string(), "status"}, root_.path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("is served by uid 65534, not by you (uid 0): it is not your job's; "
                               "nothing was sent to it"));
  int status = 0;
  ASSERT_EQ(::waitpid(other, &status, 0), other);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  control::remove_token(folder.get());
}

TEST_F(ControlAccess, AnIdleClientHoldsUpNoOther) {
  auto job = start();
  const fs::path socket = run_dir() / "control.sock";
  UniqueFd idle(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, socket.c_str(), sizeof address.sun_path - 1);
  ASSERT_EQ(::connect(idle.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // accepted, and read from
  const auto started = std::chrono::steady_clock::now();
  const ProcessResult status = ctl({"status", "--timeout", "10000"});
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_LT(took, std::chrono::milliseconds(2500));
  // The idle one is told, at its own deadline, what a request is.
  char buffer[512];
  const ssize_t n = ::read(idle.get(), buffer, sizeof buffer);
  ASSERT_GT(n, 0);
  EXPECT_THAT(std::string(buffer, static_cast<size_t>(n)), HasSubstr("error\na request is"));
  EXPECT_EQ(stop(*job).exit_code, 0);
}

double cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// With no descriptor free, the queued connection cannot be accepted, and the listener stays
// readable: the server rests instead of polling it again at once, then serves it.
TEST(ControlServer, ADescriptorShortageDoesNotSpinTheServer) {
  TempDir dir;
  std::mutex mutex;
  std::vector<std::string> notes;
  control::Server::Options options;
  options.note = [&](const std::string& text) {
    std::lock_guard lock(mutex);
    notes.push_back(text);
  };
  control::Server server(
      dir.path(),
      [](const std::vector<std::string>&) {
        return control::Reply{true, "pong\n"};
      },
      std::move(options));
  UniqueFd folder(::open(dir.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  std::string why;
  const std::optional<std::string> token = control::read_token(folder.get(), &why);
  ASSERT_TRUE(token) << why;
  // The server's thread runs before the descriptors run out: its start is no part of the test
  // (and UBSan's check of a starting thread reads memory through a pipe it could not open then).
  ASSERT_EQ(control::send_request(dir.path(), {"ping"}, std::chrono::seconds(30)).text, "pong\n");
  UniqueFd client(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string name = control::socket_address_in(folder.get());
  std::memcpy(address.sun_path, name.c_str(), name.size() + 1);

  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit low = saved;
  low.rlim_cur = std::min<rlim_t>(saved.rlim_cur, 4096);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<UniqueFd> hoard;
  for (;;) {
    UniqueFd fd(::dup(0));
    if (!fd) break;
    hoard.push_back(std::move(fd));
  }
  ASSERT_EQ(errno, EMFILE);
  ASSERT_EQ(::connect(client.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  const double before = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double used = cpu_seconds() - before;
  hoard.clear();
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_LT(used, 0.3) << "the server spun on the listener";
  {
    std::lock_guard lock(mutex);
    ASSERT_FALSE(notes.empty());
    EXPECT_THAT(notes.front(), HasSubstr("cannot accept a connection: Too many open files"));
  }
  // Descriptors free again: the queued connection is served.
  const std::string request = "token\t" + *token + "\nstatus\n";
  ASSERT_EQ(::send(client.get(), request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  timeval tv{5, 0};
  ::setsockopt(client.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string reply;
  char buffer[256];
  for (ssize_t n; (n = ::read(client.get(), buffer, sizeof buffer)) > 0;)
    reply.append(buffer, static_cast<size_t>(n));
  EXPECT_EQ(reply, "ok\npong\n");
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
