#include "confine/violation.hpp"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <sched.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace hookhost::confine {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kNativeArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kNativeArch = AUDIT_ARCH_AARCH64;
#else
constexpr uint32_t kNativeArch = 0;
#endif

constexpr const char* kMount = "mount a file system";
constexpr const char* kNamespace = "create or enter a namespace";
constexpr const char* kKeyring = "use the kernel's keyrings";
constexpr const char* kIoUring = "use io_uring (calls no filter sees)";
constexpr const char* kModule = "load or unload a kernel module";
constexpr const char* kOtherMemory = "read or write another process's memory";
constexpr const char* kSignal = "signal another process";
constexpr const char* kProcess = "start a process";
constexpr const char* kProgram = "start a program";

// Each call only where this architecture has it (fork, vfork: not on aarch64).
// clang-format off
#define HH_CALL(name, when, what) DeniedCall{__NR_##name, #name, DeniedWhen::when, what}
constexpr DeniedCall kDeniedCalls[] = {
    HH_CALL(ptrace, always, "attach a debugger to a process"),
    HH_CALL(process_vm_readv, always, kOtherMemory),
    HH_CALL(process_vm_writev, always, kOtherMemory),
    HH_CALL(pidfd_getfd, always, "take a descriptor of another process"),
    HH_CALL(mount, always, kMount),
    HH_CALL(umount2, always, kMount),
    HH_CALL(pivot_root, always, "change the root folder"),
    HH_CALL(chroot, always, "change the root folder"),
    HH_CALL(fsopen, always, kMount),
    HH_CALL(fsconfig, always, kMount),
    HH_CALL(fsmount, always, kMount),
    HH_CALL(fspick, always, kMount),
    HH_CALL(move_mount, always, kMount),
    HH_CALL(open_tree, always, kMount),
    HH_CALL(mount_setattr, always, kMount),
    HH_CALL(unshare, always, kNamespace),
    HH_CALL(setns, always, kNamespace),
    HH_CALL(clone, clone_namespace, kNamespace),
    HH_CALL(bpf, always, "load a bpf program"),
    HH_CALL(perf_event_open, always, "open a performance monitor"),
    HH_CALL(keyctl, always, kKeyring),
    HH_CALL(add_key, always, kKeyring),
    HH_CALL(request_key, always, kKeyring),
    HH_CALL(io_uring_setup, always, kIoUring),
    HH_CALL(io_uring_enter, always, kIoUring),
    HH_CALL(io_uring_register, always, kIoUring),
    HH_CALL(kexec_load, always, "load a new kernel"),
    HH_CALL(kexec_file_load, always, "load a new kernel"),
    HH_CALL(init_module, always, kModule),
    HH_CALL(finit_module, always, kModule),
    HH_CALL(delete_module, always, kModule),
    HH_CALL(userfaultfd, always, "handle page faults in user space"),
    HH_CALL(open_by_handle_at, always, "open a file by its handle, past every folder's permissions"),
    HH_CALL(swapon, always, "change the swap space"),
    HH_CALL(swapoff, always, "change the swap space"),
    HH_CALL(reboot, always, "reboot the machine"),
    HH_CALL(acct, always, "switch process accounting"),
    HH_CALL(quotactl, always, "change disk quotas"),
    HH_CALL(kill, other_pid, kSignal),
    HH_CALL(tkill, other_pid, kSignal),
    HH_CALL(tgkill, other_pid, kSignal),
    HH_CALL(rt_sigqueueinfo, other_pid, kSignal),
    HH_CALL(rt_tgsigqueueinfo, other_pid, kSignal),
    HH_CALL(pidfd_open, other_pid, "open a descriptor of another process"),
    HH_CALL(pidfd_send_signal, always_eperm, kSignal),
    HH_CALL(socket, not_af_unix, "open a network socket"),
    HH_CALL(connect, without_network, "connect a socket"),
#ifdef __NR_fork
    HH_CALL(fork, without_processes, kProcess),
#endif
#ifdef __NR_vfork
    HH_CALL(vfork, without_processes, kProcess),
#endif
    HH_CALL(clone, clone_process, kProcess),
    HH_CALL(execve, without_processes, kProgram),
    HH_CALL(execveat, without_processes, kProgram),
};
// clang-format on
#undef HH_CALL

bool matches(const DeniedCall& call, const uint64_t (&args)[6]) {
  if (call.when == DeniedWhen::clone_namespace) return (args[0] & clone_namespace_flags()) != 0;
  return true;
}

// The first entry for `nr` that these arguments match (clone has two), or null.
const DeniedCall* find_call(int nr, const uint64_t (&args)[6]) {
  for (const DeniedCall& call : kDeniedCalls)
    if (call.nr == nr && matches(call, args)) return &call;
  return nullptr;
}

std::string socket_domain(uint64_t domain) {
  switch (domain) {
    case AF_INET: return "AF_INET";
    case AF_INET6: return "AF_INET6";
    case AF_NETLINK: return "AF_NETLINK";
    case AF_PACKET: return "AF_PACKET";
    case AF_VSOCK: return "AF_VSOCK";
    case AF_BLUETOOTH: return "AF_BLUETOOTH";
    default: return "domain " + std::to_string(domain);
  }
}

std::string pid_text(uint64_t arg) {
  return "pid " + std::to_string(static_cast<int32_t>(static_cast<uint32_t>(arg)));
}

std::string hex(uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), kDigits[value % 16]);
    value /= 16;
  } while (value);
  return "0x" + out;
}

// SIGSYS's si_code when a filter trapped (asm-generic/siginfo.h; glibc 2.36 does not name it).
constexpr int kSiCodeSeccomp = 1;

std::atomic<uint32_t> g_instance{0};
static_assert(std::atomic<uint32_t>::is_always_lock_free);
int g_violation_fd = -1;

// Ends the process by SIGSYS from inside its SIGSYS handler, where SIGSYS is blocked and its
// handler cannot be reset (the filter refuses rt_sigaction(SIGSYS)): a second trapped call makes
// the kernel force the signal, and a forced signal that is blocked gets the default action back.
[[noreturn]] void die_of_sigsys() {
  ::syscall(SYS_ptrace, PTRACE_PEEKDATA, 0, 0, 0);  // in the table: traps
  ::syscall(SYS_exit_group, 128 + SIGSYS);          // reached only if no filter trapped it
  __builtin_unreachable();
}

void on_sigsys(int, siginfo_t* info, void* context) {
  if (info->si_code != kSiCodeSeccomp) return;  // a SIGSYS the process sent itself
  const int saved_errno = errno;
  auto* uc = static_cast<ucontext_t*>(context);
  ViolationRecord record{};
  record.magic = kViolationMagic;
  record.instance = g_instance.load(std::memory_order_relaxed);
  record.nr = info->si_syscall;
  record.arch = info->si_arch;
#if defined(__x86_64__)
  const greg_t* regs = uc->uc_mcontext.gregs;
  const int order[6] = {REG_RDI, REG_RSI, REG_RDX, REG_R10, REG_R8, REG_R9};
  for (int k = 0; k < 6; ++k) record.args[k] = static_cast<uint64_t>(regs[order[k]]);
#elif defined(__aarch64__)
  for (int k = 0; k < 6; ++k) record.args[k] = uc->uc_mcontext.regs[k];
#endif
  record.fatal = is_fatal(record.nr, record.args) ? 1 : 0;
  if (g_violation_fd >= 0) (void)!::write(g_violation_fd, &record, sizeof record);
  if (record.fatal) die_of_sigsys();
#if defined(__x86_64__)
  // The trapped call did not run; returning with -EPERM in rax makes it fail as an errno action
  // would (other architectures refuse ordinary calls with SCMP_ACT_ERRNO and never get here).
  uc->uc_mcontext.gregs[REG_RAX] = -EPERM;
#else
  (void)uc;
  die_of_sigsys();
#endif
  errno = saved_errno;
}

}  // namespace

std::span<const DeniedCall> denied_calls() {
  return kDeniedCalls;
}

uint64_t clone_namespace_flags() {
  // CLONE_NEWTIME sits in clone's exit-signal byte: only unshare and clone3 take it.
  return CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
         CLONE_NEWPID | CLONE_NEWNET;
}

bool is_fatal(int nr, const uint64_t (&args)[6]) {
  const DeniedCall* call = find_call(nr, args);
  return call && (call->when == DeniedWhen::always || call->when == DeniedWhen::clone_namespace);
}

ViolationText describe_violation(const ViolationRecord& record) {
  if (record.magic != kViolationMagic)
    return {"send a malformed violation record", "", "magic " + hex(record.magic)};
  if (record.arch != kNativeArch)
    return {"make a system call of another architecture",
            "system call " + std::to_string(record.nr), "arch " + hex(record.arch)};
  const DeniedCall* call = find_call(record.nr, record.args);
  if (!call)
    return {"make a system call the policy refuses", "system call " + std::to_string(record.nr),
            ""};
  ViolationText text{call->what, call->name, ""};
  const std::string_view name = call->name;
  if (call->when == DeniedWhen::other_pid || name == "process_vm_readv" ||
      name == "process_vm_writev" || name == "pidfd_send_signal")
    text.detail = name == "pidfd_send_signal" ? "descriptor " + std::to_string(record.args[0])
                                              : pid_text(record.args[0]);
  else if (name == "ptrace")
    text.detail = pid_text(record.args[1]);
  else if (call->when == DeniedWhen::not_af_unix)
    text.detail = socket_domain(record.args[0]);
  else if (name == "clone" || name == "unshare")
    text.detail = "flags " + hex(record.args[0]);
  return text;
}

void set_current_instance(uint32_t instance) {
  g_instance.store(instance, std::memory_order_relaxed);
}
uint32_t current_instance() {
  return g_instance.load(std::memory_order_relaxed);
}

std::string install_violation_reporter(int fd) {
  // A descriptor that is not open now could be a plugin's file later: records then go nowhere.
  if (fd >= 0 && ::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) fd = -1;
  g_violation_fd = fd;
  struct sigaction action {};
  action.sa_sigaction = on_sigsys;
  action.sa_flags = SA_SIGINFO;  // no SA_NODEFER: die_of_sigsys needs SIGSYS blocked
  sigemptyset(&action.sa_mask);
  if (::sigaction(SIGSYS, &action, nullptr) != 0)
    return std::string("sigaction(SIGSYS): ") + std::strerror(errno);
  return {};
}

}  // namespace hookhost::confine
