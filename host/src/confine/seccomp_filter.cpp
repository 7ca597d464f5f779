#include "confine/seccomp_filter.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>

#include "confine/allowed_calls.hpp"
#include "confine/violation.hpp"

namespace hookhost::confine {
namespace {

// The kernel's SOCK_TYPE_MASK: a socket's type without SOCK_NONBLOCK and SOCK_CLOEXEC.
constexpr uint64_t kSocketTypeMask = 0xf;

std::string failure(const std::string& what, int error) {
  return what + ": " + std::strerror(error) +
         " (the filter was not loaded; run with confine = off to go on unconfined)";
}

struct ReleaseFilter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};

// The calls on paths: Landlock decides them. Where refusals are named they trap, and the
// reporter makes them itself with the pass value in the sixth argument, which lets them through.
template <typename Add>
void add_file_calls(const CapabilityPolicy& policy, int landlock_abi, Add& add) {
  const bool naming = policy.restrict_files && names_file_denials(policy.processes);
  for (const FileCall& call : file_calls()) {
    // Before ABI 3 Landlock does not govern truncate(2): refused, unless metadata is allowed.
    if (call.nr == SCMP_SYS(truncate) && policy.restrict_files && !policy.metadata &&
        landlock_abi < 3) {
      add(call.name, call.nr, SCMP_ACT_ERRNO(EPERM), {});
      continue;
    }
    if (naming)
      add(call.name, call.nr, SCMP_ACT_ALLOW, {SCMP_A5(SCMP_CMP_EQ, kFileCallPassMagic, 0)});
    else
      add(call.name, call.nr, SCMP_ACT_ALLOW, {});
  }
}

}  // namespace

std::string load_seccomp_filter(const CapabilityPolicy& policy, int landlock_abi) {
#if defined(__x86_64__)
  // Every call the allow-list does not let through traps: the reporter writes a record and makes
  // it return -EPERM (it sets rax), or ends the runner for a call of the fatal table.
  const uint32_t refuse = SCMP_ACT_TRAP;
#else
  const uint32_t refuse = SCMP_ACT_ERRNO(EPERM);
#endif
  std::unique_ptr<void, ReleaseFilter> ctx(seccomp_init(refuse));
  if (!ctx) return failure("seccomp_init", ENOMEM);
  // Calls of another architecture (the i386 ABI on x86_64) kill the whole runner: libseccomp's
  // default would kill the calling thread alone.
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS); rc != 0)
    return failure("seccomp_attr_set(SCMP_FLTATR_ACT_BADARCH)", -rc);
  // A binary tree over the call numbers: every call a hook makes passes the filter, and an
  // allow-list of this size is a long chain of comparisons otherwise.
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2); rc != 0)
    return failure("seccomp_attr_set(SCMP_FLTATR_CTL_OPTIMIZE)", -rc);
  std::string error;
  auto add = [&](const char* name, int nr, uint32_t action,
                 std::initializer_list<scmp_arg_cmp> args) {
    if (!error.empty() || action == refuse) return;  // the default already (libseccomp refuses it)
    const int rc = seccomp_rule_add_array(ctx.get(), action, nr, static_cast<unsigned>(args.size()),
                                          args.size() ? args.begin() : nullptr);
    if (rc != 0) error = failure(std::string("seccomp_rule_add(") + name + ")", -rc);
  };
  // Exact 64-bit comparisons: 0, negative pids (process groups, -1 for every process) and pids
  // with high bits the kernel would drop all differ from this one.
  const uint64_t self = static_cast<uint64_t>(::getpid());
  const uint64_t namespaces = clone_namespace_flags();
  for (const AllowedCall& call : allowed_calls()) {
    const int nr = seccomp_syscall_resolve_name(call.name);
    if (nr < 0) continue;  // unknown to libseccomp, or not a call of this architecture
    const auto allow = [&](std::initializer_list<scmp_arg_cmp> args) {
      add(call.name, nr, SCMP_ACT_ALLOW, args);
    };
    switch (call.when) {
      case AllowedWhen::always: allow({}); break;
      case AllowedWhen::own_pid: allow({SCMP_A0(SCMP_CMP_EQ, self, 0)}); break;
      case AllowedWhen::own_pid_or_zero:
        allow({SCMP_A0(SCMP_CMP_EQ, self, 0)});
        allow({SCMP_A0(SCMP_CMP_EQ, 0, 0)});
        break;
      case AllowedWhen::af_unix:
        if (policy.network) {
          allow({});
        } else {
          // Stream and packet sockets reach nothing without connect; a datagram socket's sendto
          // reaches any named socket (/dev/log), one from socketpair() too (an address given to
          // sendto overrides its peer), so neither call makes one.
          for (uint64_t type : {uint64_t{SOCK_STREAM}, uint64_t{SOCK_SEQPACKET}})
            allow({SCMP_A0(SCMP_CMP_EQ, uint64_t{AF_UNIX}, 0),
                   SCMP_A1(SCMP_CMP_MASKED_EQ, kSocketTypeMask, type)});
        }
        break;
      case AllowedWhen::with_network:
        if (policy.network) allow({});
        break;
      case AllowedWhen::with_processes:
        if (policy.processes) allow({});
        break;
      case AllowedWhen::clone_thread:
        if (policy.processes)
          allow({SCMP_A0(SCMP_CMP_MASKED_EQ, namespaces, 0)});
        else
          allow({SCMP_A0(SCMP_CMP_MASKED_EQ, namespaces | CLONE_THREAD, uint64_t{CLONE_THREAD})});
        break;
      case AllowedWhen::with_metadata:
        if (policy.metadata || !policy.restrict_files) allow({});
        break;
      case AllowedWhen::fcntl:
        for (uint64_t command : allowed_fcntl_commands()) allow({SCMP_A1(SCMP_CMP_EQ, command, 0)});
        // A descriptor may signal the runner itself, never another process.
        allow({SCMP_A1(SCMP_CMP_EQ, uint64_t{F_SETOWN}, 0), SCMP_A2(SCMP_CMP_EQ, self, 0)});
        break;
      case AllowedWhen::ioctl:
        // The kernel reads the request as 32 bits.
        for (uint64_t request : allowed_ioctl_requests())
          allow({SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, request)});
        break;
      case AllowedWhen::prctl:
        for (uint64_t option : allowed_prctl_options()) allow({SCMP_A0(SCMP_CMP_EQ, option, 0)});
        break;
      case AllowedWhen::rt_sigaction:
        allow({SCMP_A0(SCMP_CMP_NE, uint64_t{SIGSYS}, 0)});
        allow({SCMP_A0(SCMP_CMP_EQ, uint64_t{SIGSYS}, 0), SCMP_A1(SCMP_CMP_EQ, 0, 0)});
        break;
    }
  }
  // On other architectures, where refusals are plain errnos, the fatal calls still trap.
  for (const DeniedCall& call : denied_calls())
    if (call.when == DeniedWhen::always) add(call.name, call.nr, SCMP_ACT_TRAP, {});
  add_file_calls(policy, landlock_abi, add);
  // clone3 takes its flags in memory, where a filter cannot read them: ENOSYS makes glibc fall
  // back to clone, whose flags the rules above see.
  add("clone3", SCMP_SYS(clone3), SCMP_ACT_ERRNO(ENOSYS), {});
  if (!error.empty()) return error;
  // NO_NEW_PRIVS is the caller's (apply_policy sets it before Landlock).
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0); rc != 0)
    return failure("seccomp_attr_set(NNP)", -rc);
  // Threads started before this call get the filter too (none should exist).
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_TSYNC, 1); rc != 0)
    return failure("seccomp_attr_set(TSYNC)", -rc);
  // The runner runs as the host's user and may read what it may: a speculative side channel gives
  // it nothing more, so the filter does not turn on the kernel's store-bypass mitigation (which
  // slows every computation). Kernels too old for the flag keep their default.
  seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_SSB, 1);
  if (int rc = seccomp_load(ctx.get()); rc != 0) return failure("seccomp_load", -rc);
  return {};
}

}  // namespace hookhost::confine
