// The seccomp filter's allow-list: every system call a confined hook may make, and on what
// condition. The filter refuses everything else (confine/seccomp_filter.hpp); the table of denied
// calls (confine/violation.hpp) only names refusals and says which ones end the runner.
#pragma once

#include <cstdint>
#include <span>

namespace hookhost::confine {

enum class AllowedWhen {
  always,
  own_pid,          // its first argument is the runner's pid (signals: 0 and negatives are groups)
  own_pid_or_zero,  // its first argument is 0 or the runner's pid (0: the caller itself)
  af_unix,          // socket() or socketpair() of AF_UNIX, SOCK_STREAM or SOCK_SEQPACKET; any
                    // with the network
  with_network,
  with_processes,
  clone_thread,   // clone with CLONE_THREAD and no CLONE_NEW*; any clone without CLONE_NEW* with
                  // processes
  with_metadata,  // chmod, chown, utimes, xattrs: seccomp cannot see the path, so all or nothing
  fcntl,          // the commands of allowed_fcntl_commands(); F_SETOWN to the runner only
  ioctl,          // the requests of allowed_ioctl_requests()
  prctl,          // the options of allowed_prctl_options()
  rt_sigaction,   // any signal's action but a new one for SIGSYS (the reporter stays)
};

struct AllowedCall {
  const char* name;  // as libseccomp names it; a name it does not know is skipped (not allowed)
  AllowedWhen when;
};

std::span<const AllowedCall> allowed_calls();
std::span<const uint64_t> allowed_fcntl_commands();
std::span<const uint64_t> allowed_ioctl_requests();
std::span<const uint64_t> allowed_prctl_options();

}  // namespace hookhost::confine
