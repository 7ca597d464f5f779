// A confined runner's resource limits (setrlimit), in two parts: those that may come before the
// filters, and those that must come after them, since libseccomp and Landlock need memory and
// descriptors of their own (RLIMIT_AS under ASan, RLIMIT_NOFILE).
#pragma once

#include <cstdint>
#include <string>

#include "confine/policy.hpp"

namespace hookhost::confine {

// RLIMIT_CPU, RLIMIT_FSIZE (and SIGXFSZ ignored, so a write past it fails with EFBIG) and
// RLIMIT_NPROC, each when set. Returns "" or what failed.
std::string set_early_limits(const ResourceLimits& limits);

// The address space the process uses now, which an RLIMIT_AS is set on top of under ASan (its
// shadow takes terabytes of it at start); 0 in other builds. Read before confinement.
uint64_t address_space_base();

// RLIMIT_NOFILE and RLIMIT_AS (`base` + the limit), each when set. Returns "" or what failed.
std::string set_late_limits(const ResourceLimits& limits, uint64_t base);

}  // namespace hookhost::confine
