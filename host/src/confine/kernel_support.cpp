#include "confine/kernel_support.hpp"

#include <errno.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace hookhost::confine {
namespace {

// Asks the kernel whether a filter may return `action`, which loads nothing. Before Linux 4.14
// the question itself is unknown (EINVAL): filters then have ERRNO and TRAP but not KILL_PROCESS.
bool action_available(uint32_t action) {
  if (::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0) return true;
  if (errno != EINVAL || action == SECCOMP_RET_KILL_PROCESS) return false;
  return ::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
}

int detect_landlock_abi() {
  constexpr uint32_t kCreateRulesetVersion = 1u << 0;
  const long version = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  return version < 0 ? 0 : static_cast<int>(version);
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : ", ") + part;
  return out;
}

}  // namespace

bool filter_usable(const KernelSupport& s) {
  return s.no_new_privs && s.seccomp_errno && s.seccomp_trap;
}

KernelSupport detect_kernel_support() {
  KernelSupport s;
  s.no_new_privs = ::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) >= 0;
  s.seccomp_errno = action_available(SECCOMP_RET_ERRNO);
  s.seccomp_trap = action_available(SECCOMP_RET_TRAP);
  s.seccomp_kill_process = action_available(SECCOMP_RET_KILL_PROCESS);
  s.landlock_abi = detect_landlock_abi();
  return s;
}

std::string describe_confinement(const KernelSupport& support) {
  std::string line = "confinement: ";
  if (!filter_usable(support))
    return line + "not enforced: this kernel has no " +
           (!support.no_new_privs ? "PR_SET_NO_NEW_PRIVS"
                                  : "seccomp filters that trap or return an errno") +
           "; sandboxed hooks run unconfined (they may ptrace and signal other processes, mount, "
           "load bpf programs, open network sockets, start programs and read and write every "
           "file their user may)";
  line +=
      "sandboxed hooks run under a seccomp filter that allows only what a hook needs (no "
      "ptrace, mounts, namespaces, bpf, keyrings, io_uring or kernel modules: the runner is "
      "stopped and the call named; no signals, limits or priorities of other processes, "
      "and no file metadata changes, network sockets or new processes unless the hook's "
      "policy allows them; any other call fails with EPERM, named)";
  const int abi = support.landlock_abi;
  if (abi == 0) return line + "; not enforced: file access (no Landlock in this kernel)";
  line += " and Landlock ABI " + std::to_string(abi) + " (files";
  if (abi >= 4) line += ", TCP ports";
  if (abi >= 6) line += ", signal and abstract unix socket scopes";
  line += ")";
  std::vector<std::string> missing;
  if (abi < 3)
    missing.push_back(
        "truncating files by path for hooks that may change file metadata "
        "(Landlock ABI < 3; the filter refuses truncate(2) to the others)");
  if (abi < 4) missing.push_back("TCP ports (Landlock ABI < 4; the filter still refuses sockets)");
  if (abi < 6) missing.push_back("signal and abstract unix socket scopes (Landlock ABI < 6)");
  if (!missing.empty()) line += "; not enforced: " + join(missing);
  return line;
}

std::vector<std::string> not_enforced(const CapabilityPolicy& policy,
                                      const KernelSupport& support) {
  std::vector<std::string> missing;
  if (!filter_usable(support)) {
    missing.push_back("system calls (no seccomp filters that trap)");
    if (!policy.network) missing.push_back("network sockets (no seccomp filters)");
    if (!policy.processes) missing.push_back("new processes (no seccomp filters)");
  }
  const int abi = support.landlock_abi;
  if (abi == 0) {
    missing.push_back("file access (no Landlock)");
  } else {
    if (abi < 3 && policy.metadata)
      missing.push_back("truncating files by path (Landlock ABI < 3)");
    if (!policy.network && abi < 4) missing.push_back("TCP ports (Landlock ABI < 4)");
  }
  // Without the scopes only the filter guards signals and abstract sockets: it refuses signals to
  // other pids and connect() without the network, but not a child's signals or an allowed
  // network's abstract sockets.
  if (abi < 6) {
    if (policy.processes)
      missing.push_back("signals from the hook's child processes (Landlock ABI < 6)");
    if (policy.network) missing.push_back("abstract unix sockets (Landlock ABI < 6)");
  }
  return missing;
}

}  // namespace hookhost::confine
