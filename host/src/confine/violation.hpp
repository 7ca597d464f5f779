// What a confined runner tried that its policy refuses: the one table of the system calls the
// seccomp filter names (the filter is built from it, the host's log line reads it), the record the
// runner's SIGSYS handler writes to the host, and the words for it.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace hookhost::confine {

// A pipe the host makes per runner; the runner holds its write end on this descriptor.
constexpr int kRunnerViolationFd = 5;
constexpr uint32_t kViolationMagic = 0x31564848;  // "HHV1" in memory order

// One denied call, as the runner's SIGSYS handler writes it: a fixed size, one write(), so records
// from several threads never interleave (it is below PIPE_BUF).
struct ViolationRecord {
  uint32_t magic;
  uint32_t instance;  // the hook instance whose code was running, 0 when none
  int32_t nr;         // the system call's number on `arch`
  uint32_t arch;      // AUDIT_ARCH_*
  uint32_t fatal;     // 1: a call no hook has a use for; the runner dies of SIGSYS after writing
  uint32_t reserved;
  uint64_t args[6];
};
static_assert(sizeof(ViolationRecord) == 72);

// "attach a debugger to a process" / "ptrace" / "pid 1234".
struct ViolationText {
  std::string what, call, detail;
};
ViolationText describe_violation(const ViolationRecord& record);

// When a call in the table is refused.
enum class DeniedWhen {
  always,             // never needed: the runner dies (SIGSYS) after the record
  other_pid,          // its first argument is a pid other than the runner's
  always_eperm,       // refused with EPERM, whatever the arguments
  not_af_unix,        // a socket of a domain other than AF_UNIX, unless the network is allowed
  without_network,    // unless the network is allowed
  without_processes,  // unless processes are allowed
  clone_process,      // clone without CLONE_THREAD, unless processes are allowed
  clone_namespace,    // clone with a CLONE_NEW* flag: always, as `always`
};

struct DeniedCall {
  int nr;  // native number (<sys/syscall.h>)
  const char* name;
  DeniedWhen when;
  const char* what;  // what the call would do, for the log line
};

// Every call the filter names, native numbers only (calls this architecture lacks are absent).
std::span<const DeniedCall> denied_calls();

// clone() flags that make namespaces.
uint64_t clone_namespace_flags();

// Whether the filter refuses a call with these arguments for good (the runner then dies).
bool is_fatal(int nr, const uint64_t (&args)[6]);

// The hook instance whose code runs now, for the records (a lock-free atomic; 0 = none). The
// runner sets it around every call into plugin code.
void set_current_instance(uint32_t instance);
uint32_t current_instance();

// Installs the SIGSYS handler that writes a ViolationRecord to `fd` (nowhere when fd < 0) for
// each call the filter traps, then either makes the call fail with EPERM or, for a fatal one,
// lets the process die of SIGSYS. Install it before the filter: the filter refuses a new
// SIGSYS handler. Returns "" or what failed.
std::string install_violation_reporter(int fd);

}  // namespace hookhost::confine
