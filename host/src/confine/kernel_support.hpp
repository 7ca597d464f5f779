// What the running kernel lets a runner's confinement enforce, found without confining anything:
// the one line the host logs about it per job, and what a given policy would lose on this kernel
// (the host refuses to start under confine = required when that is not empty).
#pragma once

#include <string>
#include <vector>

#include "confine/policy.hpp"

namespace hookhost::confine {

struct KernelSupport {
  bool no_new_privs = false;          // prctl(PR_SET_NO_NEW_PRIVS), Linux 3.5
  bool seccomp_errno = false;         // seccomp filters returning an errno
  bool seccomp_trap = false;          // ... raising SIGSYS (the violation records)
  bool seccomp_kill_process = false;  // ... killing the whole process, Linux 4.14
  int landlock_abi = 0;               // 0: no Landlock (not built, or not in the LSM list)
};

KernelSupport detect_kernel_support();
// Whether this kernel can load the filter (NO_NEW_PRIVS, seccomp that traps and returns errnos).
bool filter_usable(const KernelSupport& support);

// "confinement: sandboxed hooks run under Landlock ABI 6 (...) and a seccomp filter (...)", or
// what is not enforced and why.
std::string describe_confinement(const KernelSupport& support);

// What of `policy` this kernel cannot enforce ("file access (no Landlock)", "TCP ports (Landlock
// ABI < 4)", ...); empty when all of it is.
std::vector<std::string> not_enforced(const CapabilityPolicy& policy, const KernelSupport& support);

}  // namespace hookhost::confine
