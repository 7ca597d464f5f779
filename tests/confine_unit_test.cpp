// A runner's confinement applied for real (confine/apply.hpp): each case forks a child that applies
// a capability policy to itself, tries one thing and reports what happened through a pipe; the
// parent, unconfined, judges. Also the policy's runner arguments, the words for violation records
// and what a kernel cannot enforce.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "confine/apply.hpp"
#include "confine/kernel_support.hpp"
#include "confine/policy.hpp"
#include "confine/violation.hpp"
#include "support/sanitizer.hpp"
#include "test_support.hpp"

namespace hookhost::confine {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::write_file;

struct Outcome {
  int status = 0;      // waitpid's
  std::string report;  // what the child wrote, "" when it died first
  std::vector<Violation> records;
};

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::string read_all(int fd) {
  std::string out;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  return out;
}

// Runs `body` in a child, handing it the write end of a violation pipe; its return value is the
// report. The child never returns into the test (only _exit).
Outcome in_child(const std::function<std::string(int violation_fd)>& body) {
  int report[2], violations[2];
  if (::pipe2(report, O_CLOEXEC) != 0 || ::pipe2(violations, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe2: " << std::strerror(errno);
    return {};
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(report[0]);
    ::close(violations[0]);
    write_all(report[1], body(violations[1]));
    ::_exit(0);
  }
  ::close(report[1]);
  ::close(violations[1]);
  Outcome out;
  out.report = read_all(report[0]);
  const std::string records = read_all(violations[0]);
  ::close(report[0]);
  ::close(violations[0]);
  ViolationReader reader;
  reader.append(records.data(), records.size());
  for (Violation violation; reader.next(&violation);) out.records.push_back(violation);
  EXPECT_FALSE(reader.corrupt());
  ::waitpid(pid, &out.status, 0);
  return out;
}

std::string errno_name(int error) {
  const char* name = ::strerrorname_np(error);
  return name ? name : std::to_string(error);
}

// "ok" or the errno's name of a call that returned `rc`.
std::string result(long rc) {
  return rc >= 0 ? "ok" : errno_name(errno);
}

std::string open_result(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  const std::string text = result(fd);
  if (fd >= 0) ::close(fd);
  return text;
}

bool exited_cleanly(const Outcome& o) {
  return WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0;
}

class ConfineApply : public ::testing::Test {
 protected:
  void SetUp() override {
    if (detect_kernel_support().landlock_abi == 0)
      GTEST_SKIP() << "this kernel has no Landlock (not built, or not in the lsm= list)";
    std::filesystem::create_directories(dir_ / "readable");
    std::filesystem::create_directories(dir_ / "writable");
    std::filesystem::create_directories(dir_ / "outside");
    write_file(dir_ / "readable" / "data.txt", "inside\n");
    write_file(dir_ / "outside" / "secret.txt", "secret\n");
    policy_.read = {(dir_ / "readable").string()};
    policy_.write = {(dir_ / "writable").string()};
  }
  std::string path(const std::string& relative) const { return (dir_ / relative).string(); }

  TempDir dir_;
  CapabilityPolicy policy_;
};

// Applies `policy` in the child, then runs `attempt`; an apply failure is the report.
Outcome confined(const CapabilityPolicy& policy, const std::function<std::string()>& attempt) {
  return in_child([&](int violation_fd) {
    if (std::string error = apply_policy(policy, violation_fd); !error.empty())
      return "apply: " + error;
    return attempt();
  });
}

TEST_F(ConfineApply, ReadsOutsideThePolicyAreDeniedInsideWork) {
  const Outcome o = confined(policy_, [&] {
    std::string text = open_result(path("outside/secret.txt"), O_RDONLY);
    return text + " " + open_result(path("readable/data.txt"), O_RDONLY);
  });
  EXPECT_TRUE(exited_cleanly(o));
  EXPECT_EQ(o.report, "EACCES ok");
}

TEST_F(ConfineApply, WritesOutsideTheWriteSetAreDeniedInsideWork) {
  policy_.read.push_back(path("outside"));  // readable, not writable
  const Outcome o = confined(policy_, [&] {
    // One statement each: the order of a + chain's operands is unspecified.
    std::string text = open_result(path("outside/secret.txt"), O_WRONLY);
    text += " " + open_result(path("outside/new.txt"), O_WRONLY | O_CREAT);
    text += " " + open_result(path("readable/data.txt"), O_WRONLY);
    text += " " + open_result(path("writable/new.txt"), O_WRONLY | O_CREAT);
    text += " " + result(::mkdir(path("writable/sub").c_str(), 0755));
    text += " " + result(::unlink(path("writable/new.txt").c_str()));
    return text;
  });
  EXPECT_EQ(o.report, "EACCES EACCES EACCES ok ok ok");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "outside" / "new.txt"));
  EXPECT_TRUE(std::filesystem::is_directory(dir_ / "writable" / "sub"));
}

// Landlock decides; the filter only traps file calls so that a refusal reaches the host named,
// with the path resolved as the process saw it.
TEST_F(ConfineApply, ARefusedFileCallIsRecordedWithItsAbsolutePath) {
  policy_.read.push_back(path("outside/secret.txt"));  // not the folder
  write_file(dir_ / "outside" / "other.txt", "");
  write_file(dir_ / "writable" / "x", "");
  const Outcome o = confined(policy_, [&] {
    set_current_instance(7);
    std::string text = open_result(path("outside/other.txt"), O_WRONLY | O_CREAT);
    if (::chdir(path("readable").c_str()) != 0) return std::string("chdir failed");
    text += " " + open_result("../outside/../outside/other.txt", O_RDONLY);
    text += " " + open_result("data.txt", O_RDONLY);  // allowed: no record
    const int folder = ::open(path("writable").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    text += " " + result(::renameat(folder, "x", AT_FDCWD, path("outside/x").c_str()));
    text += " " + result(::mkdir(path("outside/made").c_str(), 0755));
    ::close(folder);
    return text;
  });
  EXPECT_TRUE(exited_cleanly(o));
  EXPECT_EQ(o.report, "EACCES EACCES ok EACCES EACCES");
  ASSERT_EQ(o.records.size(), 4u);
  EXPECT_EQ(o.records[0].record.instance, 7u);
  EXPECT_EQ(o.records[0].record.writes, 1u);
  EXPECT_EQ(o.records[0].path, path("outside/other.txt"));
  EXPECT_EQ(describe_violation(o.records[0]).what, "write a file");
  EXPECT_EQ(describe_violation(o.records[0]).call, "openat");
  // Relative to the working folder, as written (the host compares names, lexically).
  EXPECT_EQ(o.records[1].path, path("readable") + "/../outside/../outside/other.txt");
  EXPECT_EQ(o.records[1].record.writes, 0u);
  EXPECT_EQ(describe_violation(o.records[1]).what, "read a file");
  EXPECT_EQ(describe_violation(o.records[2]).call, "renameat");
  EXPECT_EQ(describe_violation(o.records[2]).detail,
            path("writable") + "/x -> " + path("outside/x"));
  EXPECT_EQ(describe_violation(o.records[3]).what, "create a folder");
  EXPECT_EQ(describe_violation(o.records[3]).call, "mkdir");
  // Against the policy: the host names the refusals that are the policy's.
  EXPECT_FALSE(policy_allows(policy_, 0, o.records[1].path, false));
  EXPECT_TRUE(policy_allows(policy_, 0, path("readable") + "/../outside/secret.txt", false));
  EXPECT_FALSE(policy_allows(policy_, 0, path("outside/secret.txt"), true));
  EXPECT_TRUE(policy_allows(policy_, 0, path("writable/deep/new.txt"), true));
  EXPECT_FALSE(policy_allows(policy_, 0, path("writable-not"), false));
  EXPECT_TRUE(policy_allows(policy_, 0, "/usr/lib/os-release", false));
}

// A path longer than a record holds keeps its end, the part that names the file.
TEST_F(ConfineApply, ARefusedPathPastTheRecordsRoomKeepsItsEnd) {
  std::string deep = path("outside");
  while (deep.size() < 3000) deep += "/" + std::string(200, 'd');
  std::filesystem::create_directories(deep);
  deep += "/end.txt";
  write_file(deep, "");
  const Outcome o = confined(policy_, [&] { return open_result(deep, O_RDONLY); });
  EXPECT_EQ(o.report, "EACCES");
  ASSERT_EQ(o.records.size(), 1u);
  EXPECT_EQ(o.records[0].path.size(), kMaxViolationPathBytes);
  EXPECT_TRUE(o.records[0].path.ends_with("/end.txt"));
}

// Where processes are allowed, a program the hook starts keeps the filter but not the handler:
// file calls are not trapped there (Landlock still refuses them, unnamed).
TEST_F(ConfineApply, FileCallsAreNotTrappedWhereProcessesAreAllowed) {
  policy_.processes = true;
  const Outcome o = confined(policy_, [&] {
    const pid_t child = ::fork();
    if (child == 0) {
      // It keeps the reporter (the filter refuses a new SIGSYS action), which would record a
      // trapped open.
      const int fd = ::open(path("outside/secret.txt").c_str(), O_RDONLY | O_CLOEXEC);
      ::_exit(fd < 0 && errno == EACCES ? 0 : 1);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    return WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status)) : "killed";
  });
  EXPECT_EQ(o.report, "exit 0");
  EXPECT_TRUE(o.records.empty());
}

// A rule on a file keeps only the rights that apply to files (the kernel refuses the others).
TEST_F(ConfineApply, AWritePathThatIsAFileAllowsThatFileOnly) {
  write_file(dir_ / "outside" / "log.txt", "");
  policy_.write.push_back(path("outside/log.txt"));
  const Outcome o = confined(policy_, [&] {
    std::string text = open_result(path("outside/log.txt"), O_WRONLY | O_TRUNC);
    text += " " + open_result(path("outside/log.txt"), O_RDONLY);
    text += " " + open_result(path("outside/secret.txt"), O_RDONLY);
    return text + " " + open_result(path("outside/sibling.txt"), O_WRONLY | O_CREAT);
  });
  EXPECT_EQ(o.report, "ok ok EACCES EACCES");
}

TEST_F(ConfineApply, DeviceNodesCannotBeMadeInTheWriteSet) {
  const Outcome o = confined(policy_, [&] {
    std::string text =
        result(::mknod(path("writable/null").c_str(), S_IFCHR | 0600, makedev(1, 3)));
    return text + " " + result(::mkfifo(path("writable/fifo").c_str(), 0600));
  });
  EXPECT_EQ(o.report, "EACCES ok");  // as root, only Landlock stops the device node
}

// The host makes a hook's folders while the runner lives: a folder made below a write path after
// confinement is covered (Landlock's rule is on the parent). The unconfined side is a process
// forked first, not a thread: a fork beside a running thread can inherit a lock (ASan's) held.
TEST_F(ConfineApply, ASubfolderMadeAfterConfinementIsWritable) {
  int go[2];
  ASSERT_EQ(::pipe2(go, O_CLOEXEC), 0);
  int ready[2];
  ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
  const std::string later = path("writable/made-later");
  const pid_t maker = ::fork();
  ASSERT_GE(maker, 0);
  if (maker == 0) {
    ::close(go[0]);
    ::close(ready[1]);
    char byte = 0;
    const bool asked = ::read(ready[0], &byte, 1) == 1;
    ::_exit(asked && ::mkdir(later.c_str(), 0755) == 0 ? 0 : 1);  // exiting closes go[1]
  }
  ::close(go[1]);
  ::close(ready[0]);
  const Outcome o = confined(policy_, [&] {
    (void)!::write(ready[1], "r", 1);
    char byte;
    (void)!::read(go[0], &byte, 1);  // ends when the maker has exited
    return open_result(later + "/file.txt", O_WRONLY | O_CREAT);
  });
  ::close(ready[1]);  // a maker still waiting (the child died first) then ends
  ::close(go[0]);
  int maker_status = 0;
  ASSERT_EQ(::waitpid(maker, &maker_status, 0), maker);
  EXPECT_TRUE(WIFEXITED(maker_status) && WEXITSTATUS(maker_status) == 0);
  EXPECT_EQ(o.report, "ok");
  EXPECT_TRUE(std::filesystem::exists(later + "/file.txt"));
}

TEST_F(ConfineApply, AMissingPathIsAnErrorNamingIt) {
  for (auto* paths : {&policy_.read, &policy_.write}) {
    CapabilityPolicy policy = policy_;
    (paths == &policy_.read ? policy.read : policy.write).push_back(path("missing/folder"));
    const Outcome o = confined(policy, [] { return std::string("applied"); });
    EXPECT_THAT(o.report, HasSubstr("apply: '" + path("missing/folder") + "'"));
    EXPECT_THAT(o.report, HasSubstr("must exist"));
  }
}

TEST_F(ConfineApply, OwnProcFolderIsReadableTheParentsIsNot) {
  const std::string parent = "/proc/" + std::to_string(::getpid()) + "/status";
  const Outcome o = confined(policy_, [&] {
    pthread_attr_t attr;
    const int rc = ::pthread_getattr_np(::pthread_self(), &attr);
    if (rc == 0) ::pthread_attr_destroy(&attr);
    std::string text = open_result("/proc/self/maps", O_RDONLY);
    text += " " + open_result(parent, O_RDONLY);
    return text + " " + (rc == 0 ? "ok" : errno_name(rc));
  });
  EXPECT_EQ(o.report, "ok EACCES ok");
}

// A listener the test opens on 127.0.0.1; its port.
class Listener {
 public:
  Listener() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
        ::listen(fd_, 4) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size) != 0)
      ADD_FAILURE() << "listener: " << std::strerror(errno);
    port_ = ntohs(address.sin_port);
  }
  ~Listener() { ::close(fd_); }
  uint16_t port() const { return port_; }

 private:
  int fd_;
  uint16_t port_ = 0;
};

std::string connect_to(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "socket " + errno_name(errno);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  const std::string text = rc == 0 ? "connected" : "connect " + errno_name(errno);
  ::close(fd);
  return text;
}

TEST_F(ConfineApply, TcpConnectIsRefusedWithoutTheNetworkAndWorksWithIt) {
  Listener listener;
  const Outcome off = confined(policy_, [&] { return connect_to(listener.port()); });
  EXPECT_EQ(off.report, "socket EPERM");
  ASSERT_EQ(off.records.size(), 1u);
  EXPECT_EQ(off.records[0].record.nr, __NR_socket);
  EXPECT_EQ(off.records[0].record.fatal, 0u);
  EXPECT_EQ(describe_violation(off.records[0]).detail, "AF_INET");
  policy_.network = true;
  const Outcome on = confined(policy_, [&] { return connect_to(listener.port()); });
  EXPECT_EQ(on.report, "connected");
  EXPECT_TRUE(on.records.empty());
}

TEST_F(ConfineApply, UnixSocketsStayAllowedWithoutTheNetwork) {
  const Outcome o = confined(policy_, [] {
    int pair[2];
    const std::string text = result(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair));
    return text;
  });
  EXPECT_EQ(o.report, "ok");
}

TEST_F(ConfineApply, ExecveIsRefusedWithoutProcessesAndWorksWithThem) {
  const Outcome off = confined(policy_, [] {
    char* const argv[] = {const_cast<char*>("true"), nullptr};
    ::execve("/bin/true", argv, environ);
    return "execve " + errno_name(errno);
  });
  EXPECT_EQ(off.report, "execve EPERM");
  ASSERT_EQ(off.records.size(), 1u);
  EXPECT_EQ(describe_violation(off.records[0]).call, "execve");
  EXPECT_EQ(describe_violation(off.records[0]).what, "start a program");
  policy_.processes = true;
  const Outcome on = confined(policy_, [] {
    char* const argv[] = {const_cast<char*>("true"), nullptr};
    ::execve("/bin/true", argv, environ);
    return "execve " + errno_name(errno);
  });
  EXPECT_EQ(on.report, "");  // /bin/true replaced the child before it reported
  EXPECT_TRUE(exited_cleanly(on)) << on.status;
}

std::string fork_and_wait() {
  const pid_t pid = ::fork();
  if (pid < 0) return "fork " + errno_name(errno);
  if (pid == 0) ::_exit(3);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return "child exit " + std::to_string(WEXITSTATUS(status));
}

TEST_F(ConfineApply, ForkIsRefusedWithoutProcessesAndWorksWithThem) {
  const Outcome off = confined(policy_, fork_and_wait);
  EXPECT_EQ(off.report, "fork EPERM");
  ASSERT_EQ(off.records.size(), 1u);
  EXPECT_EQ(off.records[0].record.nr, __NR_clone);  // glibc's fork is clone(SIGCHLD)
  EXPECT_EQ(describe_violation(off.records[0]).what, "start a process");
  policy_.processes = true;
  const Outcome on = confined(policy_, fork_and_wait);
  EXPECT_EQ(on.report, "child exit 3");
}

TEST_F(ConfineApply, ThreadsStartThroughCloneWhenClone3IsRefused) {
  const Outcome o = confined(policy_, [] {
    const long clone3 = ::syscall(SYS_clone3, nullptr, 0);
    const std::string direct = "clone3 " + result(clone3);
    int value = 0;
    std::thread thread([&] { value = 42; });
    thread.join();
    return direct + " thread " + std::to_string(value);
  });
  EXPECT_EQ(o.report, "clone3 ENOSYS thread 42");
  EXPECT_TRUE(o.records.empty());
}

TEST_F(ConfineApply, ASignalToAnotherProcessFailsAndIsRecordedWithItsInstance) {
  const pid_t parent = ::getpid();
  const Outcome o = confined(policy_, [&] {
    set_current_instance(42);
    const std::string other = result(::kill(parent, 0));
    set_current_instance(0);
    const std::string own = result(::kill(::getpid(), 0));
    return other + " " + own;
  });
  EXPECT_TRUE(exited_cleanly(o));
  EXPECT_EQ(o.report, "EPERM ok");
  ASSERT_EQ(o.records.size(), 1u);
  const ViolationRecord& r = o.records[0].record;
  EXPECT_EQ(r.magic, kViolationMagic);
  EXPECT_EQ(r.nr, __NR_kill);
  EXPECT_EQ(r.fatal, 0u);
  EXPECT_EQ(r.instance, 42u);
  EXPECT_EQ(r.args[0], static_cast<uint64_t>(parent));
  const ViolationText text = describe_violation(r);
  EXPECT_EQ(text.what, "signal another process");
  EXPECT_EQ(text.detail, "pid " + std::to_string(parent));
}

// Deny by default: what reaches another process through its limits, priority, scheduling or a
// descriptor's owner fails with EPERM and is recorded; the same calls on itself work.
TEST_F(ConfineApply, AnotherProcessIsOutOfReachItselfIsNot) {
  const pid_t parent = ::getpid();
  const Outcome o = confined(policy_, [&] {
    const pid_t self = ::getpid();
    rlimit limit{};
    std::string text = result(::prlimit(parent, RLIMIT_NOFILE, nullptr, &limit));
    text += " " + result(::prlimit(0, RLIMIT_NOFILE, nullptr, &limit));
    text += " " + result(::prlimit(self, RLIMIT_NOFILE, &limit, nullptr));
    text += " " + result(::setpriority(PRIO_PROCESS, parent, 19));
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    text += " " + result(::sched_getaffinity(0, sizeof cpus, &cpus));
    text += " " + result(::sched_setaffinity(parent, sizeof cpus, &cpus));
    text += " " + result(::sched_setaffinity(0, sizeof cpus, &cpus));
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return std::string("pair");
    text += " " + result(::fcntl(pair[0], F_SETOWN, parent));
    text += " " + result(::fcntl(pair[0], F_SETOWN, self));
    text += " " + result(::fcntl(pair[0], F_SETSIG, SIGKILL));
    f_owner_ex owner{F_OWNER_PID, parent};
    text += " " + result(::fcntl(pair[0], F_SETOWN_EX, &owner));
    text += " " + result(::ioctl(pair[0], FIOSETOWN, &parent));
    int pending = 0;
    text += " " + result(::ioctl(pair[0], FIONREAD, &pending));
    text += " " + result(::fcntl(pair[0], F_SETFL, O_NONBLOCK));
    return text;
  });
  EXPECT_TRUE(exited_cleanly(o));
  EXPECT_EQ(o.report, "EPERM ok ok EPERM ok EPERM ok EPERM ok EPERM EPERM EPERM ok ok");
  std::vector<std::string> named;
  for (const Violation& v : o.records) {
    const ViolationText text = describe_violation(v.record);
    named.push_back(text.call + ": " + text.detail);
  }
  const std::string pid = "pid " + std::to_string(parent);
  EXPECT_EQ(named,
            (std::vector<std::string>{
                "prlimit64: " + pid, "setpriority: which 0, who " + std::to_string(parent),
                "sched_setaffinity: " + pid, "fcntl: F_SETOWN, " + pid, "fcntl: F_SETSIG, signal 9",
                "fcntl: F_SETOWN_EX", "ioctl: request 0x8901"}));
}

// A file's mode, owner, times and extended attributes: Landlock does not govern them, so the
// filter refuses them all unless the policy grants metadata.
TEST_F(ConfineApply, FileMetadataCannotChangeUnlessGranted) {
  const std::string outside = path("outside/secret.txt");
  const std::string mine = path("writable/mine.txt");
  write_file(mine, "mine\n");
  ::chmod(outside.c_str(), 0644);
  auto attempt = [&] {
    std::string text = result(::chmod(outside.c_str(), 0));
    text += " " + result(::fchmodat(AT_FDCWD, mine.c_str(), 0600, 0));
    const int fd = ::open(mine.c_str(), O_RDONLY | O_CLOEXEC);
    text += " " + result(::fchmod(fd, 0600));
    text += " " + result(::utimensat(AT_FDCWD, outside.c_str(), nullptr, 0));
    text += " " + result(::setxattr(mine.c_str(), "user.hh", "x", 1, 0));
    text += " " + result(::chown(outside.c_str(), ::getuid(), ::getgid()));
    return text;
  };
  Outcome o = confined(policy_, attempt);
  EXPECT_TRUE(exited_cleanly(o));
  EXPECT_EQ(o.report, "EPERM EPERM EPERM EPERM EPERM EPERM");
  EXPECT_EQ(std::filesystem::status(outside).permissions() & std::filesystem::perms::mask,
            static_cast<std::filesystem::perms>(0644));
  ASSERT_FALSE(o.records.empty());
  EXPECT_EQ(describe_violation(o.records[0].record).what, "change a file's permissions");
  CapabilityPolicy granted = policy_;
  granted.metadata = true;
  o = confined(granted, attempt);
  EXPECT_TRUE(exited_cleanly(o));
  EXPECT_THAT(o.report, ::testing::StartsWith("ok ok ok ok"));
  ::chmod(outside.c_str(), 0644);
}

// Off the allow-list: EPERM, recorded, named by its name where the table has it, else its number.
TEST_F(ConfineApply, ACallOffTheAllowListFailsWithEpermAndTheRunnerGoesOn) {
  const Outcome o = confined(policy_, [&] {
    // One statement each: the order of a + chain's operands is unspecified.
    std::string text = result(::syscall(SYS_personality, 0x0040000));
    text += " " + result(::syscall(1000));
    text += " " + result(::syscall(SYS_getpid));
    return text;
  });
  EXPECT_TRUE(exited_cleanly(o));
  EXPECT_EQ(o.report, "EPERM EPERM ok");
  ASSERT_EQ(o.records.size(), 2u);
  EXPECT_EQ(describe_violation(o.records[0].record).call, "personality");
  EXPECT_EQ(describe_violation(o.records[1].record).call, "system call 1000");
  EXPECT_EQ(o.records[1].record.fatal, 0u);
}

TEST_F(ConfineApply, PtraceEndsTheRunnerBySigsysAfterARecord) {
  const pid_t parent = ::getpid();
  const Outcome o = confined(policy_, [&] {
    set_current_instance(7);
    const long rc = ::ptrace(PTRACE_SEIZE, parent, nullptr, nullptr);
    return "ptrace returned " + result(rc);  // never reached
  });
  EXPECT_EQ(o.report, "");
  ASSERT_TRUE(WIFSIGNALED(o.status)) << o.status;
  EXPECT_EQ(WTERMSIG(o.status), SIGSYS);
  ASSERT_EQ(o.records.size(), 1u);
  EXPECT_EQ(o.records[0].record.fatal, 1u);
  EXPECT_EQ(o.records[0].record.instance, 7u);
  EXPECT_EQ(o.records[0].record.nr, __NR_ptrace);
  const ViolationText text = describe_violation(o.records[0]);
  EXPECT_EQ(text.call, "ptrace");
  EXPECT_EQ(text.what, "attach a debugger to a process");
  EXPECT_EQ(text.detail, "pid " + std::to_string(parent));
}

#if defined(__x86_64__)
// A call through the i386 ABI (int 0x80) is another architecture's: the whole runner is killed,
// not the calling thread alone, so no runner goes on with a thread missing.
TEST_F(ConfineApply, AnotherArchitecturesCallKillsTheWholeRunner) {
  const Outcome o = confined(policy_, [] {
    std::thread([] {
      long ret = 20;  // getpid in the i386 table
      asm volatile("int $0x80" : "+a"(ret) : : "memory");
    }).join();
    return std::string("the runner outlived the call");
  });
  ASSERT_TRUE(WIFSIGNALED(o.status)) << o.report;
  if (WTERMSIG(o.status) == SIGSEGV) GTEST_SKIP() << "this kernel runs no i386 code (int 0x80)";
  EXPECT_EQ(WTERMSIG(o.status), SIGSYS);
  EXPECT_EQ(o.report, "");
}
#endif

TEST_F(ConfineApply, ANamespaceCloneEndsTheRunner) {
  policy_.processes = true;  // fork allowed: the namespace flag alone is what is refused
  const Outcome o = confined(policy_, [] {
    const long rc = ::syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, nullptr, nullptr, nullptr, 0);
    if (rc == 0) ::_exit(0);
    return "clone returned " + result(rc);
  });
  ASSERT_TRUE(WIFSIGNALED(o.status)) << o.report;
  EXPECT_EQ(WTERMSIG(o.status), SIGSYS);
  ASSERT_EQ(o.records.size(), 1u);
  EXPECT_EQ(o.records[0].record.fatal, 1u);
  EXPECT_EQ(describe_violation(o.records[0]).what, "create or enter a namespace");
}

void ignore_signal(int) {}

TEST_F(ConfineApply, TheSigsysReporterCannotBeReplaced) {
  const pid_t parent = ::getpid();
  const Outcome o = confined(policy_, [&] {
    struct sigaction mine {};
    mine.sa_handler = ignore_signal;
    struct sigaction current {};
    const std::string replace = result(::sigaction(SIGSYS, &mine, nullptr));
    const std::string query = result(::sigaction(SIGSYS, nullptr, &current));
    const std::string other = result(::sigaction(SIGUSR1, &mine, nullptr));
    // The reporter is still the one: the next denial is still recorded and refused.
    const std::string denied = result(::kill(parent, 0));
    return replace + " " + query + " " + other + " " + denied;
  });
  EXPECT_EQ(o.report, "EPERM ok ok EPERM");
  // The refused replacement is off the allow-list, so it is recorded too, and ends nothing.
  ASSERT_EQ(o.records.size(), 2u);
  EXPECT_EQ(o.records[0].record.nr, SYS_rt_sigaction);
  EXPECT_EQ(o.records[0].record.args[0], uint64_t{SIGSYS});
  EXPECT_EQ(o.records[0].record.fatal, 0u);
  EXPECT_EQ(describe_violation(o.records[1].record).call, "kill");
}

TEST_F(ConfineApply, AWritePastTheFileSizeLimitFailsWithEfbig) {
  policy_.limits.file_size_mb = 1;
  const std::string file = path("writable/big.bin");
  const Outcome o = confined(policy_, [&] {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return "open " + errno_name(errno);
    const std::string chunk(768 * 1024, 'x');
    const ssize_t first = ::write(fd, chunk.data(), chunk.size());
    const ssize_t second = ::write(fd, chunk.data(), chunk.size());  // cut at 1 MiB
    const std::string third = result(::write(fd, chunk.data(), chunk.size()));
    ::close(fd);
    return std::to_string(first) + " " + std::to_string(second) + " " + third;
  });
  EXPECT_TRUE(exited_cleanly(o)) << o.status;
  EXPECT_EQ(o.report, "786432 262144 EFBIG");
  EXPECT_EQ(std::filesystem::file_size(file), 1024u * 1024u);
}

TEST_F(ConfineApply, AnOpenFilesLimitBelowWhatLandlockNeedsStillApplies) {
  // Descriptors 0-2 are open: no descriptor is left to open, and set before Landlock, its ruleset
  // and O_PATH descriptors would fail with EMFILE.
  policy_.limits.open_files = 3;
  const Outcome o = confined(policy_, [] {
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    const std::string opened = open_result("/dev/null", O_RDONLY);
    return "limit " + std::to_string(limit.rlim_cur) + " open " + opened;
  });
  EXPECT_EQ(o.report, "limit 3 open EMFILE");
}

// VmSize, rounded up; under ASan apply_policy adds it itself (its shadow), so 0 there.
uint64_t address_space_in_use_mb() {
#if defined(HOOKHOST_ASAN)
  return 0;
#else
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmSize:", 0) == 0)
      return (std::strtoull(line.c_str() + 7, nullptr, 10) + 1023) / 1024;
  return 0;
#endif
}

TEST_F(ConfineApply, TheAddressSpaceLimitRefusesAMappingPastIt) {
  // The limit counts what the process maps already (the test's threads left malloc arenas of
  // 64 MiB each): 64 MiB on top of that, as the runner's would be on top of its start.
  policy_.limits.address_space_mb = address_space_in_use_mb() + 64;
  auto map = [](size_t megabytes) {
    void* p = ::mmap(nullptr, megabytes << 20, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return errno_name(errno);
    ::munmap(p, megabytes << 20);
    return std::string("ok");
  };
  const Outcome o = confined(policy_, [&] {
    const std::string small = map(8);
    return small + " " + map(256);
  });
  EXPECT_EQ(o.report, "ok ENOMEM");
}

TEST_F(ConfineApply, TheCpuLimitIsSet) {
  policy_.limits.cpu_seconds = 30;
  const Outcome o = confined(policy_, [] {
    rlimit limit{};
    ::getrlimit(RLIMIT_CPU, &limit);
    return std::to_string(limit.rlim_cur) + " " + std::to_string(limit.rlim_max);
  });
  EXPECT_EQ(o.report, "30 30");
}

// The kernel's word on this process's speculative store-bypass mitigation (/proc/self/status).
std::string store_bypass_line() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Speculation_Store_Bypass:", 0) == 0) return line;
  return "(no Speculation_Store_Bypass line)";
}

#ifndef SECCOMP_FILTER_FLAG_SPEC_ALLOW
#define SECCOMP_FILTER_FLAG_SPEC_ALLOW (1UL << 2)
#endif
#if defined(__x86_64__)
constexpr uint32_t kTestArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kTestArch = AUDIT_ARCH_AARCH64;
#endif

long load_raw_filter(const std::vector<sock_filter>& code, unsigned long flags) {
  sock_fprog program{static_cast<unsigned short>(code.size()),
                     const_cast<sock_filter*>(code.data())};
  return ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &program);
}

#if defined(__x86_64__) || defined(__aarch64__)
// A filter of the test's own, loaded first: a later seccomp(SECCOMP_SET_MODE_FILTER) that hands a
// program (libseccomp's probes of a flag hand none) without SECCOMP_FILTER_FLAG_SPEC_ALLOW fails
// with EBADMSG. So whoever loads a filter after it shows which flag it passed.
long refuse_filters_without_spec_allow() {
  constexpr uint32_t kArgs = offsetof(seccomp_data, args);
  constexpr uint32_t kLow = 0;  // the low half of a 64-bit argument (little-endian)
  const std::vector<sock_filter> code = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kTestArch, 0, 11),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_seccomp, 0, 9),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArgs + kLow),  // the operation
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SECCOMP_SET_MODE_FILTER, 0, 7),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArgs + 16 + kLow),  // the program's address
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArgs + 16 + 4),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 3, 0),  // no program: a probe, the kernel answers
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArgs + 8 + kLow),  // the flags
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, SECCOMP_FILTER_FLAG_SPEC_ALLOW, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EBADMSG & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return load_raw_filter(code, SECCOMP_FILTER_FLAG_SPEC_ALLOW);
}

// The filter does not turn on the kernel's store-bypass mitigation (docs/isolation.md,
// "Confinement"): the confined process reports what the unconfined one does, and the filter is
// loaded with SECCOMP_FILTER_FLAG_SPEC_ALLOW, which is what keeps a kernel whose mitigation mode
// is "seccomp" from turning it on (a kernel in "prctl" mode, or not vulnerable, reports the same
// line either way: the flag is what this test can see there).
TEST_F(ConfineApply, TheFilterLeavesTheStoreBypassMitigationAsItWas) {
  const std::string unconfined = store_bypass_line();
  const Outcome o = confined(policy_, [] { return store_bypass_line(); });
  EXPECT_TRUE(exited_cleanly(o)) << o.report;
  EXPECT_EQ(o.report, unconfined);

  const Outcome flagged = in_child([&](int violation_fd) -> std::string {
    if (refuse_filters_without_spec_allow() != 0) return "test filter: " + errno_name(errno);
    // The test's filter bites: an allow-all program loaded without the flag is refused.
    const std::vector<sock_filter> allow_all = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    std::string text = "without the flag " + result(load_raw_filter(allow_all, 0));
    if (std::string error = apply_policy(policy_, violation_fd); !error.empty())
      return text + ", apply: " + error;
    return text + ", applied, " + store_bypass_line();
  });
  if (flagged.report == "test filter: EINVAL")
    GTEST_SKIP() << "this kernel has no SECCOMP_FILTER_FLAG_SPEC_ALLOW (Linux < 4.17)";
  EXPECT_TRUE(exited_cleanly(flagged)) << flagged.report;
  EXPECT_EQ(flagged.report, "without the flag EBADMSG, applied, " + unconfined);
}
#endif

TEST(ConfineViolation, DescribesRecords) {
  auto record = [](int nr, std::initializer_list<uint64_t> args) {
    ViolationRecord r{};
    r.magic = kViolationMagic;
    r.nr = nr;
#if defined(__x86_64__)
    r.arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
    r.arch = AUDIT_ARCH_AARCH64;
#endif
    size_t k = 0;
    for (uint64_t a : args) r.args[k++] = a;
    return r;
  };
  auto text = [](const ViolationRecord& r) {
    const ViolationText t = describe_violation(r);
    return t.what + " | " + t.call + " | " + t.detail;
  };
  EXPECT_EQ(text(record(__NR_kill, {1234, 9})), "signal another process | kill | pid 1234");
  EXPECT_EQ(text(record(__NR_kill, {static_cast<uint64_t>(-1), 9})),
            "signal another process | kill | pid -1");
  EXPECT_EQ(text(record(__NR_ptrace, {PTRACE_ATTACH, 77})),
            "attach a debugger to a process | ptrace | pid 77");
  EXPECT_EQ(text(record(__NR_socket, {AF_INET6, SOCK_DGRAM})),
            "open a network socket | socket | AF_INET6");
  EXPECT_EQ(text(record(__NR_socket, {99, 1})), "open a network socket | socket | domain 99");
  EXPECT_EQ(text(record(__NR_execve, {0})), "start a program | execve | ");
  EXPECT_EQ(text(record(__NR_clone, {SIGCHLD})), "start a process | clone | flags 0x11");
  EXPECT_EQ(text(record(__NR_clone, {CLONE_NEWNET | SIGCHLD})),
            "create or enter a namespace | clone | flags 0x40000011");
  EXPECT_EQ(text(record(__NR_io_uring_setup, {})),
            "use io_uring (calls no filter sees) | io_uring_setup | ");
  EXPECT_EQ(text(record(__NR_getpid, {})),
            "make a system call the policy does not allow | system call " +
                std::to_string(__NR_getpid) + " | ");
  ViolationRecord foreign = record(__NR_getpid, {});
  foreign.arch = 0x40000003;  // AUDIT_ARCH_I386
  EXPECT_EQ(describe_violation(foreign).what, "make a system call of another architecture");
  ViolationRecord garbage = record(__NR_kill, {});
  garbage.magic = 0;
  EXPECT_EQ(describe_violation(garbage).what, "send a malformed violation record");
}

TEST(ConfineViolation, OnlyCallsNoHookNeedsAreFatal) {
  const uint64_t none[6] = {};
  const uint64_t new_user[6] = {CLONE_NEWUSER | SIGCHLD};
  const uint64_t fork_flags[6] = {SIGCHLD};
  EXPECT_TRUE(is_fatal(__NR_ptrace, none));
  EXPECT_TRUE(is_fatal(__NR_bpf, none));
  EXPECT_TRUE(is_fatal(__NR_clone, new_user));
  EXPECT_FALSE(is_fatal(__NR_clone, fork_flags));
  EXPECT_FALSE(is_fatal(__NR_kill, none));
  EXPECT_FALSE(is_fatal(__NR_socket, none));
  EXPECT_FALSE(is_fatal(__NR_getpid, none));
}

// The policy through the runner's command line, as the host writes it and the runner reads it.
CapabilityPolicy parse(std::vector<std::string> args, std::string* error) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  CapabilityPolicy policy;
  const int argc = static_cast<int>(argv.size());
  for (int i = 0; i < argc;)
    if (!parse_runner_arg(argc, argv.data(), &i, &policy, error)) {
      *error = "not a policy argument: " + args[static_cast<size_t>(i)];
      break;
    } else if (!error->empty()) {
      break;
    }
  return policy;
}

TEST(ConfinePolicyArgs, RoundTrip) {
  CapabilityPolicy policy;
  policy.read = {"/data/in", "/usr/share/x y"};
  policy.write = {"/run/job/hooks/1"};
  policy.network = true;
  policy.processes = true;
  policy.metadata = true;
  policy.limits = {512, 30, 64, 256, 100};
  const std::vector<std::string> args = runner_args(policy);
  std::string error;
  EXPECT_EQ(parse(args, &error), policy);
  EXPECT_EQ(error, "");
  EXPECT_THAT(args, ::testing::ElementsAre(
                        "--read", "/data/in", "--read", "/usr/share/x y", "--write",
                        "/run/job/hooks/1", "--network", "--processes", "--metadata",
                        "--limit-as-mb", "512", "--limit-cpu-secs", "30", "--limit-file-mb", "64",
                        "--limit-open-files", "256", "--limit-processes", "100"));
  // The empty policy has no arguments, and reads back as itself.
  EXPECT_TRUE(runner_args(CapabilityPolicy{}).empty());
}

TEST(ConfinePolicyArgs, LargestValuesRoundTrip) {
  CapabilityPolicy policy;
  policy.limits.address_space_mb = UINT64_MAX >> 20;
  policy.limits.open_files = UINT64_MAX;
  std::string error;
  EXPECT_EQ(parse(runner_args(policy), &error), policy);
  EXPECT_EQ(error, "");
}

TEST(ConfinePolicyArgs, BadValuesAreRefusedNamingTheFlag) {
  struct Case {
    std::vector<std::string> args;
    const char* expected;
  };
  const std::string too_many_mb = std::to_string((UINT64_MAX >> 20) + 1);
  const Case cases[] = {
      {{"--limit-as-mb"}, "--limit-as-mb needs a value"},
      {{"--read"}, "--read needs a value"},
      {{"--limit-as-mb", ""}, "--limit-as-mb '': a whole number from 1 to"},
      {{"--limit-as-mb", "0"}, "--limit-as-mb '0': a whole number"},
      {{"--limit-cpu-secs", "-5"}, "--limit-cpu-secs '-5'"},
      {{"--limit-cpu-secs", "+5"}, "--limit-cpu-secs '+5'"},
      {{"--limit-file-mb", "12MB"}, "--limit-file-mb '12MB'"},
      {{"--limit-file-mb", " 12"}, "--limit-file-mb ' 12'"},
      {{"--limit-open-files", "0x10"}, "--limit-open-files '0x10'"},
      {{"--limit-open-files", "18446744073709551616"}, "--limit-open-files '18446744073709551616'"},
      {{"--limit-processes", "1.5"}, "--limit-processes '1.5'"},
      {{"--limit-as-mb", too_many_mb}, "--limit-as-mb"},
      {{"--read", "relative/path"}, "--read 'relative/path': an absolute path is needed"},
      {{"--write", ""}, "--write '': an absolute path is needed"},
  };
  for (const Case& c : cases) {
    std::string error;
    parse(c.args, &error);
    EXPECT_THAT(error, HasSubstr(c.expected)) << c.args[0];
  }
}

TEST(ConfinePolicyArgs, OtherArgumentsAreLeftAlone) {
  std::string arg = "--parent-pid";
  char* argv[] = {arg.data()};
  CapabilityPolicy policy;
  std::string error;
  int i = 0;
  EXPECT_FALSE(parse_runner_arg(1, argv, &i, &policy, &error));
  EXPECT_EQ(i, 0);
  EXPECT_EQ(error, "");
}

TEST(ConfineSystemPaths, ExistOnlyAndIncludeOwnProcNeverProcItself) {
  const std::vector<std::string> paths = system_read_paths();
  EXPECT_THAT(paths, ::testing::Contains("/usr"));
  EXPECT_THAT(paths, ::testing::Contains("/proc/" + std::to_string(::getpid())));
  for (const std::string& p : paths) {
    EXPECT_TRUE(std::filesystem::exists(p)) << p;
    EXPECT_NE(p, "/proc");
    EXPECT_NE(p, "/proc/self");
  }
}

TEST(ConfineKernelSupport, NamesWhatAKernelCannotEnforce) {
  CapabilityPolicy policy;
  KernelSupport full{true, true, true, true, 6};
  EXPECT_TRUE(not_enforced(policy, full).empty());
  KernelSupport no_landlock = full;
  no_landlock.landlock_abi = 0;
  EXPECT_THAT(not_enforced(policy, no_landlock), ::testing::Contains("file access (no Landlock)"));
  KernelSupport abi3 = full;
  abi3.landlock_abi = 3;
  EXPECT_THAT(not_enforced(policy, abi3), ::testing::Contains("TCP ports (Landlock ABI < 4)"));
  policy.network = true;  // nothing of TCP to enforce then, but abstract sockets are open
  EXPECT_THAT(not_enforced(policy, abi3),
              ::testing::Not(::testing::Contains("TCP ports (Landlock ABI < 4)")));
  EXPECT_THAT(not_enforced(policy, abi3),
              ::testing::Contains("abstract unix sockets (Landlock ABI < 6)"));
  KernelSupport no_seccomp = full;
  no_seccomp.seccomp_trap = false;
  EXPECT_THAT(not_enforced(policy, no_seccomp),
              ::testing::Contains("system calls (no seccomp filters that trap)"));
  EXPECT_THAT(describe_confinement(full), HasSubstr("Landlock ABI 6"));
  EXPECT_THAT(describe_confinement(no_seccomp), HasSubstr("not enforced"));
  EXPECT_THAT(describe_confinement(no_landlock), HasSubstr("file access (no Landlock"));
  // Before ABI 3 the filter refuses truncate(2), unless the hook may change file metadata.
  KernelSupport abi2 = full;
  abi2.landlock_abi = 2;
  CapabilityPolicy plain;
  EXPECT_THAT(not_enforced(plain, abi2),
              ::testing::Not(::testing::Contains("truncating files by path (Landlock ABI < 3)")));
  plain.metadata = true;
  EXPECT_THAT(not_enforced(plain, abi2),
              ::testing::Contains("truncating files by path (Landlock ABI < 3)"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::confine
