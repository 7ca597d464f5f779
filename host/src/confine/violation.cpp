#include "confine/violation.hpp"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/openat2.h>
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
constexpr const char* kPriority = "change a process's priority";
constexpr const char* kScheduling = "change another process's scheduling";
constexpr const char* kMode = "change a file's permissions";
constexpr const char* kOwner = "change a file's owner";
constexpr const char* kTimes = "change a file's times";
constexpr const char* kXattr = "change a file's extended attributes";

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
    HH_CALL(socketpair, not_af_unix, "open a network socket"),
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
    // Refused by the allow-list, named for what they would do to another process or a file.
    HH_CALL(prlimit64, not_allowed, "change another process's resource limits"),
    HH_CALL(setpriority, not_allowed, kPriority),
    HH_CALL(ioprio_set, not_allowed, kPriority),
    HH_CALL(sched_setaffinity, not_allowed, kScheduling),
    HH_CALL(sched_setscheduler, not_allowed, kScheduling),
    HH_CALL(sched_setparam, not_allowed, kScheduling),
    HH_CALL(sched_setattr, not_allowed, kScheduling),
    HH_CALL(kcmp, not_allowed, "compare another process's resources"),
    HH_CALL(process_madvise, not_allowed, kOtherMemory),
    HH_CALL(process_mrelease, not_allowed, kOtherMemory),
    HH_CALL(move_pages, not_allowed, kOtherMemory),
    HH_CALL(migrate_pages, not_allowed, kOtherMemory),
    HH_CALL(fcntl, not_allowed, "use an fcntl command the policy refuses"),
    HH_CALL(ioctl, not_allowed, "use an ioctl request the policy refuses"),
    HH_CALL(prctl, not_allowed, "use a prctl option the policy refuses"),
    HH_CALL(personality, not_allowed, "change its execution domain"),
#ifdef __NR_chmod
    HH_CALL(chmod, not_allowed, kMode),
    HH_CALL(chown, not_allowed, kOwner),
    HH_CALL(lchown, not_allowed, kOwner),
    HH_CALL(utime, not_allowed, kTimes),
    HH_CALL(utimes, not_allowed, kTimes),
    HH_CALL(futimesat, not_allowed, kTimes),
#endif
    HH_CALL(fchmod, not_allowed, kMode),
    HH_CALL(fchmodat, not_allowed, kMode),
#ifdef __NR_fchmodat2
    HH_CALL(fchmodat2, not_allowed, kMode),
#endif
    HH_CALL(fchown, not_allowed, kOwner),
    HH_CALL(fchownat, not_allowed, kOwner),
    HH_CALL(utimensat, not_allowed, kTimes),
    HH_CALL(setxattr, not_allowed, kXattr),
    HH_CALL(lsetxattr, not_allowed, kXattr),
    HH_CALL(fsetxattr, not_allowed, kXattr),
    HH_CALL(removexattr, not_allowed, kXattr),
    HH_CALL(lremovexattr, not_allowed, kXattr),
    HH_CALL(fremovexattr, not_allowed, kXattr),
};
// clang-format on
#undef HH_CALL

constexpr const char* kOpens = "";  // an open's words come from its flags
// clang-format off
#define HH_FILE(name, dirfd, path, dirfd2, path2, access, flags, what) \
  FileCall{__NR_##name, #name, dirfd, path, dirfd2, path2, FileAccess::access, flags, what}
constexpr FileCall kFileCalls[] = {
#ifdef __NR_open
    HH_FILE(open, -1, 0, -1, -1, open_flags, 1, kOpens),
    HH_FILE(creat, -1, 0, -1, -1, write, -1, "write a file"),
    HH_FILE(mkdir, -1, 0, -1, -1, write, -1, "create a folder"),
    HH_FILE(rmdir, -1, 0, -1, -1, write, -1, "remove a folder"),
    HH_FILE(unlink, -1, 0, -1, -1, write, -1, "remove a file"),
    HH_FILE(rename, -1, 0, -1, 1, write, -1, "move a file"),
    HH_FILE(link, -1, 0, -1, 1, write, -1, "link a file"),
    HH_FILE(symlink, -1, 1, -1, -1, write, -1, "create a symbolic link"),
    HH_FILE(mknod, -1, 0, -1, -1, write, -1, "create a special file"),
#endif
    HH_FILE(openat, 0, 1, -1, -1, open_flags, 2, kOpens),
    HH_FILE(openat2, 0, 1, -1, -1, open_how, 2, kOpens),
    HH_FILE(mkdirat, 0, 1, -1, -1, write, -1, "create a folder"),
    HH_FILE(unlinkat, 0, 1, -1, -1, write, -1, "remove a file"),
    HH_FILE(renameat, 0, 1, 2, 3, write, -1, "move a file"),
    HH_FILE(renameat2, 0, 1, 2, 3, write, -1, "move a file"),
    HH_FILE(linkat, 0, 1, 2, 3, write, -1, "link a file"),
    HH_FILE(symlinkat, 1, 2, -1, -1, write, -1, "create a symbolic link"),
    HH_FILE(mknodat, 0, 1, -1, -1, write, -1, "create a special file"),
    HH_FILE(truncate, -1, 0, -1, -1, write, -1, "truncate a file"),
};
// clang-format on
#undef HH_FILE

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

std::string socket_type(uint64_t type) {
  switch (type & 0xf) {
    case SOCK_DGRAM: return "SOCK_DGRAM";
    case SOCK_RAW: return "SOCK_RAW";
    case SOCK_RDM: return "SOCK_RDM";
    default: return "type " + std::to_string(type & 0xf);
  }
}

std::string pid_text(uint64_t arg) {
  return "pid " + std::to_string(static_cast<int32_t>(static_cast<uint32_t>(arg)));
}

std::string fcntl_text(uint64_t command, uint64_t arg) {
  switch (command) {
    case F_SETOWN: return "F_SETOWN, " + pid_text(arg);
    case F_SETOWN_EX: return "F_SETOWN_EX";
    case F_SETSIG: return "F_SETSIG, signal " + std::to_string(arg);
    case F_SETLEASE: return "F_SETLEASE";
    case F_NOTIFY: return "F_NOTIFY";
    default: return "command " + std::to_string(command);
  }
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

// What follows is called from the SIGSYS handler: raw system calls and plain loops only.

size_t copy_text(char* out, size_t cap, const char* text) {
  size_t n = 0;
  for (; text[n] && n < cap; ++n) out[n] = text[n];
  return n;
}

// "/proc/self/fd/<fd>", in `out` (32 bytes), for readlink.
void fd_link(long fd, char* out) {
  char digits[24];
  int n = 0;
  unsigned long value = static_cast<unsigned long>(fd);
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value && n < 20);
  size_t at = copy_text(out, 14, "/proc/self/fd/");
  while (n) out[at++] = digits[--n];
  out[at] = '\0';
}

// The absolute form of `path` relative to `dirfd` (AT_FDCWD: the working folder) as the process
// sees it now, into out[0, cap); returns its length. Only for naming: Landlock has decided.
size_t absolute_path(long dirfd, const char* path, char* out, size_t cap) {
  size_t at = 0;
  if (path[0] != '/') {
    long n;
    if (static_cast<int>(dirfd) == AT_FDCWD) {
      n = ::syscall(SYS_getcwd, out, cap);  // the length with its NUL
      n = n > 0 ? n - 1 : 0;
    } else {
      char link[32];
      fd_link(dirfd, link);
      n = ::syscall(SYS_readlinkat, AT_FDCWD, link, out, cap);
      if (n < 0) n = 0;
    }
    at = static_cast<size_t>(n);
    if (at > 0 && at < cap && out[at - 1] != '/') out[at++] = '/';
  }
  return at + copy_text(out + at, cap - at, path);
}

// Appends `text` (length `n`) to the record's paths, keeping its end if it does not fit.
void append_path(char* paths, uint32_t* used, const char* text, size_t n) {
  const size_t room = kMaxViolationPathBytes - *used;
  if (n > room) {
    text += n - room;
    n = room;
  }
  for (size_t k = 0; k < n; ++k) paths[*used + k] = text[k];
  *used += static_cast<uint32_t>(n);
}

bool opens_to_write(uint64_t flags) {
  return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC)) != 0;
}

// Makes a trapped file call itself, past the filter, and names it when Landlock refused it.
long pass_file_call(const FileCall& call, const uint64_t (&args)[6], ViolationRecord* record) {
  long rc = ::syscall(call.nr, args[0], args[1], args[2], args[3], args[4], kFileCallPassMagic);
  rc = rc == -1 ? -errno : rc;
  if (rc != -EACCES || g_violation_fd < 0) return rc;
  if (call.access == FileAccess::write) {
    record->writes = 1;
  } else if (call.access == FileAccess::open_flags) {
    record->writes = opens_to_write(args[call.flags_arg]) ? 1 : 0;
  } else if (call.access == FileAccess::open_how) {
    const auto* how = reinterpret_cast<const open_how*>(args[call.flags_arg]);
    record->writes = opens_to_write(how->flags) ? 1 : 0;  // the kernel read it: it is mapped
  }
  struct Buffer {
    ViolationRecord record;
    char paths[kMaxViolationPathBytes];
  } out;
  static_assert(sizeof(Buffer) <= PIPE_BUF);
  char path[4096 + 256];
  auto dirfd = [&](int arg) { return arg < 0 ? long{AT_FDCWD} : static_cast<long>(args[arg]); };
  uint32_t used = 0;
  size_t n = absolute_path(dirfd(call.dirfd_arg),
                           reinterpret_cast<const char*>(args[call.path_arg]), path, sizeof path);
  append_path(out.paths, &used, path, n);
  if (call.second_path_arg >= 0 && used < kMaxViolationPathBytes) {
    out.paths[used++] = '\0';
    n = absolute_path(dirfd(call.second_dirfd_arg),
                      reinterpret_cast<const char*>(args[call.second_path_arg]), path, sizeof path);
    append_path(out.paths, &used, path, n);
  }
  record->path_bytes = used;
  out.record = *record;
  (void)!::write(g_violation_fd, &out, sizeof(ViolationRecord) + used);
  return rc;
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
#if defined(__x86_64__)
  if (const FileCall* call = find_file_call(record.nr)) {
    uc->uc_mcontext.gregs[REG_RAX] = pass_file_call(*call, record.args, &record);
    errno = saved_errno;
    return;
  }
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

std::span<const FileCall> file_calls() {
  return kFileCalls;
}

const FileCall* find_file_call(int nr) {
  for (const FileCall& call : kFileCalls)
    if (call.nr == nr) return &call;
  return nullptr;
}

bool names_file_denials(bool processes_allowed) {
#if defined(__x86_64__)
  return !processes_allowed;
#else
  (void)processes_allowed;
  return false;
#endif
}

bool plausible_violation(const ViolationRecord& record) {
  return record.magic == kViolationMagic && record.arch == kNativeArch &&
         (record.path_bytes == 0 || find_file_call(record.nr)) && record.writes <= 1 &&
         record.fatal <= 1;
}

void ViolationReader::append(const char* bytes, size_t size) {
  if (corrupt_) return;
  pending_.erase(0, used_);
  used_ = 0;
  pending_.append(bytes, size);
}

bool ViolationReader::next(Violation* out) {
  if (corrupt_ || pending_.size() - used_ < sizeof(ViolationRecord)) return false;
  ViolationRecord record;
  std::memcpy(&record, pending_.data() + used_, sizeof record);
  if (record.magic != kViolationMagic || record.path_bytes > kMaxViolationPathBytes) {
    corrupt_ = true;  // no framing to trust past this: pass it on as no record, paths dropped
    record.magic = 0;
    record.path_bytes = 0;
    *out = Violation{record, {}, {}};
    return true;
  }
  if (pending_.size() - used_ < sizeof record + record.path_bytes) return false;
  const std::string_view paths(pending_.data() + used_ + sizeof record, record.path_bytes);
  used_ += sizeof record + record.path_bytes;
  *out = Violation{record, {}, {}};
  const size_t split = paths.find('\0');
  out->path = std::string(paths.substr(0, split));
  if (split != std::string_view::npos) out->second_path = std::string(paths.substr(split + 1));
  return true;
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

ViolationText describe_violation(const Violation& violation) {
  const ViolationRecord& record = violation.record;
  const FileCall* call = find_file_call(record.nr);
  if (record.magic != kViolationMagic || record.arch != kNativeArch || !call)
    return describe_violation(record);
  ViolationText text{call->what, call->name, violation.path};
  if (call->access == FileAccess::open_flags || call->access == FileAccess::open_how)
    text.what = record.writes ? "write a file" : "read a file";
  if (call->access == FileAccess::open_flags && !record.writes &&
      (record.args[call->flags_arg] & O_DIRECTORY))
    text.what = "list a folder";
  if (!violation.second_path.empty()) text.detail += " -> " + violation.second_path;
  return text;
}

ViolationText describe_violation(const ViolationRecord& record) {
  if (record.magic != kViolationMagic)
    return {"send a malformed violation record", "", "magic " + hex(record.magic)};
  if (record.arch != kNativeArch)
    return {"make a system call of another architecture",
            "system call " + std::to_string(record.nr), "arch " + hex(record.arch)};
  const DeniedCall* call = find_call(record.nr, record.args);
  if (!call)
    return {"make a system call the policy does not allow",
            "system call " + std::to_string(record.nr), ""};
  ViolationText text{call->what, call->name, ""};
  const std::string_view name = call->name;
  if (call->when == DeniedWhen::other_pid || name == "process_vm_readv" ||
      name == "process_vm_writev" || name == "pidfd_send_signal")
    text.detail = name == "pidfd_send_signal" ? "descriptor " + std::to_string(record.args[0])
                                              : pid_text(record.args[0]);
  else if (name == "ptrace")
    text.detail = pid_text(record.args[1]);
  else if (call->when == DeniedWhen::not_af_unix && record.args[0] == AF_UNIX)
    text = {"open a datagram socket, which could send to any named socket", call->name,
            "AF_UNIX, " + socket_type(record.args[1])};
  else if (call->when == DeniedWhen::not_af_unix)
    text.detail = socket_domain(record.args[0]);
  else if (name == "clone" || name == "unshare")
    text.detail = "flags " + hex(record.args[0]);
  else if (name == "setpriority" || name == "ioprio_set")
    text.detail = "which " + std::to_string(record.args[0]) + ", who " +
                  std::to_string(static_cast<int32_t>(record.args[1]));
  else if (name == "fcntl")
    text.detail = fcntl_text(record.args[1], record.args[2]);
  if (name == "fcntl" &&
      (record.args[1] == F_SETOWN || record.args[1] == F_SETOWN_EX || record.args[1] == F_SETSIG))
    text.what = "make a descriptor signal another process";
  else if (name == "ioctl")
    text.detail = "request " + hex(record.args[1] & 0xffffffffu);
  else if (name == "prctl")
    text.detail = "option " + std::to_string(record.args[0]);
  else if (name == "prlimit64" || name.starts_with("sched_set") || name == "kcmp" ||
           name == "process_madvise" || name == "move_pages" || name == "migrate_pages")
    text.detail = pid_text(record.args[0]);
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
