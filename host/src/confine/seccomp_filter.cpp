#include "confine/seccomp_filter.hpp"

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>

#include "confine/violation.hpp"

namespace hookhost::confine {
namespace {

std::string failure(const std::string& what, int error) {
  return what + ": " + std::strerror(error) +
         " (the filter was not loaded; run with confine = off to go on unconfined)";
}

struct ReleaseFilter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};

}  // namespace

std::string load_seccomp_filter(const CapabilityPolicy& policy) {
  // Everything the table does not name is allowed; calls of another architecture (the i386 ABI
  // on x86_64) kill the process, libseccomp's default.
  std::unique_ptr<void, ReleaseFilter> ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return failure("seccomp_init", ENOMEM);
  const uint32_t fatal = SCMP_ACT_TRAP;
#if defined(__x86_64__)
  // The reporter writes a record and makes the call return -EPERM (it sets rax).
  const uint32_t refuse = SCMP_ACT_TRAP;
#else
  const uint32_t refuse = SCMP_ACT_ERRNO(EPERM);
#endif
  std::string error;
  auto add = [&](const char* name, int nr, uint32_t action,
                 std::initializer_list<scmp_arg_cmp> args) {
    if (!error.empty()) return;
    const int rc = seccomp_rule_add_array(ctx.get(), action, nr, static_cast<unsigned>(args.size()),
                                          args.size() ? args.begin() : nullptr);
    if (rc != 0) error = failure(std::string("seccomp_rule_add(") + name + ")", -rc);
  };
  // A 64-bit comparison: 0, negative pids (process groups, -1 for every process) and pids with
  // high bits the kernel would drop all differ from this one.
  const uint64_t self = static_cast<uint64_t>(::getpid());
  for (const DeniedCall& call : denied_calls()) {
    switch (call.when) {
      case DeniedWhen::always: add(call.name, call.nr, fatal, {}); break;
      case DeniedWhen::clone_namespace:
        for (uint64_t flag = 1; flag != 0; flag <<= 1)
          if (clone_namespace_flags() & flag)
            add(call.name, call.nr, fatal, {SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)});
        break;
      case DeniedWhen::other_pid:
        add(call.name, call.nr, refuse, {SCMP_A0(SCMP_CMP_NE, self, 0)});
        break;
      case DeniedWhen::always_eperm: add(call.name, call.nr, refuse, {}); break;
      case DeniedWhen::not_af_unix:
        if (!policy.network)
          add(call.name, call.nr, refuse, {SCMP_A0(SCMP_CMP_NE, uint64_t{AF_UNIX}, 0)});
        break;
      case DeniedWhen::without_network:
        if (!policy.network) add(call.name, call.nr, refuse, {});
        break;
      case DeniedWhen::without_processes:
        if (!policy.processes) add(call.name, call.nr, refuse, {});
        break;
      case DeniedWhen::clone_process:
        if (!policy.processes)
          add(call.name, call.nr, refuse, {SCMP_A0(SCMP_CMP_MASKED_EQ, uint64_t{CLONE_THREAD}, 0)});
        break;
    }
  }
  // Calls on files trap only to be named: the handler makes them itself, with the magic in the
  // sixth argument that none of them uses, and Landlock decides.
  if (policy.restrict_files && names_file_denials(policy.processes))
    for (const FileCall& call : file_calls())
      add(call.name, call.nr, SCMP_ACT_TRAP, {SCMP_A5(SCMP_CMP_NE, kFileCallPassMagic, 0)});
  // clone3 takes its flags in memory, where a filter cannot read them: ENOSYS makes glibc fall
  // back to clone, whose flags the rules above see.
  add("clone3", SCMP_SYS(clone3), SCMP_ACT_ERRNO(ENOSYS), {});
  // The reporter stays: a hook may ask what the SIGSYS action is, never set one.
  add("rt_sigaction", SCMP_SYS(rt_sigaction), SCMP_ACT_ERRNO(EPERM),
      {SCMP_A0(SCMP_CMP_EQ, uint64_t{SIGSYS}, 0), SCMP_A1(SCMP_CMP_NE, 0, 0)});
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
