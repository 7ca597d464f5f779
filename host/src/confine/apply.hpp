// A sandboxed hook's runner applying its capability policy to itself (docs/isolation.md,
// "Confinement"), before any plugin code is loaded.
#pragma once

#include <string>

#include "confine/policy.hpp"

namespace hookhost::confine {

// In this order: the violation reporter (records to `violation_fd`; nowhere when it is < 0),
// NO_NEW_PRIVS, the limits that may come first, Landlock (the policy's paths and
// system_read_paths()), the seccomp filter, then RLIMIT_NOFILE and RLIMIT_AS. Call it while the
// process has one thread. Returns "" or what failed (the process is then partly confined: the
// caller should not run hooks it meant to confine). A part the kernel lacks is skipped, not an
// error: not_enforced() names it.
std::string apply_policy(const CapabilityPolicy& policy, int violation_fd);

}  // namespace hookhost::confine
