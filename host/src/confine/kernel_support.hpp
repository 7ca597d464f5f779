// What the running kernel lets a runner's baseline confinement enforce, found without confining
// anything, and the one line the host logs about it per job.
#pragma once

#include <string>

namespace hookhost::confine {

struct KernelSupport {
  bool no_new_privs = false;   // prctl(PR_SET_NO_NEW_PRIVS), Linux 3.5
  bool seccomp_errno = false;  // seccomp filters returning an errno
};

KernelSupport detect_kernel_support();

// "confinement: sandboxed hooks run with no ptrace, ... (seccomp)", or what is not enforced and
// why.
std::string describe_baseline(const KernelSupport& support);

}  // namespace hookhost::confine
