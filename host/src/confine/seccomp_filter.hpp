// The seccomp filter of a confined runner, built from the one table of denied calls
// (confine/violation.hpp): calls no hook needs trap and end the runner (SIGSYS) after a record;
// ordinary denials (signals to other processes, the network, new processes, as the policy says)
// trap too, write a record and fail with EPERM; clone3 fails with ENOSYS so glibc uses clone,
// whose flags the filter sees; a new SIGSYS handler is refused so the reporter stays. Calls on
// files trap where names_file_denials() says, only so that a Landlock refusal can be named.
#pragma once

#include <string>

#include "confine/policy.hpp"

namespace hookhost::confine {

// Loads the filter on every thread of the calling process (TSYNC), for good. NO_NEW_PRIVS must be
// set and the violation reporter installed already. Returns "" or what failed.
std::string load_seccomp_filter(const CapabilityPolicy& policy);

}  // namespace hookhost::confine
