#include "confine/kernel_support.hpp"

#include <errno.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace hookhost::confine {

KernelSupport detect_kernel_support() {
  KernelSupport s;
  s.no_new_privs = ::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) >= 0;
  // Asks the kernel whether a filter may return an errno, which loads nothing.
  uint32_t action = SECCOMP_RET_ERRNO;
  if (::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0)
    s.seccomp_errno = true;
  else if (errno == EINVAL)  // before Linux 4.14, which has filters but not this question
    s.seccomp_errno = ::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
  return s;
}

std::string describe_baseline(const KernelSupport& support) {
  if (support.no_new_privs && support.seccomp_errno)
    return "confinement: sandboxed hooks run with no ptrace, no signals to other processes, no "
           "namespaces, mounts, bpf, perf events, keyrings, io_uring or kernel modules (seccomp)";
  return std::string("confinement: not enforced: this kernel has no ") +
         (support.seccomp_errno ? "PR_SET_NO_NEW_PRIVS" : "seccomp filters") +
         "; sandboxed hooks run unconfined (they may ptrace and signal other processes, create "
         "namespaces, mount, load bpf programs and use keyrings and io_uring)";
}

}  // namespace hookhost::confine
