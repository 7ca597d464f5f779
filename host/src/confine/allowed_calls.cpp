#include "confine/allowed_calls.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <termios.h>

namespace hookhost::confine {
namespace {

// What a hook's code, glibc, libstdc++, CPython and PyTorch's CPU runtime call (found by running
// them confined: tests/confine_test.cpp, tests/pytorch/). The calls on paths (open, mkdir, ...)
// are not here: they are the file calls of confine/violation.hpp, which Landlock decides.
// clang-format off
constexpr AllowedCall kAllowed[] = {
    // Memory.
    {"brk", AllowedWhen::always}, {"mmap", AllowedWhen::always}, {"munmap", AllowedWhen::always},
    {"mprotect", AllowedWhen::always}, {"madvise", AllowedWhen::always},
    {"mremap", AllowedWhen::always}, {"msync", AllowedWhen::always},
    {"mincore", AllowedWhen::always}, {"mlock", AllowedWhen::always},
    {"mlock2", AllowedWhen::always}, {"munlock", AllowedWhen::always},
    {"mlockall", AllowedWhen::always}, {"munlockall", AllowedWhen::always},
    {"pkey_mprotect", AllowedWhen::always}, {"pkey_alloc", AllowedWhen::always},
    {"pkey_free", AllowedWhen::always}, {"memfd_create", AllowedWhen::always},
    {"membarrier", AllowedWhen::always}, {"mbind", AllowedWhen::always},
    {"set_mempolicy", AllowedWhen::always}, {"get_mempolicy", AllowedWhen::always},
    {"map_shadow_stack", AllowedWhen::always},
    // Threads.
    {"clone", AllowedWhen::clone_thread}, {"futex", AllowedWhen::always},
    {"futex_waitv", AllowedWhen::always}, {"futex_wake", AllowedWhen::always},
    {"futex_wait", AllowedWhen::always}, {"futex_requeue", AllowedWhen::always},
    {"set_robust_list", AllowedWhen::always}, {"get_robust_list", AllowedWhen::own_pid_or_zero},
    {"rseq", AllowedWhen::always}, {"set_tid_address", AllowedWhen::always},
    {"gettid", AllowedWhen::always}, {"arch_prctl", AllowedWhen::always},
    {"exit", AllowedWhen::always}, {"exit_group", AllowedWhen::always},
    {"sched_yield", AllowedWhen::always}, {"restart_syscall", AllowedWhen::always},
    // Time.
    {"clock_gettime", AllowedWhen::always}, {"clock_getres", AllowedWhen::always},
    {"clock_nanosleep", AllowedWhen::always}, {"nanosleep", AllowedWhen::always},
    {"gettimeofday", AllowedWhen::always}, {"time", AllowedWhen::always},
    {"times", AllowedWhen::always}, {"timer_create", AllowedWhen::always},
    {"timer_settime", AllowedWhen::always}, {"timer_gettime", AllowedWhen::always},
    {"timer_getoverrun", AllowedWhen::always}, {"timer_delete", AllowedWhen::always},
    {"timerfd_create", AllowedWhen::always}, {"timerfd_settime", AllowedWhen::always},
    {"timerfd_gettime", AllowedWhen::always}, {"getitimer", AllowedWhen::always},
    {"setitimer", AllowedWhen::always}, {"alarm", AllowedWhen::always},
    // Its descriptors.
    {"read", AllowedWhen::always}, {"write", AllowedWhen::always}, {"readv", AllowedWhen::always},
    {"writev", AllowedWhen::always}, {"pread64", AllowedWhen::always},
    {"pwrite64", AllowedWhen::always}, {"preadv", AllowedWhen::always},
    {"pwritev", AllowedWhen::always}, {"preadv2", AllowedWhen::always},
    {"pwritev2", AllowedWhen::always}, {"close", AllowedWhen::always},
    {"close_range", AllowedWhen::always}, {"dup", AllowedWhen::always},
    {"dup2", AllowedWhen::always}, {"dup3", AllowedWhen::always},
    {"fcntl", AllowedWhen::fcntl}, {"ioctl", AllowedWhen::ioctl},
    {"poll", AllowedWhen::always}, {"ppoll", AllowedWhen::always},
    {"select", AllowedWhen::always}, {"pselect6", AllowedWhen::always},
    {"epoll_create", AllowedWhen::always}, {"epoll_create1", AllowedWhen::always},
    {"epoll_ctl", AllowedWhen::always}, {"epoll_wait", AllowedWhen::always},
    {"epoll_pwait", AllowedWhen::always}, {"epoll_pwait2", AllowedWhen::always},
    {"lseek", AllowedWhen::always}, {"fstat", AllowedWhen::always},
    {"newfstatat", AllowedWhen::always}, {"stat", AllowedWhen::always},
    {"lstat", AllowedWhen::always}, {"statx", AllowedWhen::always},
    {"fstatfs", AllowedWhen::always}, {"statfs", AllowedWhen::always},
    {"fsync", AllowedWhen::always}, {"fdatasync", AllowedWhen::always},
    {"sync_file_range", AllowedWhen::always}, {"fallocate", AllowedWhen::always},
    // Through a descriptor opened for writing, which Landlock decided (ABI 3+: and its truncate).
    {"ftruncate", AllowedWhen::always},
    {"flock", AllowedWhen::always}, {"getdents", AllowedWhen::always},
    {"getdents64", AllowedWhen::always}, {"pipe", AllowedWhen::always},
    {"pipe2", AllowedWhen::always}, {"eventfd", AllowedWhen::always},
    {"eventfd2", AllowedWhen::always}, {"signalfd", AllowedWhen::always},
    {"signalfd4", AllowedWhen::always}, {"sendfile", AllowedWhen::always},
    {"splice", AllowedWhen::always}, {"tee", AllowedWhen::always},
    {"copy_file_range", AllowedWhen::always}, {"fadvise64", AllowedWhen::always},
    {"readahead", AllowedWhen::always},
    // Names and metadata that reading needs (Landlock confines neither stat nor these).
    {"readlink", AllowedWhen::always}, {"readlinkat", AllowedWhen::always},
    {"access", AllowedWhen::always}, {"faccessat", AllowedWhen::always},
    {"faccessat2", AllowedWhen::always}, {"getcwd", AllowedWhen::always},
    {"chdir", AllowedWhen::always}, {"fchdir", AllowedWhen::always},
    {"umask", AllowedWhen::always}, {"getxattr", AllowedWhen::always},
    {"lgetxattr", AllowedWhen::always}, {"fgetxattr", AllowedWhen::always},
    {"listxattr", AllowedWhen::always}, {"llistxattr", AllowedWhen::always},
    {"flistxattr", AllowedWhen::always}, {"inotify_init", AllowedWhen::always},
    {"inotify_init1", AllowedWhen::always}, {"inotify_add_watch", AllowedWhen::always},
    {"inotify_rm_watch", AllowedWhen::always},
    // Changing a file's metadata: Landlock does not see these.
    {"chmod", AllowedWhen::with_metadata}, {"fchmod", AllowedWhen::with_metadata},
    {"fchmodat", AllowedWhen::with_metadata}, {"fchmodat2", AllowedWhen::with_metadata},
    {"chown", AllowedWhen::with_metadata}, {"fchown", AllowedWhen::with_metadata},
    {"lchown", AllowedWhen::with_metadata}, {"fchownat", AllowedWhen::with_metadata},
    {"setxattr", AllowedWhen::with_metadata}, {"lsetxattr", AllowedWhen::with_metadata},
    {"fsetxattr", AllowedWhen::with_metadata}, {"removexattr", AllowedWhen::with_metadata},
    {"lremovexattr", AllowedWhen::with_metadata}, {"fremovexattr", AllowedWhen::with_metadata},
    {"utime", AllowedWhen::with_metadata}, {"utimes", AllowedWhen::with_metadata},
    {"futimesat", AllowedWhen::with_metadata}, {"utimensat", AllowedWhen::with_metadata},
    // Sockets: its channels and socket pairs; others with the network.
    {"socket", AllowedWhen::af_unix}, {"socketpair", AllowedWhen::af_unix},
    {"sendmsg", AllowedWhen::always}, {"recvmsg", AllowedWhen::always},
    {"sendmmsg", AllowedWhen::always}, {"recvmmsg", AllowedWhen::always},
    {"sendto", AllowedWhen::always}, {"recvfrom", AllowedWhen::always},
    {"bind", AllowedWhen::always}, {"listen", AllowedWhen::always},
    {"accept", AllowedWhen::always}, {"accept4", AllowedWhen::always},
    {"getsockname", AllowedWhen::always}, {"getpeername", AllowedWhen::always},
    {"getsockopt", AllowedWhen::always}, {"setsockopt", AllowedWhen::always},
    {"shutdown", AllowedWhen::always}, {"connect", AllowedWhen::with_network},
    // Signals, to itself.
    {"rt_sigaction", AllowedWhen::rt_sigaction}, {"rt_sigprocmask", AllowedWhen::always},
    {"rt_sigreturn", AllowedWhen::always}, {"rt_sigpending", AllowedWhen::always},
    {"rt_sigtimedwait", AllowedWhen::always}, {"rt_sigsuspend", AllowedWhen::always},
    {"sigaltstack", AllowedWhen::always}, {"pause", AllowedWhen::always},
    {"kill", AllowedWhen::own_pid}, {"tkill", AllowedWhen::own_pid},
    {"tgkill", AllowedWhen::own_pid}, {"rt_sigqueueinfo", AllowedWhen::own_pid},
    {"rt_tgsigqueueinfo", AllowedWhen::own_pid},
    // Who and where it is; its own limits and scheduling. Reading another thread's affinity or
    // priority is allowed (pthread_getaffinity_np passes a thread id), changing it is not.
    {"getpid", AllowedWhen::always}, {"getppid", AllowedWhen::always},
    {"getuid", AllowedWhen::always}, {"geteuid", AllowedWhen::always},
    {"getgid", AllowedWhen::always}, {"getegid", AllowedWhen::always},
    {"getgroups", AllowedWhen::always}, {"getresuid", AllowedWhen::always},
    {"getresgid", AllowedWhen::always}, {"getpgrp", AllowedWhen::always},
    {"getpgid", AllowedWhen::always}, {"getsid", AllowedWhen::always},
    {"getrusage", AllowedWhen::always}, {"sysinfo", AllowedWhen::always},
    {"uname", AllowedWhen::always}, {"getrandom", AllowedWhen::always},
    {"getcpu", AllowedWhen::always}, {"getpriority", AllowedWhen::always},
    {"capget", AllowedWhen::always}, {"prctl", AllowedWhen::prctl},
    {"getrlimit", AllowedWhen::always}, {"setrlimit", AllowedWhen::always},
    {"prlimit64", AllowedWhen::own_pid_or_zero},
    {"sched_getaffinity", AllowedWhen::always}, {"sched_getparam", AllowedWhen::always},
    {"sched_getscheduler", AllowedWhen::always}, {"sched_getattr", AllowedWhen::always},
    {"sched_get_priority_max", AllowedWhen::always},
    {"sched_get_priority_min", AllowedWhen::always},
    {"sched_rr_get_interval", AllowedWhen::always},
    {"sched_setaffinity", AllowedWhen::own_pid_or_zero},
    {"sched_setscheduler", AllowedWhen::own_pid_or_zero},
    {"sched_setparam", AllowedWhen::own_pid_or_zero},
    {"sched_setattr", AllowedWhen::own_pid_or_zero},
    // Its own children (with processes), and making its own confinement stricter.
    {"wait4", AllowedWhen::always}, {"waitid", AllowedWhen::always},
    {"fork", AllowedWhen::with_processes}, {"vfork", AllowedWhen::with_processes},
    {"execve", AllowedWhen::with_processes}, {"execveat", AllowedWhen::with_processes},
    {"landlock_create_ruleset", AllowedWhen::always}, {"landlock_add_rule", AllowedWhen::always},
    {"landlock_restrict_self", AllowedWhen::always},
};

// Not F_SETSIG, F_SETOWN_EX (signals to another process), F_SETLEASE or F_NOTIFY.
constexpr uint64_t kFcntl[] = {
    F_DUPFD, F_DUPFD_CLOEXEC, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_GETLK, F_SETLK, F_SETLKW,
    F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_GETOWN, F_GETOWN_EX, F_GETSIG, F_SETPIPE_SZ,
    F_GETPIPE_SZ, F_ADD_SEALS, F_GET_SEALS,
};

// Questions about a descriptor and its blocking mode; not FIOSETOWN or SIOCSPGRP (signals to
// another process), nor TIOCSTI or any device's own requests.
constexpr uint64_t kIoctl[] = {
    TCGETS, TIOCGWINSZ, TIOCGPGRP, FIONREAD, FIONBIO, FIOCLEX, FIONCLEX, FIOASYNC, 0x8903 /* FIOGETOWN */,
    0x8904 /* SIOCGPGRP */, 0x8905 /* SIOCATMARK */, FS_IOC_GETFLAGS, FIGETBSZ,
};

// Not PR_SET_MM, PR_SET_PTRACER, PR_SCHED_CORE (another process's scheduling),
// PR_SET_CHILD_SUBREAPER, PR_SET_SYSCALL_USER_DISPATCH and the like.
constexpr uint64_t kPrctl[] = {
    PR_SET_NAME, PR_GET_NAME, PR_GET_DUMPABLE, PR_GET_SECCOMP, PR_SET_SECCOMP,
    PR_GET_NO_NEW_PRIVS, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_READ, PR_GET_TIMERSLACK,
    PR_SET_TIMERSLACK, PR_GET_THP_DISABLE, PR_SET_THP_DISABLE, PR_GET_TID_ADDRESS,
    PR_GET_PDEATHSIG, PR_SET_PDEATHSIG, PR_GET_KEEPCAPS, PR_GET_CHILD_SUBREAPER,
    PR_GET_SPECULATION_CTRL, PR_SET_SPECULATION_CTRL, PR_MCE_KILL_GET,
    0x53564d41 /* PR_SET_VMA: glibc names its anonymous mappings */,
};
// clang-format on

}  // namespace

std::span<const AllowedCall> allowed_calls() {
  return kAllowed;
}
std::span<const uint64_t> allowed_fcntl_commands() {
  return kFcntl;
}
std::span<const uint64_t> allowed_ioctl_requests() {
  return kIoctl;
}
std::span<const uint64_t> allowed_prctl_options() {
  return kPrctl;
}

}  // namespace hookhost::confine
