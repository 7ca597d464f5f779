#include "confine/baseline.hpp"

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>

namespace hookhost::confine {
namespace {

std::string failure(const char* what, int error) {
  return std::string(what) + ": " + std::strerror(error);
}

// The calls that act on the system or on other processes, refused whatever their arguments.
// clang-format off
constexpr const char* kRefused[] = {
    "ptrace", "process_vm_readv", "process_vm_writev",               // other processes
    "pidfd_send_signal",                                             // to whom: unknown
    "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick",
    "move_mount", "open_tree", "mount_setattr",                      // mounts
    "unshare", "setns",                                              // namespaces
    "bpf", "perf_event_open",
    "keyctl", "add_key", "request_key",                              // keyrings
    "io_uring_setup", "io_uring_enter", "io_uring_register",         // calls no filter sees
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module"};
// clang-format on

// Signal calls whose first argument is the target process (kill, rt_sigqueueinfo: a pid; tgkill,
// rt_tgsigqueueinfo: a thread group; tkill: a thread, so only the main thread's passes; pidfd_open:
// the pid a descriptor would stand for).
constexpr const char* kSignalCalls[] = {
    "kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open"};

// clone() flags that make namespaces: refused as unshare is. (CLONE_NEWTIME is in the exit signal
// byte of clone's flags; only unshare and clone3 take it.)
constexpr uint64_t kNamespaceFlags[] = {CLONE_NEWNS,   CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
                                        CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET};

struct ReleaseFilter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};

}  // namespace

std::string apply_baseline() {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return failure("prctl(PR_SET_NO_NEW_PRIVS)", errno);
  // Everything the lists do not name is allowed; calls of another architecture (the i386 ABI on
  // x86_64) kill the process, libseccomp's default.
  std::unique_ptr<void, ReleaseFilter> ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return "seccomp_init failed";
  const uint32_t refuse = SCMP_ACT_ERRNO(EPERM);
  std::string error;
  auto add = [&](const char* name, uint32_t action, std::initializer_list<scmp_arg_cmp> args) {
    if (!error.empty()) return;
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) return;  // unknown to this libseccomp: nothing to refuse
    const int rc = seccomp_rule_add_array(ctx.get(), action, nr, static_cast<unsigned>(args.size()),
                                          args.size() ? args.begin() : nullptr);
    if (rc != 0) error = failure((std::string("seccomp_rule_add(") + name + ")").c_str(), -rc);
  };
  for (const char* name : kRefused) add(name, refuse, {});
  // A 64-bit comparison: 0, negative pids (process groups, -1 for every process) and pids with
  // high bits the kernel would drop all differ from this one.
  const uint64_t self = static_cast<uint64_t>(::getpid());
  for (const char* name : kSignalCalls) add(name, refuse, {SCMP_A0(SCMP_CMP_NE, self)});
  for (uint64_t flag : kNamespaceFlags)
    add("clone", refuse, {SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)});
  // clone3 takes its flags in memory, where a filter cannot read them: ENOSYS makes glibc fall
  // back to clone, whose flags the rules above see.
  add("clone3", SCMP_ACT_ERRNO(ENOSYS), {});
  if (!error.empty()) return error;
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
