#include "confine/apply.hpp"

#include <errno.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include <cstring>

#include "support/openat2.hpp"
#include "support/unique_fd.hpp"

#include "confine/kernel_support.hpp"
#include "confine/landlock.hpp"
#include "confine/resource_limits.hpp"
#include "confine/seccomp_filter.hpp"
#include "confine/violation.hpp"

namespace hookhost::confine {
namespace {

// Every path of the policy exists now: Landlock binds a rule to what a path names when it is
// added, and a missing one is the host's mistake whether or not this kernel has Landlock. One
// reached through a symbolic link is not looked through (the hook may have planted the link, to
// nowhere): Landlock leaves it out and says so.
std::string check_paths(const CapabilityPolicy& policy) {
  for (const auto* paths : {&policy.read, &policy.write})
    for (const std::string& path : *paths) {
      const UniqueFd fd(open_resolved(AT_FDCWD, path.c_str(), O_PATH | O_CLOEXEC,
                                      RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
      if (fd || errno == ELOOP) continue;
      struct stat st {};
      if (errno != ENOSYS || ::stat(path.c_str(), &st) != 0)
        return "'" + path + "': " + std::strerror(errno) +
               " (every path of a capability policy must exist when the runner starts)";
    }
  return {};
}

}  // namespace

std::string apply_policy(const CapabilityPolicy& policy, int violation_fd) {
  if (std::string error = check_paths(policy); !error.empty()) return error;
  const KernelSupport support = detect_kernel_support();
  // What this kernel lacks the host says once per job (describe_confinement) and confine =
  // required refuses; here only the limits still apply. Anything that fails below is an error.
  if (!filter_usable(support)) {
    if (std::string error = set_early_limits(policy.limits); !error.empty()) return error;
    return set_late_limits(policy.limits, address_space_base());
  }
  if (std::string error = install_violation_reporter(violation_fd); !error.empty()) return error;
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return std::string("prctl(PR_SET_NO_NEW_PRIVS): ") + std::strerror(errno);
  const uint64_t base = address_space_base();
  if (std::string error = set_early_limits(policy.limits); !error.empty()) return error;
  if (policy.restrict_files)
    if (std::string error = apply_landlock(policy, system_read_paths(), support.landlock_abi);
        !error.empty())
      return error;
  if (std::string error = load_seccomp_filter(policy, support.landlock_abi); !error.empty())
    return error;
  return set_late_limits(policy.limits, base);
}

}  // namespace hookhost::confine
