// Confinement of sandboxed hooks (docs/isolation.md, "Confinement"): the hostile corpus
// (tests/hostile/) through the hookhost program, each plugin in a runner of its own next to a
// well-behaved sandboxed hook (lifecycle_trace, confined too, writing its own run folder). Under
// the default ([run] confine = sandboxed) every attempt outside the hook's capability policy is
// denied and named by the host, nothing it tried takes effect, and the job completes with every
// call of the other hook; the benign twin of each attempt, with the need granted, is allowed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <optional>
#include <regex>

#include "confine/kernel_support.hpp"
#include "process.hpp"
#include "support/sanitizer.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::HasSubstr;
using ::testing::Not;

long count(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator());
}

// A /proc/sys value, or -1 when the file is missing (the feature is not in this kernel).
int proc_sys(const char* path) {
  std::ifstream in(path);
  int value = -1;
  if (in) in >> value;
  return in ? value : -1;
}

class Confine : public ::testing::Test {
 protected:
  void SetUp() override {
    plugins_ = dir_ / "plugins";
    fs::create_directories(plugins_);
    for (const char* name : {"hostile_ptrace",
                             "hostile_kill",
                             "hostile_process_vm_readv",
                             "hostile_unshare",
                             "hostile_mount",
                             "hostile_bpf",
                             "hostile_keyctl",
                             "hostile_io_uring",
                             "confined_probe",
                             "hostile_read",
                             "hostile_write",
                             "hostile_connect",
                             "hostile_exec",
                             "hostile_fork_bomb",
                             "hostile_proc_mem",
                             "hostile_big_file",
                             "hostile_garbage",
                             "hostile_memfd",
                             "hostile_violation_flood",
                             "hostile_read_declared",
                             "hostile_write_declared",
                             "hostile_connect_declared",
                             "hostile_exec_declared",
                             "hostile_write_root",
                             "hostile_write_default",
                             "hostile_prlimit",
                             "hostile_chmod",
                             "hostile_setown",
                             "hostile_setpriority",
                             "hostile_syscall",
                             "hostile_unconfine",
                             "hostile_datagram"})
      copy_plugin(fixture_plugin(name), plugins_);
  }
  // linreg for one epoch (4 steps): the plugin, sandboxed, then the lifecycle trace, sandboxed.
  ProcessResult run(const std::string& plugin, const std::string& params,
                    const std::vector<std::string>& more = {}) {
    write_file(dir_ / "job.ini",
               "[run]\nrun_dir = run\nisolation = process\n\n[workload]\n"
               "name = linreg\nepochs = 1\n\n[hook.hostile]\nplugin = " +
                   plugin + "\n" + params +
                   "\n\n[hook.trace]\nplugin = lifecycle_trace\norder = 1\n");
    std::vector<std::string> args{"run",          "--config",        (dir_ / "job.ini").string(),
                                  "--plugin-dir", plugins_.string(), "--fresh"};
    args.insert(args.end(), more.begin(), more.end());
    ProcessResult r = run_hookhost(args, dir_.path());
    r.out += r.err;  // the hooks' log lines and the host's, in one text
    return r;
  }
  ProcessResult run_unconfined(const std::string& plugin, const std::string& params) {
    return run(plugin, params, {"--set", "run.confine=off"});
  }
  // The job ended as if nothing had happened: every step, the other hook's every call.
  void expect_job_intact(const ProcessResult& r) {
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_THAT(r.out, HasSubstr("job completed"));
    EXPECT_THAT(r.out, Not(HasSubstr("received SIG")));  // how the host names a signal it got
    // A confined hook's outputs are in its own run folder (an unconfined one's in the job's).
    const fs::path own = dir_ / "run" / "hooks" / "trace" / "trace.jsonl";
    const std::string trace = read_file(fs::exists(own) ? own : dir_ / "run" / "trace.jsonl");
    EXPECT_EQ(count(trace, "\"callback\":\\s*\"begin\""), 1);
    // One before_run more than steps: the one that finds the data at its end.
    EXPECT_EQ(count(trace, "\"callback\":\\s*\"before_run\""), 5);
    EXPECT_EQ(count(trace, "\"callback\":\\s*\"after_run\""), 4);
    EXPECT_EQ(count(trace, "\"callback\":\\s*\"end\""), 1);
  }

  TempDir dir_;
  fs::path plugins_;
};

struct Attempt {
  const char* plugin;
  const char* params;
  const char* what;  // as the plugin logs it
  const char* call;  // as the host names it
};

// The host's line for a denied attempt of the hook under test.
std::string denial(const Attempt& a) {
  return "hook 'hostile' (plugin '" + std::string(a.plugin) + "') tried to ";
}

// Signals to other processes: the call fails with EPERM, the host names it, the runner goes on.
const Attempt kSignalAttempts[] = {
    {"hostile_kill", "target = host\nsignal = 15", "signal 15 to host", "(kill, "},
    {"hostile_kill", "target = host_thread\nsignal = 15", "signal 15 to host_thread", "(tgkill, "},
    {"hostile_kill", "target = group\nsignal = 0", "signal 0 to group", "(kill, "},
    {"hostile_kill", "target = all\nsignal = 0", "signal 0 to all", "(kill, "},
};

TEST_F(Confine, ASignalToAnotherProcessFailsWithEpermIsNamedAndTheJobCompletesUntouched) {
  for (const Attempt& a : kSignalAttempts) {
    SCOPED_TRACE(std::string(a.plugin) + " " + a.params);
    const ProcessResult r = run(a.plugin, a.params);
    EXPECT_THAT(r.out, HasSubstr(std::string("hostile: ") + a.what +
                                 ": failed: EPERM (Operation not permitted)"));
    EXPECT_THAT(r.out, HasSubstr(denial(a)));
    EXPECT_THAT(r.out, HasSubstr(a.call));
    EXPECT_THAT(r.out, HasSubstr("denied by its capability policy"));
    expect_job_intact(r);
  }
}

// Calls no hook has a use for: the runner dies of SIGSYS before the call does anything, the host
// names the call, and on_crash applies (here: restarts, then the hook is disabled).
const Attempt kNeverAttempts[] = {
    {"hostile_ptrace", "allow_processes = true", "", "(ptrace"},
    {"hostile_process_vm_readv", "", "", "(process_vm_readv"},
    {"hostile_unshare", "", "", "(unshare"},
    {"hostile_mount", "", "", "(mount"},
    {"hostile_bpf", "", "", "(bpf"},
    {"hostile_keyctl", "", "", "(keyctl"},
    {"hostile_io_uring", "", "", "(io_uring_setup"},
};

TEST_F(Confine, ACallNoHookMayMakeKillsItsRunnerIsNamedOnceAndTheJobCompletesUntouched) {
  for (const Attempt& a : kNeverAttempts) {
    SCOPED_TRACE(a.plugin);
    const ProcessResult r = run(a.plugin, a.params);
    EXPECT_THAT(r.out, HasSubstr(denial(a)));
    EXPECT_THAT(r.out, HasSubstr(a.call));
    // Once per distinct attempt, however often the restarted hook tries again (a plugin that
    // first reads the host's /proc files gets that named too, as a read).
    EXPECT_EQ(count(r.out, "denied by its capability policy; the calling process was stopped"), 1)
        << r.out;
    EXPECT_THAT(r.out, HasSubstr("SIGSYS"));
    expect_job_intact(r);
  }
}

TEST_F(Confine, TheHostIsNeitherTracedNorSignalled) {
  // The hook's child dies of SIGSYS before ptrace does anything; the runner lives on.
  ProcessResult r = run("hostile_ptrace", "allow_processes = true");
  EXPECT_THAT(r.out, HasSubstr("hostile: ptrace(PTRACE_SEIZE, host): the child ended without an "
                               "answer"));
  EXPECT_THAT(r.out, HasSubstr("tried to attach a debugger to a process (ptrace, pid "));
  EXPECT_THAT(r.out, Not(HasSubstr("hostile: host TracerPid")));  // the host's /proc is closed
  expect_job_intact(r);
  // SIGTERM would stop the job after its step ("received SIGTERM"); expect_job_intact counts
  // every step and finds no word of it.
  r = run("hostile_kill", "target = host\nsignal = 15");
  expect_job_intact(r);
}

TEST_F(Confine, AFileOutsideThePolicyCannotBeReadUnlessAllowed) {
  const fs::path secret = dir_ / "secret" / "key.txt";
  fs::create_directories(secret.parent_path());
  write_file(secret, "the secret");
  ProcessResult r = run("hostile_read", "path = " + secret.string());
  EXPECT_THAT(r.out, HasSubstr("hostile: read " + secret.string() + ": failed: EACCES"));
  EXPECT_THAT(r.out, Not(HasSubstr("the secret")));
  EXPECT_THAT(r.out, HasSubstr("hook 'hostile' (plugin 'hostile_read') tried to read a file "
                               "(openat, " +
                               secret.string() +
                               "): denied by its capability policy (the call failed with "
                               "EACCES)"));
  expect_job_intact(r);
  // A file the policy lets it read but whose own permissions refuse it is not the policy's.
  if (::geteuid() != 0) {
    fs::permissions(secret, fs::perms::none);
    r = run("hostile_read", "path = " + secret.string() + "\nallow_read = " + secret.string());
    EXPECT_THAT(r.out, HasSubstr(": failed: EACCES"));
    EXPECT_THAT(r.out, Not(HasSubstr("denied by its capability policy")));
    fs::permissions(secret, fs::perms::owner_read | fs::perms::owner_write);
  }
  // The twin: the operator lets this hook read that file.
  r = run("hostile_read", "path = " + secret.string() + "\nallow_read = " + secret.string());
  EXPECT_THAT(r.out, HasSubstr("bytes: the secret): ok"));
  expect_job_intact(r);
  // The twin whose plugin declares it reads the file its parameter names.
  r = run("hostile_read_declared", "path = " + secret.string());
  EXPECT_THAT(r.out, HasSubstr("bytes: the secret): ok"));
  expect_job_intact(r);
}

TEST_F(Confine, AFileOutsideTheRunFolderCannotBeWrittenUnlessAllowed) {
  const fs::path elsewhere = dir_ / "elsewhere";
  fs::create_directories(elsewhere);
  ProcessResult r = run("hostile_write", "path = " + (elsewhere / "planted.txt").string());
  EXPECT_THAT(r.out, HasSubstr("planted.txt: failed: EACCES"));
  EXPECT_FALSE(fs::exists(elsewhere / "planted.txt"));
  EXPECT_THAT(r.out, HasSubstr("hook 'hostile' (plugin 'hostile_write') tried to write a file "
                               "(openat, " +
                               (elsewhere / "planted.txt").string() +
                               "): denied by its capability policy (the call failed with "
                               "EACCES)"));
  expect_job_intact(r);
  // Nor the job's own run folder, where the checkpoints and other hooks' outputs are.
  r = run("hostile_write", "path = " + (dir_ / "run" / "planted.txt").string());
  EXPECT_THAT(r.out, HasSubstr("planted.txt: failed: EACCES"));
  EXPECT_FALSE(fs::exists(dir_ / "run" / "planted.txt"));
  expect_job_intact(r);
  // Its own run folder, relative paths included, is its to write.
  r = run("hostile_write", "path = " + (dir_ / "run" / "hooks" / "hostile" / "mine.txt").string());
  EXPECT_THAT(r.out, HasSubstr("mine.txt: ok"));
  EXPECT_THAT(r.out, Not(HasSubstr("denied by its capability policy")));
  EXPECT_TRUE(fs::exists(dir_ / "run" / "hooks" / "hostile" / "mine.txt"));
  // The twin: the operator lets it write that folder.
  r = run("hostile_write", "path = " + (elsewhere / "planted.txt").string() +
                               "\nallow_write = " + elsewhere.string());
  EXPECT_THAT(r.out, HasSubstr("planted.txt: ok"));
  EXPECT_EQ(read_file(elsewhere / "planted.txt"), "written by hostile_write\n");
  expect_job_intact(r);
  // The twin whose plugin declares it writes the file its parameter names (its folder is made).
  r = run("hostile_write_declared", "path = " + (dir_ / "made" / "declared.txt").string());
  EXPECT_THAT(r.out, HasSubstr("declared.txt: ok"));
  EXPECT_THAT(r.out, Not(HasSubstr("denied by its capability policy")));
  EXPECT_EQ(read_file(dir_ / "made" / "declared.txt"), "written by hostile_write\n");
  expect_job_intact(r);
}

// `run --check` writes nothing: the folders a confined hook's write grants need (a declared file's,
// a missing allow_write file's) are made for the check's runners and gone after it; the job
// itself makes them.
TEST_F(Confine, ACheckLeavesNoFolderItMadeForAWriteGrant) {
  const fs::path declared = dir_ / "made" / "sub" / "declared.txt";
  const fs::path allowed = dir_ / "allowed" / "deeper" / "granted.txt";
  const std::string params = "path = " + declared.string() + "\nallow_write = " + allowed.string();
  ProcessResult r = run("hostile_write_declared", params, {"--check"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "made")) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "allowed")) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "run")) << r.out;
  // The same configuration run: both folders are made, the declared file written.
  r = run("hostile_write_declared", params);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(fs::is_directory(allowed.parent_path())) << r.out;
  EXPECT_EQ(read_file(declared), "written by hostile_write\n");
}

// An allow_write file that does not exist yet grants its whole folder (made for it), as
// configuration.md says: a file next to it may be written too.
TEST_F(Confine, AMissingAllowWriteFileGrantsItsWholeFolder) {
  const fs::path folder = dir_ / "outputs";
  ProcessResult r = run("hostile_write", "path = " + (folder / "sibling.txt").string() +
                                             "\nallow_write = " + (folder / "named.txt").string());
  EXPECT_THAT(r.out, HasSubstr("sibling.txt: ok"));
  EXPECT_EQ(read_file(folder / "sibling.txt"), "written by hostile_write\n");
  EXPECT_FALSE(fs::exists(folder / "named.txt"));
  expect_job_intact(r);
}

// The operator grants, never the plugin: a declared write everywhere, or a parameter's default that
// leaves the run folder, refuses the hook (exit 2, before any hook runs) naming the declaration
// and the key that grants it; the operator's grant = declared or allow_write grants it.
TEST_F(Confine, ADeclaredNeedBeyondTheRunFolderIsGrantedOnlyByTheOperator) {
  const fs::path elsewhere = dir_ / "elsewhere";
  fs::create_directories(elsewhere);
  const std::string target = (elsewhere / "planted.txt").string();
  ProcessResult r = run("hostile_write_root", "path = " + target);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(
      r.out,
      HasSubstr("job.ini:9: [hook.hostile]: hook 'hostile' (plugin 'hostile_write_root') asks for "
                "needs.write=/ (its plugin declares it), which no key of the "
                "configuration grants: grant it with allow_write = / in "
                "[hook.hostile], or with grant = declared; or set confine = off"));
  EXPECT_THAT(r.out, Not(HasSubstr("job completed")));
  EXPECT_FALSE(fs::exists(elsewhere / "planted.txt"));
  // A grant below what it declares grants none of it.
  r = run("hostile_write_root", "path = " + target + "\nallow_write = " + elsewhere.string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("asks for needs.write=/ "));
  // Not even the operator can grant everything: / holds the job's control token.
  r = run("hostile_write_root", "path = " + target + "\ngrant = declared");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("may write /, which holds the job's control token"));
  EXPECT_FALSE(fs::exists(elsewhere / "planted.txt"));

  // The default of a parameter the plugin declares it writes is the plugin's word too.
  r = run("hostile_write_default", "");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("asks for needs.write.param=path (its default "
                               "../../../outside.txt) (its plugin declares it), which no key of "
                               "the configuration grants: grant it with allow_write = " +
                               (dir_ / "outside.txt").string()));
  EXPECT_FALSE(fs::exists(dir_ / "outside.txt"));
  // A value the operator writes is the operator's grant; one beneath its run folder needs none.
  r = run("hostile_write_default", "path = " + target);
  EXPECT_THAT(r.out, HasSubstr("planted.txt: ok"));
  expect_job_intact(r);
  r = run("hostile_write_default",
          "path = " + (dir_ / "run" / "hooks" / "hostile" / "mine.txt").string());
  EXPECT_THAT(r.out, HasSubstr("mine.txt: ok"));
  expect_job_intact(r);
}

// A file a parameter names that appears while the job runs (time_limit's stop_file): its folder,
// which the operator named by naming the file, is granted; a file in a folder that does not exist
// is a configuration error, never widened further.
TEST_F(Confine, AStopFileThatAppearsLaterIsReadThroughItsFolder) {
  fs::create_directories(dir_ / "flags");
  ProcessResult r =
      run("time_limit", "max_secs = 3600\nstop_file = " + (dir_ / "flags" / "stop").string());
  EXPECT_THAT(r.out, HasSubstr("hook 'hostile' (plugin 'time_limit') runs confined: read " +
                               (dir_ / "flags").string() + "; write "));
  expect_job_intact(r);
  r = run("time_limit", "max_secs = 3600\nstop_file = " + (dir_ / "nowhere" / "stop").string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("may read " + (dir_ / "nowhere" / "stop").string() +
                               " (its parameter stop_file), which does not exist"));
}

// One runner, one confinement: members of an isolation group are confined and granted alike.
TEST_F(Confine, GroupMembersConfinedOrGrantedDifferentlyAreRefusedNamingBoth) {
  auto run_group = [&](const std::string& first, const std::string& second) {
    write_file(dir_ / "job.ini",
               "[run]\nrun_dir = run\nisolation = process\n\n[workload]\nname = linreg\n"
               "epochs = 1\n\n[hook.a]\nplugin = lifecycle_trace\nisolation_group = g\n" +
                   first +
                   "\n\n[hook.b]\nplugin = stop_at_step\nlast_step = 100\n"
                   "isolation_group = g\n" +
                   second + "\n");
    ProcessResult r = run_hookhost({"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir",
                                    plugins_.string(), "--fresh"},
                                   dir_.path());
    r.out += r.err;
    return r;
  };
  ProcessResult r = run_group("", "confine = off");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("hooks 'a' and 'b' share isolation_group 'g', one process, but are "
                               "given different confine (off for one of them): give them the "
                               "same confine, or different groups"));
  r = run_group("allow_network = true", "");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("hooks 'a' and 'b' share isolation_group 'g', one process, but are "
                               "given different allow_network"));
  r = run_group("grant = declared", "");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("given different grant"));
  // Alike, they run, under one policy.
  r = run_group("allow_network = false", "allow_network = false");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("runs confined: "));
  EXPECT_THAT(r.out, HasSubstr("(isolation group 'g')"));
}

// A TCP listener on 127.0.0.1 that tells whether anyone connected.
class LocalListener {
 public:
  LocalListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof at;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0 ||
        ::listen(fd_, 8) != 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&at), &size) != 0)
      throw std::runtime_error("cannot listen on 127.0.0.1");
    port_ = ntohs(at.sin_port);
  }
  ~LocalListener() { ::close(fd_); }
  int port() const { return port_; }
  // What the first pending connection sent, or nullopt when nobody connected.
  std::optional<std::string> take() {
    const int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) return std::nullopt;
    char bytes[256];
    const ssize_t n = ::read(conn, bytes, sizeof bytes);
    ::close(conn);
    return std::string(bytes, n > 0 ? static_cast<size_t>(n) : 0);
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST_F(Confine, TheNetworkIsClosedUnlessAllowed) {
  LocalListener listener;
  const std::string port = "port = " + std::to_string(listener.port());
  ProcessResult r = run("hostile_connect", port);
  EXPECT_THAT(r.out, HasSubstr("hostile: socket(AF_INET): failed: EPERM"));
  EXPECT_THAT(r.out, HasSubstr(denial({"hostile_connect", "", "", ""})));
  EXPECT_THAT(r.out, HasSubstr("(socket, AF_INET)"));
  EXPECT_EQ(listener.take(), std::nullopt);
  expect_job_intact(r);
  r = run("hostile_connect", port + "\nallow_network = true");
  EXPECT_THAT(r.out, HasSubstr("hostile: connect(127.0.0.1): ok"));
  EXPECT_EQ(listener.take(), "hello from hostile_connect\n");
  expect_job_intact(r);
  // A plugin's declaration is not a grant: the hook is refused before the job starts.
  r = run("hostile_connect_declared", port);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("hook 'hostile' (plugin 'hostile_connect_declared') asks for "
                               "needs.network=1 (its plugin declares it), which no key of the "
                               "configuration grants: grant it with allow_network = true in "
                               "[hook.hostile], or with grant = declared"));
  EXPECT_EQ(listener.take(), std::nullopt);
  r = run("hostile_connect_declared", port + "\ngrant = declared");
  EXPECT_THAT(r.out, HasSubstr("hostile: connect(127.0.0.1): ok"));
  EXPECT_THAT(r.out,
              HasSubstr("hook 'hostile' (plugin 'hostile_connect_declared') runs confined: "));
  EXPECT_THAT(r.out, HasSubstr("; network; no processes"));
  EXPECT_EQ(listener.take(), "hello from hostile_connect\n");
  expect_job_intact(r);
  // The operator takes back what the plugin declares.
  r = run("hostile_connect_declared", port + "\nallow_network = false");
  EXPECT_THAT(r.out, HasSubstr("hostile: socket(AF_INET): failed: EPERM"));
  EXPECT_EQ(listener.take(), std::nullopt);
}

// A unix socket the test listens on that tells what arrived: a named one (as /dev/log listens
// for syslog), or an abstract one when the address starts with '@'.
class UnixListener {
 public:
  UnixListener(const std::string& address, int type) : type_(type) {
    fd_ = ::socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un at{};
    at.sun_family = AF_UNIX;
    if (address.size() >= sizeof at.sun_path) throw std::runtime_error("address too long");
    std::memcpy(at.sun_path, address.data(), address.size());
    const bool abstract = address[0] == '@';
    if (abstract) at.sun_path[0] = '\0';
    const socklen_t size =
        abstract ? static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.size())
                 : static_cast<socklen_t>(sizeof at);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&at), size) != 0 ||
        (type == SOCK_STREAM && ::listen(fd_, 8) != 0))
      throw std::runtime_error("cannot listen on " + address);
  }
  ~UnixListener() { ::close(fd_); }
  // What arrived first (a datagram, or what the first connection sent), or nullopt when nothing.
  std::optional<std::string> take() {
    char bytes[256];
    ssize_t n;
    if (type_ == SOCK_STREAM) {
      const int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) return std::nullopt;
      n = ::read(conn, bytes, sizeof bytes);
      ::close(conn);
      if (n < 0) n = 0;
    } else {
      n = ::recv(fd_, bytes, sizeof bytes, 0);
      if (n < 0) return std::nullopt;
    }
    return std::string(bytes, static_cast<size_t>(n));
  }

 private:
  int type_;
  int fd_ = -1;
};

const char kDatagramDenial[] =
    "open a datagram socket, which could send to any named socket (socketpair, AF_UNIX, "
    "SOCK_DGRAM)";

TEST_F(Confine, ADatagramToANamedSocketIsRefusedUnlessTheNetworkIsAllowed) {
  UnixListener listener((dir_ / "log.sock").string(), SOCK_DGRAM);
  const std::string path = "path = " + (dir_ / "log.sock").string();
  ProcessResult r = run("hostile_datagram", path);
  EXPECT_THAT(r.out, HasSubstr("hostile: socket(AF_UNIX, SOCK_DGRAM): failed: EPERM"));
  EXPECT_THAT(r.out, HasSubstr(denial({"hostile_datagram", "", "", ""}) +
                               "open a datagram socket, which could send to any named socket "
                               "(socket, AF_UNIX, SOCK_DGRAM)"));
  EXPECT_EQ(listener.take(), std::nullopt);
  expect_job_intact(r);
  // Nor from socketpair: an address given to sendto overrides the pair's peer.
  r = run("hostile_datagram", path + "\ntarget = pair");
  EXPECT_THAT(r.out, HasSubstr("hostile: socketpair(AF_UNIX, SOCK_DGRAM): failed: EPERM"));
  EXPECT_THAT(r.out, HasSubstr(denial({"hostile_datagram", "", "", ""}) + kDatagramDenial));
  EXPECT_EQ(listener.take(), std::nullopt);
  expect_job_intact(r);
  for (const char* target : {"socket", "pair"}) {
    SCOPED_TRACE(target);
    r = run("hostile_datagram", path + "\ntarget = " + target + "\nallow_network = true");
    EXPECT_THAT(r.out, HasSubstr("hostile: sendto(named socket): ok"));
    EXPECT_EQ(listener.take(), "hello from hostile_datagram\n");
    expect_job_intact(r);
  }
}

// An abstract unix socket (a name in no folder, so Landlock's file rules do not see it): without
// the network neither a connect nor a datagram reaches one, refused by the filter and named.
TEST_F(Confine, AnAbstractSocketIsOutOfReachWithoutTheNetwork) {
  const std::string name =
      "@hookhost-test-" + std::to_string(::getpid()) + "-" + dir_.path().filename().string();
  UnixListener stream(name + "-stream", SOCK_STREAM);
  UnixListener datagram(name + "-datagram", SOCK_DGRAM);
  ProcessResult r = run("hostile_datagram", "path = " + name + "-stream\ntarget = stream");
  EXPECT_THAT(r.out, HasSubstr("hostile: connect(abstract socket): failed: EPERM"));
  EXPECT_THAT(r.out, HasSubstr(denial({"hostile_datagram", "", "", ""}) +
                               "connect a socket (connect): denied by its capability policy"));
  EXPECT_EQ(stream.take(), std::nullopt);
  expect_job_intact(r);
  r = run("hostile_datagram", "path = " + name + "-datagram\ntarget = pair");
  EXPECT_THAT(r.out, HasSubstr("hostile: socketpair(AF_UNIX, SOCK_DGRAM): failed: EPERM"));
  EXPECT_THAT(r.out, HasSubstr(denial({"hostile_datagram", "", "", ""}) + kDatagramDenial));
  EXPECT_EQ(datagram.take(), std::nullopt);
  expect_job_intact(r);
}

// With the network, abstract sockets outside the runner stay out of reach where the kernel has
// Landlock's abstract unix socket scope (ABI 6): the kernel refuses with EPERM (not named: Landlock
// tells no one). Below ABI 6 nothing stops them, and the job's start says so.
TEST_F(Confine, AnAbstractSocketIsReachableWithTheNetworkOnlyBelowLandlockAbi6) {
  const bool scoped = confine::detect_kernel_support().landlock_abi >= 6;
  const std::string name =
      "@hookhost-test-" + std::to_string(::getpid()) + "-" + dir_.path().filename().string();
  UnixListener stream(name + "-stream", SOCK_STREAM);
  UnixListener datagram(name + "-datagram", SOCK_DGRAM);
  ProcessResult r =
      run("hostile_datagram", "path = " + name + "-stream\ntarget = stream\nallow_network = true");
  EXPECT_THAT(r.out, Not(HasSubstr("tried to")));
  if (scoped) {
    EXPECT_THAT(r.out, HasSubstr("hostile: connect(abstract socket): failed: EPERM"));
    EXPECT_EQ(stream.take(), std::nullopt);
  } else {
    EXPECT_THAT(r.out, HasSubstr("hostile: connect(abstract socket): ok"));
    EXPECT_EQ(stream.take(), "hello from hostile_datagram\n");
    EXPECT_THAT(r.out, HasSubstr("not enforced: "));
    EXPECT_THAT(r.out, HasSubstr("abstract unix socket scopes (Landlock ABI < 6)"));
  }
  expect_job_intact(r);
  r = run("hostile_datagram", "path = " + name + "-datagram\ntarget = pair\nallow_network = true");
  EXPECT_THAT(r.out, Not(HasSubstr("tried to")));
  if (scoped) {
    EXPECT_THAT(r.out, HasSubstr("hostile: sendto(abstract socket): failed: EPERM"));
    EXPECT_EQ(datagram.take(), std::nullopt);
  } else {
    EXPECT_THAT(r.out, HasSubstr("hostile: sendto(abstract socket): ok"));
    EXPECT_EQ(datagram.take(), "hello from hostile_datagram\n");
  }
  expect_job_intact(r);
}

TEST_F(Confine, NoProgramStartsAndNoProcessForksUnlessAllowed) {
  ProcessResult r = run("hostile_exec", "");
  EXPECT_THAT(r.out, HasSubstr("hostile: fork: failed: EPERM"));
  EXPECT_THAT(r.out, HasSubstr("tried to start a process (fork"));
  expect_job_intact(r);
  r = run("hostile_fork_bomb", "signal = 64");
  EXPECT_THAT(r.out, HasSubstr("hostile: fork 1 of 64: failed: EPERM"));
  expect_job_intact(r);
  // The twins: a hook that may start processes runs /bin/sh, and forks.
  r = run("hostile_exec", "allow_processes = true");
  EXPECT_THAT(r.out, HasSubstr("hostile: execve(/bin/sh) ran, exit 7: ok"));
  expect_job_intact(r);
  r = run("hostile_exec_declared", "");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out,
              HasSubstr("asks for needs.processes=1 (its plugin declares it), which no key "
                        "of the configuration grants: grant it with allow_processes = true"));
  r = run("hostile_exec_declared", "grant = declared");
  EXPECT_THAT(r.out, HasSubstr("hostile: execve(/bin/sh) ran, exit 7: ok"));
  expect_job_intact(r);
  r = run("hostile_fork_bomb", "signal = 8\nallow_processes = true");
  EXPECT_THAT(r.out, HasSubstr("hostile: fork 8 of 8: ok"));
  expect_job_intact(r);
}

// Deny by default: calls aimed at the host through its limits, its priority or a descriptor's
// owner, and calls off the allow-list, fail with EPERM, are named, and change nothing.
TEST_F(Confine, TheHostsOpenFilesLimitCannotBeLowered) {
  ProcessResult r = run("hostile_prlimit", "signal = 0");
  EXPECT_THAT(r.out, HasSubstr("hostile: prlimit64(host, RLIMIT_NOFILE, 0): failed: EPERM"));
  EXPECT_THAT(r.out, HasSubstr("tried to change another process's resource limits (prlimit64, "
                               "pid "));
  expect_job_intact(r);
  // Unconfined the call reaches the kernel: the host's poll over its runners fails from then on
  // (EINVAL past RLIMIT_NOFILE), and it loses both hooks. Under the sanitizers the host stops
  // sooner: UBSan tests memory through a pipe, which a process without descriptors cannot make.
#if !defined(HOOKHOST_ASAN)
  r = run_unconfined("hostile_prlimit", "signal = 0");
  EXPECT_THAT(r.out, HasSubstr("2 hooks disabled"));
  EXPECT_THAT(r.out, HasSubstr("poll: Invalid argument"));
#endif
}

TEST_F(Confine, ADescriptorCannotBeMadeToSignalTheHost) {
  // SIGKILL through the socket's owner would end the job; expect_job_intact sees every step.
  ProcessResult r = run("hostile_setown", "signal = 9");
  EXPECT_THAT(r.out, HasSubstr("hostile: fcntl(F_SETOWN, host): failed: EPERM"));
  EXPECT_THAT(r.out, HasSubstr("hostile: fcntl(F_SETSIG, 9): failed: EPERM"));
  EXPECT_THAT(r.out, HasSubstr("(fcntl, F_SETOWN, pid "));
  EXPECT_THAT(r.out, HasSubstr("(fcntl, F_SETSIG, signal 9)"));
  EXPECT_THAT(r.out, HasSubstr("hostile: write to the other end: ok"));
  expect_job_intact(r);
  // Unconfined both reach the kernel (SIGURG, which the host ignores, keeps the twin harmless).
  r = run_unconfined("hostile_setown", "signal = 23");
  EXPECT_THAT(r.out, HasSubstr("hostile: fcntl(F_SETOWN, host): ok"));
  EXPECT_THAT(r.out, HasSubstr("hostile: fcntl(F_SETSIG, 23): ok"));
}

TEST_F(Confine, TheHostsPriorityCannotBeChanged) {
  ProcessResult r = run("hostile_setpriority", "");
  EXPECT_THAT(r.out, HasSubstr("hostile: setpriority(host, 19): failed: EPERM"));
  EXPECT_THAT(r.out, HasSubstr("tried to change a process's priority (setpriority, which 0, who "));
  EXPECT_THAT(r.out,
              HasSubstr("hostile: host nice " + std::to_string(::getpriority(PRIO_PROCESS, 0))));
  expect_job_intact(r);
  r = run_unconfined("hostile_setpriority", "");
  EXPECT_THAT(r.out, HasSubstr("hostile: setpriority(host, 19): ok"));
  EXPECT_THAT(r.out, HasSubstr("hostile: host nice 19"));
}

TEST_F(Confine, AFilesModeCannotBeChangedUnlessTheHookMayWriteBeyondItsFolder) {
  const fs::path file = dir_ / "elsewhere" / "kept.txt";
  fs::create_directories(file.parent_path());
  write_file(file, "kept");
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
  const auto mode = [&] { return fs::status(file).permissions() & fs::perms::mask; };
  const fs::perms before = mode();
  ProcessResult r = run("hostile_chmod", "path = " + file.string());
  EXPECT_THAT(r.out, HasSubstr("hostile: fchmodat(" + file.string() + ", 0): failed: EPERM"));
  EXPECT_THAT(r.out, HasSubstr("hostile: chmod(" + file.string() + ", 0): failed: EPERM"));
  EXPECT_THAT(r.out, HasSubstr("tried to change a file's permissions (fchmodat)"));
  EXPECT_THAT(r.out, HasSubstr("tried to change a file's permissions (chmod)"));
  EXPECT_EQ(mode(), before);
  expect_job_intact(r);
  // All or nothing (seccomp cannot see the path): a hook granted writes elsewhere may.
  r = run("hostile_chmod",
          "path = " + file.string() + "\nallow_write = " + file.parent_path().string());
  EXPECT_THAT(r.out, HasSubstr("hostile: chmod(" + file.string() + ", 0): ok"));
  EXPECT_EQ(mode(), fs::perms::none);
  fs::permissions(file, before);
  r = run_unconfined("hostile_chmod", "path = " + file.string());
  EXPECT_THAT(r.out, HasSubstr("hostile: chmod(" + file.string() + ", 0): ok"));
  EXPECT_EQ(mode(), fs::perms::none);
}

TEST_F(Confine, ACallOffTheAllowListFailsWithEpermAndIsNamed) {
  ProcessResult r = run("hostile_syscall", "target = personality");
  EXPECT_THAT(r.out, HasSubstr("hostile: personality(ADDR_NO_RANDOMIZE): failed: EPERM"));
  EXPECT_THAT(r.out, HasSubstr("tried to change its execution domain (personality)"));
  EXPECT_THAT(r.out, HasSubstr("hostile: personality now 00000000"));
  expect_job_intact(r);
  r = run("hostile_syscall", "target = number\nsignal = 1000");
  EXPECT_THAT(r.out, HasSubstr("hostile: system call 1000: failed: EPERM"));
  EXPECT_THAT(r.out, HasSubstr("tried to make a system call the policy does not allow (system "
                               "call 1000)"));
  expect_job_intact(r);
  r = run_unconfined("hostile_syscall", "target = personality");
  EXPECT_THAT(r.out, HasSubstr("hostile: personality(ADDR_NO_RANDOMIZE): ok"));
  EXPECT_THAT(r.out, HasSubstr("hostile: personality now 00040000"));
  r = run_unconfined("hostile_syscall", "target = number\nsignal = 1000");
  EXPECT_THAT(r.out, HasSubstr("hostile: system call 1000: failed: ENOSYS"));
}

// Fails closed: the hook removed a folder its policy grants and crashed; its restarted runner
// cannot apply that policy, so it loads no plugin, and on_crash applies again.
TEST_F(Confine, ARunnerThatCannotApplyItsPolicyRunsNoHook) {
  ProcessResult r = run("hostile_unconfine", "on_crash = restart\nmax_restarts = 1");
  EXPECT_EQ(count(r.out, "hostile: rmdir .*/hooks/hostile/data: ok"), 1) << r.out;
  EXPECT_EQ(count(r.out, "hostile: rmdir"), 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("confinement could not be applied, so no hook runs in this "
                               "runner: '"));
  EXPECT_THAT(r.out, HasSubstr("/hooks/hostile/data': No such file or directory"));
  expect_job_intact(r);
}

TEST_F(Confine, TheHostsMemoryCannotBeOpened) {
  ProcessResult r = run("hostile_proc_mem", "");
  EXPECT_THAT(r.out, HasSubstr("hostile: open(/proc/<host>/mem): failed: EACCES"));
  expect_job_intact(r);
  r = run_unconfined("hostile_proc_mem", "");
  EXPECT_THAT(r.out, HasSubstr("hostile: open(/proc/<host>/mem): ok"));
}

TEST_F(Confine, AFileCannotGrowPastLimitFileMb) {
  ProcessResult r = run("hostile_big_file", "signal = 4\nlimit_file_mb = 1");
  EXPECT_THAT(r.out, HasSubstr("hostile: write 4 MiB (1048576 bytes written): failed: EFBIG"));
  EXPECT_EQ(fs::file_size(dir_ / "run" / "hooks" / "hostile" / "big.bin"), 1048576u);
  expect_job_intact(r);
  r = run("hostile_big_file", "signal = 4");
  EXPECT_THAT(r.out, HasSubstr("hostile: write 4 MiB (4194304 bytes written): ok"));
  expect_job_intact(r);
}

TEST_F(Confine, GarbageInTheChannelCostsOnlyTheHookThatWroteIt) {
  const ProcessResult r = run("hostile_garbage", "on_crash = disable");
  EXPECT_THAT(r.out, HasSubstr("broke the sandbox protocol"));
  expect_job_intact(r);
}

// The values arena is sealed: a hook that reopens the memfd it is handed read-write through
// /proc/self/fd and truncates it gets EPERM, and the host, which rewrites the arena every step,
// is never touched past its end (SIGBUS). Confined or not: the seal is what holds either way.
TEST_F(Confine, TheValuesArenaCannotBeTruncatedUnderTheHost) {
  for (const bool confined : {true, false}) {
    SCOPED_TRACE(confined ? "confined" : "unconfined");
    const ProcessResult r =
        confined ? run("hostile_memfd", "") : run_unconfined("hostile_memfd", "");
    EXPECT_THAT(r.out, Not(HasSubstr("mmap slots patched: 0")));
    EXPECT_THAT(r.out, HasSubstr("hostile: reopen memfd:hookhost-values (deleted) read-write: ok"));
    EXPECT_THAT(r.out, HasSubstr("hostile: ftruncate(memfd:hookhost-values (deleted) reopened "
                                 "read-write, 0): failed: EPERM"));
    // The descriptor the runner gets is read-only.
    EXPECT_THAT(r.out, HasSubstr("hostile: ftruncate(the received descriptor, 0): failed: EINVAL"));
    EXPECT_THAT(r.out, Not(HasSubstr("SIGBUS")));
    expect_job_intact(r);
  }
}

// Records on the violation pipe are the runner's word, not the host's: a hook that forges
// thousands, each naming another instance of its group as the caller, gets them named as its
// group runner's, at most so many a second and so many in all; the other member is never blamed.
TEST_F(Confine, ForgedViolationRecordsBlameOnlyTheirRunnerAndAreBounded) {
  write_file(dir_ / "job.ini",
             "[run]\nrun_dir = run\nisolation = process\nisolation_group = g\n\n[workload]\n"
             "name = linreg\nepochs = 1\n\n[hook.hostile]\nplugin = hostile_violation_flood\n\n"
             "[hook.trace]\nplugin = lifecycle_trace\norder = 1\n");
  ProcessResult r = run_hookhost({"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir",
                                  plugins_.string(), "--fresh"},
                                 dir_.path());
  r.out += r.err;
  EXPECT_THAT(r.out, HasSubstr("hostile: forged 20000 violation records"));
  EXPECT_THAT(r.out, Not(HasSubstr("hook 'trace' (plugin 'lifecycle_trace') tried")));
  EXPECT_THAT(r.out, Not(HasSubstr("[trace] [error]")));
  EXPECT_THAT(r.out, HasSubstr("a hook in the runner process of isolation group 'g' tried to "
                               "signal another process (kill, pid "));
  // Said when the flood's window ends or the runner does, still of the group (the flooding member
  // may have left by then).
  EXPECT_THAT(r.out, HasSubstr("a hook in the runner process of isolation group 'g': "));
  EXPECT_THAT(r.out, HasSubstr("more records of denied calls suppressed (more than 20 a second)"));
  EXPECT_LE(count(r.out, "tried to"), 64);
  expect_job_intact(r);

  // A runner of its own: the records name the one hook there, bounded the same way.
  r = run("hostile_violation_flood", "");
  EXPECT_THAT(r.out, HasSubstr("hook 'hostile' (plugin 'hostile_violation_flood') tried to "));
  EXPECT_THAT(r.out, Not(HasSubstr("hook 'trace' (plugin 'lifecycle_trace') tried to")));
  EXPECT_LE(count(r.out, "tried to"), 64);
  expect_job_intact(r);
}

// Bytes on the violation pipe that are no record: named once as the runner's, nothing in them
// taken as a call, and the pipe still read, so the runner's next real denial (whose record its
// SIGSYS handler writes to the same pipe) is refused as ever and does not end it (SIGPIPE).
TEST_F(Confine, GarbageOnTheViolationPipeIsNamedOnceAndEndsNothing) {
  const ProcessResult r = run("hostile_violation_flood", "target = garbage");
  EXPECT_THAT(r.out, HasSubstr("hostile: wrote garbage to descriptor 5 (read by the host)"));
  EXPECT_THAT(r.out, HasSubstr("hostile: after the garbage, signal 0 to host: failed: EPERM"));
  EXPECT_THAT(r.out, HasSubstr("hook 'hostile' (plugin 'hostile_violation_flood') wrote something "
                               "that is not a record of a denied call to its violation pipe "
                               "(descriptor 5): ignored, with what follows it"));
  EXPECT_EQ(count(r.out, "not a record of a denied call"), 1) << r.out;
  EXPECT_THAT(r.out, Not(HasSubstr("tried to")));
  EXPECT_THAT(r.out, Not(HasSubstr("runner process (pid")));  // never lost
  expect_job_intact(r);
}

// Well-formed records no SIGSYS handler writes: a call of another architecture (the filter kills
// a runner that makes one before any handler runs) and a record with an impossible field are no
// calls; a kill marked fatal is named as the kill it is, failed with EPERM, not as one that
// stopped the runner. Neither ends the runner.
TEST_F(Confine, LyingViolationRecordsAreNotTakenAtTheirWord) {
  const ProcessResult r = run("hostile_violation_flood", "target = lies");
  EXPECT_THAT(r.out, HasSubstr("hostile: wrote 3 lying records"));
  EXPECT_THAT(r.out, HasSubstr("hook 'hostile' (plugin 'hostile_violation_flood') tried to signal "
                               "another process (kill, pid 424242): denied by its capability "
                               "policy (the call failed with EPERM)"));
  EXPECT_THAT(r.out, HasSubstr("wrote something that is not a record of a denied call to its "
                               "violation pipe (descriptor 5): ignored\n"));
  EXPECT_EQ(count(r.out, "not a record of a denied call"), 1) << r.out;
  EXPECT_THAT(r.out, Not(HasSubstr("another architecture")));
  EXPECT_THAT(r.out, Not(HasSubstr("424241")));
  EXPECT_THAT(r.out, Not(HasSubstr("424243")));
  EXPECT_THAT(r.out, Not(HasSubstr("SIGSYS")));
  expect_job_intact(r);
}

// A runner that dies of SIGSYS is lost with a message that names the hook and the call it made
// (docs/isolation.md, "Confinement"), from the record its handler wrote before it died.
TEST_F(Confine, ARunnerEndedBySigsysIsLostNamingTheHookAndItsCall) {
  const ProcessResult r = run("hostile_unshare", "on_crash = disable");
  EXPECT_THAT(r.out, HasSubstr("the hook's runner process (pid "));
  EXPECT_THAT(r.out, HasSubstr(") was killed by signal 31 (SIGSYS, Bad system call) after hook "
                               "'hostile' (plugin 'hostile_unshare') tried to create or enter a "
                               "namespace (unshare, flags 0x10020000)"));
  expect_job_intact(r);
}

// The benign twins: the same calls, unconfined, reach the kernel (and succeed where they can; the
// tests run as root in some places and as a user in others, so only EPERM is ruled out where
// permissions decide).
TEST_F(Confine, UnconfinedTheSameCallsReachTheKernel) {
  // kill(host, 0) is the clean pair: allowed by permissions, refused only by the filter.
  ProcessResult r = run_unconfined("hostile_kill", "target = host\nsignal = 0");
  EXPECT_THAT(r.out, HasSubstr("hostile: signal 0 to host: ok"));
  expect_job_intact(r);
  r = run("hostile_kill", "target = host\nsignal = 0");
  EXPECT_THAT(r.out, HasSubstr("hostile: signal 0 to host: failed: EPERM"));
  for (const char* target : {"host_thread", "group", "all"}) {
    r = run_unconfined("hostile_kill", std::string("target = ") + target + "\nsignal = 0");
    EXPECT_THAT(r.out, HasSubstr(std::string("hostile: signal 0 to ") + target + ": ok"));
  }
  // A nonexistent mount point: the kernel's own answer, so nothing is mounted.
  r = run_unconfined("hostile_mount", "");
  EXPECT_THAT(r.out, HasSubstr("hostile: mount(tmpfs): failed: E"));
  EXPECT_THAT(r.out, Not(HasSubstr("hostile: mount(tmpfs): failed: EPERM")));
  expect_job_intact(r);
  if (::geteuid() == 0) {
    // Root passes the permission checks the filter stands in for.
    for (const auto& [plugin, what] : std::vector<std::pair<std::string, std::string>>{
             {"hostile_bpf", "bpf(BPF_MAP_CREATE)"},
             {"hostile_keyctl", "keyctl(KEYCTL_GET_KEYRING_ID)"}}) {
      r = run_unconfined(plugin, "");
      EXPECT_THAT(r.out, HasSubstr("hostile: " + what + ": ok"));
    }
    if (proc_sys("/proc/sys/kernel/io_uring_disabled") <= 0) {
      r = run_unconfined("hostile_io_uring", "");
      EXPECT_THAT(r.out, HasSubstr("hostile: io_uring_setup: ok"));
    }
  }
  r = run_unconfined("hostile_unshare", "");
  EXPECT_THAT(r.out, Not(HasSubstr("hostile: unshare(CLONE_NEWUSER|CLONE_NEWNS): failed: EPERM")));
}

// Yama (ptrace_scope 1 and up) refuses a non-ancestor's ptrace attach and process_vm_readv without
// the filter too (root passes below 3): those twins are asserted only where nothing but the
// filter could refuse them. This machine's answer is in the test's output.
bool yama_allows_attaching_the_host() {
  const int scope = proc_sys("/proc/sys/kernel/yama/ptrace_scope");
  return scope <= 0 || (scope < 3 && ::geteuid() == 0);
}

TEST_F(Confine, UnconfinedPtraceAttachesWhereYamaAllowsIt) {
  if (!yama_allows_attaching_the_host())
    GTEST_SKIP() << "Yama ptrace_scope refuses the attach without confinement";
  ProcessResult r = run_unconfined("hostile_ptrace", "");
  EXPECT_THAT(r.out, HasSubstr("hostile: ptrace(PTRACE_SEIZE, host): ok"));
  EXPECT_THAT(r.out, Not(HasSubstr("hostile: host TracerPid 0")));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("job completed"));
  r = run_unconfined("hostile_process_vm_readv", "");
  EXPECT_THAT(r.out, HasSubstr("hostile: process_vm_readv(host): ok"));
}

TEST_F(Confine, AConfinedHookStillStartsThreadsLoadsLibrariesAndSignalsItself) {
  const ProcessResult r = run("confined_probe", "");
  for (const char* what : {"pthread_create", "dlopen(libm.so.6)", "mmap+mprotect(PROT_EXEC)",
                           "kill(self, 0)", "tgkill(self, self, 0)"})
    EXPECT_THAT(r.out, HasSubstr(std::string("hostile: ") + what + ": ok"));
  expect_job_intact(r);
}

TEST_F(Confine, TheJobSaysOnceWhatIsEnforced) {
  ProcessResult r = run("confined_probe", "");
  EXPECT_THAT(r.out, HasSubstr("[run] confine = sandboxed"));
  EXPECT_EQ(count(r.out, "confinement: "), 1) << r.out;
  r = run_unconfined("confined_probe", "");
  EXPECT_THAT(r.out, HasSubstr("confinement: off (confine = off): sandboxed hooks run "
                               "unconfined"));
}

TEST_F(Confine, AWrongValueIsAConfigErrorNamingTheLineAndTheChoices) {
  const ProcessResult r = run("confined_probe", "", {"--set", "run.confine=strict"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("confine"));
  EXPECT_THAT(r.out, HasSubstr("expected off, sandboxed, all-untrusted or required; got 'strict'"));
}

TEST_F(Confine, APathTheOperatorAllowsMustExist) {
  const ProcessResult r = run("confined_probe", "allow_read = " + (dir_ / "nowhere").string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("job.ini:"));
  EXPECT_THAT(r.out, HasSubstr("allow_read"));
  EXPECT_THAT(r.out,
              HasSubstr((dir_ / "nowhere").string() + " (allow_read), which does not exist"));
}

TEST_F(Confine, AllUntrustedSandboxesAndConfinesEveryHookOfAPluginNotHookhostsOwn) {
  write_file(dir_ / "job.ini",
             "[run]\nrun_dir = run\nconfine = all-untrusted\n\n[workload]\nname = linreg\n"
             "epochs = 1\n\n[hook.hostile]\nplugin = hostile_write\npath = " +
                 (dir_ / "planted.txt").string() +
                 "\n\n[hook.trace]\nplugin = lifecycle_trace\norder = 1\n");
  ProcessResult r = run_hookhost({"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir",
                                  plugins_.string(), "--fresh"},
                                 dir_.path());
  r.out += r.err;
  EXPECT_THAT(r.out, HasSubstr("hook 'hostile' (plugin 'hostile_write'): running it with "
                               "isolation = process, confined, because [run] confine = "
                               "all-untrusted"));
  EXPECT_THAT(r.out, HasSubstr("planted.txt: failed: EACCES"));
  EXPECT_FALSE(fs::exists(dir_ / "planted.txt"));
  // hookhost's own plugin stays in process, its outputs where they always were.
  EXPECT_THAT(r.out, Not(HasSubstr("hook 'trace' (plugin 'lifecycle_trace'): running it with")));
  expect_job_intact(r);
  EXPECT_TRUE(fs::exists(dir_ / "run" / "trace.jsonl"));
}

TEST_F(Confine, RequiredRunsTheHookWhereTheKernelEnforcesEverything) {
  // This kernel has Landlock (ABI 4 and up: TCP) and seccomp; elsewhere the hook would be refused
  // at start, naming what is missing.
  const ProcessResult r = run("hostile_connect", "port = 1\nconfine = required");
  if (r.out.find("cannot start the sandbox: confine = required") != std::string::npos) {
    EXPECT_THAT(r.out, HasSubstr("this kernel cannot enforce"));
    GTEST_SKIP() << "this kernel cannot enforce the whole policy: " << r.out;
  }
  EXPECT_THAT(r.out, HasSubstr("hostile: socket(AF_INET): failed: EPERM"));
  expect_job_intact(r);
}

TEST_F(Confine, RequiredOnAnInProcessHookIsAConfigError) {
  const ProcessResult r =
      run("hostile_connect", "port = 1\nisolation = in_process\nconfine = required");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("[hook.hostile] confine"));
  EXPECT_THAT(r.out, HasSubstr("runs in process, where nothing can confine it"));
}

// Granted alike ([run] allow_write), members still bring what each one's configuration names: the
// group's runner writes both declared files.
TEST_F(Confine, AnIsolationGroupSharesTheUnionOfItsMembersPolicies) {
  const fs::path a = dir_ / "a", b = dir_ / "b";
  fs::create_directories(a);
  fs::create_directories(b);
  write_file(
      dir_ / "job.ini",
      "[run]\nrun_dir = run\nisolation = process\nisolation_group = g\n\n[workload]\n"
      "name = linreg\nepochs = 1\n\n[hook.one]\nplugin = hostile_write_declared\npath = " +
          (a / "one.txt").string() + "\n\n[hook.two]\nplugin = hostile_write_declared\npath = " +
          (b / "two.txt").string() + "\n\n[hook.trace]\nplugin = lifecycle_trace\norder = 1\n");
  ProcessResult r = run_hookhost({"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir",
                                  plugins_.string(), "--fresh"},
                                 dir_.path());
  r.out += r.err;
  EXPECT_THAT(r.out, HasSubstr("one.txt: ok"));
  EXPECT_THAT(r.out, HasSubstr("two.txt: ok"));
  EXPECT_TRUE(fs::exists(a / "one.txt"));
  EXPECT_TRUE(fs::exists(b / "two.txt"));
  expect_job_intact(r);
}

TEST_F(Confine, MembersOfAGroupMustAgreeOnTheirLimits) {
  write_file(dir_ / "job.ini",
             "[run]\nrun_dir = run\nisolation = process\nisolation_group = g\n\n[workload]\n"
             "name = linreg\nepochs = 1\n\n[hook.one]\nplugin = confined_probe\n"
             "limit_cpu_secs = 10\n\n[hook.two]\nplugin = confined_probe\nlimit_cpu_secs = 20\n");
  ProcessResult r = run_hookhost({"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir",
                                  plugins_.string(), "--fresh"},
                                 dir_.path());
  r.out += r.err;
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("hooks 'one' and 'two' share isolation_group 'g' but ask for "
                               "different limits"));
}

// hookhost check runs the plugin confined to what it declares, and names each attempt beyond it
// with the line its note lacks.
TEST_F(Confine, CheckNamesACallOutsideTheDeclaredPolicyAndTheLineToDeclareIt) {
  LocalListener listener;
  const std::string port = "port=" + std::to_string(listener.port());
  ProcessResult r = run_hookhost(
      {"check", (plugins_ / "hostile_connect.so").string(), "--set", port}, dir_.path());
  r.out += r.err;
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("tried to open a network socket (socket, AF_INET)"));
  EXPECT_THAT(r.out, HasSubstr("add the line needs.network=1 to its note"));
  EXPECT_EQ(listener.take(), std::nullopt);
  // The twin that declares the network passes, and reaches the listener.
  r = run_hookhost({"check", (plugins_ / "hostile_connect_declared.so").string(), "--set", port},
                   dir_.path());
  r.out += r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("denied by its capability policy"))) << r.out;
  EXPECT_NE(listener.take(), std::nullopt);
  // It says that a job grants the declaration only by its configuration.
  EXPECT_THAT(r.out, HasSubstr("\nneeds (when confined): network: the check grants them; a job's "
                               "operator grants them with allow_read, allow_write, allow_network, "
                               "allow_processes or grant = declared, and refuses the hook "
                               "otherwise\n"));
}

// A file outside the declared policy: check names it with the line that would declare it.
TEST_F(Confine, CheckNamesAFileOutsideTheDeclaredPolicyAndTheLineToDeclareIt) {
  const fs::path secret = dir_.path() / "secret.txt";
  write_file(secret, "the secret");
  ProcessResult r = run_hookhost(
      {"check", (plugins_ / "hostile_read.so").string(), "--set", "path=" + secret.string()},
      dir_.path());
  r.out += r.err;
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("tried to read a file (openat, " + secret.string() + ")"));
  EXPECT_THAT(r.out, HasSubstr("add the line needs.read=" + secret.string() + " to its note"));
  EXPECT_THAT(r.out, HasSubstr("allow_read = " + secret.string()));
  r = run_hookhost({"check", (plugins_ / "hostile_read_declared.so").string(), "--set",
                    "path=" + secret.string()},
                   dir_.path());
  r.out += r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("denied by its capability policy"))) << r.out;
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
