// The seccomp filter of a confined runner: deny by default. The allow-list
// (confine/allowed_calls.hpp) lets through what a hook needs, on its conditions; every other call
// traps (x86_64), the reporter writes a record and the call fails with EPERM, or, for a call of the
// fatal part of the table of denied calls (confine/violation.hpp), the runner dies of SIGSYS.
// clone3 fails with ENOSYS so glibc uses clone, whose flags the filter sees; a new SIGSYS handler
// is refused so the reporter stays. Calls on files trap where names_file_denials() says, only so
// that a Landlock refusal can be named. Elsewhere than x86_64 a refusal is a plain EPERM, and only
// fatal calls trap.
#pragma once

#include <string>

#include "confine/policy.hpp"

namespace hookhost::confine {

// Loads the filter on every thread of the calling process (TSYNC), for good. NO_NEW_PRIVS must be
// set and the violation reporter installed already. Returns "" or what failed.
std::string load_seccomp_filter(const CapabilityPolicy& policy, int landlock_abi);

}  // namespace hookhost::confine
