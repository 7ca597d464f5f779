// Landlock (Linux 5.13+) for a confined runner: file access limited to the policy's paths, TCP
// bind and connect refused without the network, signals and abstract unix sockets scoped to the
// runner's own domain. Raw syscall(): glibc 2.36 has no wrappers.
#pragma once

#include <string>
#include <vector>

#include "confine/policy.hpp"

namespace hookhost::confine {

// The highest ABI whose rights this code handles; a newer kernel is used as this one.
constexpr int kHighestHandledLandlockAbi = 6;

// Restricts the calling process (and its future children) for good: reads below `policy.read`
// and `system_read`, reads and writes below `policy.write`. Returns "" or what failed, naming the
// path; a path that does not exist is an error, never widened to its parent. A policy path
// reached through a symbolic link gets no rule (said on stderr); `system_read` is followed.
// `kernel_abi` is KernelSupport::landlock_abi. With no Landlock (0) it does nothing and returns ""
// (not_enforced() says so).
std::string apply_landlock(const CapabilityPolicy& policy,
                           const std::vector<std::string>& system_read, int kernel_abi);

}  // namespace hookhost::confine
