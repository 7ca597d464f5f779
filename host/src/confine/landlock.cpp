#include "confine/landlock.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "support/openat2.hpp"

// Debian 12's <linux/landlock.h> is Linux 6.1's (ABI 2): the interface is declared here with the
// kernel's values instead, so no constant depends on the installed header.
namespace hookhost::confine {
namespace {

constexpr int kRulePathBeneath = 1;

// File system rights.
constexpr uint64_t kExecute = 1ull << 0;
constexpr uint64_t kWriteFile = 1ull << 1;
constexpr uint64_t kReadFile = 1ull << 2;
constexpr uint64_t kReadDir = 1ull << 3;
constexpr uint64_t kRemoveDir = 1ull << 4;
constexpr uint64_t kRemoveFile = 1ull << 5;
constexpr uint64_t kMakeChar = 1ull << 6;
constexpr uint64_t kMakeDir = 1ull << 7;
constexpr uint64_t kMakeReg = 1ull << 8;
constexpr uint64_t kMakeSock = 1ull << 9;
constexpr uint64_t kMakeFifo = 1ull << 10;
constexpr uint64_t kMakeBlock = 1ull << 11;
constexpr uint64_t kMakeSym = 1ull << 12;
constexpr uint64_t kRefer = 1ull << 13;     // ABI 2
constexpr uint64_t kTruncate = 1ull << 14;  // ABI 3
constexpr uint64_t kIoctlDev = 1ull << 15;  // ABI 5
// Network rights (ABI 4) and scopes (ABI 6).
constexpr uint64_t kBindTcp = 1ull << 0;
constexpr uint64_t kConnectTcp = 1ull << 1;
constexpr uint64_t kScopeAbstractUnixSocket = 1ull << 0;
constexpr uint64_t kScopeSignal = 1ull << 1;

// The ruleset attribute as of ABI 6; the size passed tells the kernel which fields are meant.
struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;  // ABI 4
  uint64_t scoped;              // ABI 6
};
struct PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

constexpr uint64_t kFileRights = kExecute | kWriteFile | kReadFile | kTruncate | kIoctlDev;

uint64_t handled_fs(int abi) {
  uint64_t rights = kExecute | kWriteFile | kReadFile | kReadDir | kRemoveDir | kRemoveFile |
                    kMakeChar | kMakeDir | kMakeReg | kMakeSock | kMakeFifo | kMakeBlock | kMakeSym;
  if (abi >= 2) rights |= kRefer;
  if (abi >= 3) rights |= kTruncate;
  if (abi >= 5) rights |= kIoctlDev;
  return rights;
}

uint64_t read_rights(bool processes) {
  return kReadFile | kReadDir | (processes ? kExecute : 0);
}

// No device creation (MAKE_CHAR, MAKE_BLOCK) and no device ioctl below a write path either.
uint64_t write_rights(bool processes) {
  return read_rights(processes) | kWriteFile | kRemoveDir | kRemoveFile | kMakeDir | kMakeReg |
         kMakeSock | kMakeFifo | kMakeSym | kRefer | kTruncate;
}

std::string failure(const std::string& what, int error, const char* advice) {
  return what + ": " + std::strerror(error) + " (" + advice + ")";
}

class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// A policy path is opened without following a symbolic link anywhere on it (the host resolved the
// operator's links when it made the policy): a granted folder the hook swapped for a link before
// a restart would otherwise move its rule to wherever the link points. Such a path gets no rule,
// which grants less, never more, and is said on stderr, which the host logs. The system's paths
// (`follow`) are links on merged-/usr systems and are followed.
std::string add_path(int ruleset, const std::string& path, uint64_t rights, bool follow) {
  const Descriptor fd(follow ? ::open(path.c_str(), O_PATH | O_CLOEXEC)
                             : open_resolved(AT_FDCWD, path.c_str(), O_PATH | O_CLOEXEC,
                                             RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
  if (fd.get() < 0 && errno == ELOOP) {
    std::fprintf(stderr,
                 "hookhost-runner: landlock: ELOOP: a symbolic link on the way to '%s': it is "
                 "left out of the policy (a granted path is never followed through a link)\n",
                 path.c_str());
    return {};
  }
  if (fd.get() < 0)
    return failure("landlock: cannot open '" + path + "'", errno,
                   "every path of a capability policy must exist when the runner starts");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    return failure("landlock: cannot stat '" + path + "'", errno, "check the path");
  PathBeneathAttr rule{};
  // A rule on a file takes only the rights that apply to files; any other makes it EINVAL.
  rule.allowed_access = S_ISDIR(st.st_mode) ? rights : (rights & kFileRights);
  rule.parent_fd = fd.get();
  if (rule.allowed_access == 0) return {};
  if (::syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &rule, 0) != 0)
    return failure("landlock_add_rule '" + path + "'", errno,
                   "a path the kernel refuses as a rule; report it with the kernel version");
  return {};
}

}  // namespace

std::string apply_landlock(const CapabilityPolicy& policy,
                           const std::vector<std::string>& system_read, int kernel_abi) {
  if (kernel_abi == 0) return {};
  // Rights of an ABI this code does not know are never handled: their meaning is untested here.
  const int abi = kernel_abi < kHighestHandledLandlockAbi ? kernel_abi : kHighestHandledLandlockAbi;
  RulesetAttr attr{};
  attr.handled_access_fs = handled_fs(abi);
  size_t size = sizeof attr.handled_access_fs;
  if (abi >= 4) {
    size = offsetof(RulesetAttr, scoped);
    // Handled with no port rule: every TCP bind and connect is refused.
    if (!policy.network) attr.handled_access_net = kBindTcp | kConnectTcp;
  }
  if (abi >= 6) {
    size = sizeof attr;
    attr.scoped = kScopeAbstractUnixSocket | kScopeSignal;
  }
  const Descriptor ruleset(
      static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, size, 0)));
  if (ruleset.get() < 0)
    return failure("landlock_create_ruleset (ABI " + std::to_string(abi) + ")", errno,
                   "the kernel refused the ruleset; run with confine = off to go on unconfined");
  const uint64_t read = read_rights(policy.processes) & attr.handled_access_fs;
  const uint64_t write = write_rights(policy.processes) & attr.handled_access_fs;
  for (const std::string& path : system_read)
    if (std::string error = add_path(ruleset.get(), path, read, true); !error.empty()) return error;
  for (const std::string& path : policy.read)
    if (std::string error = add_path(ruleset.get(), path, read, false); !error.empty())
      return error;
  for (const std::string& path : policy.write)
    if (std::string error = add_path(ruleset.get(), path, write, false); !error.empty())
      return error;
  if (::syscall(SYS_landlock_restrict_self, ruleset.get(), 0) != 0)
    return failure("landlock_restrict_self", errno,
                   "NO_NEW_PRIVS must be set first; run with confine = off to go on unconfined");
  return {};
}

}  // namespace hookhost::confine
