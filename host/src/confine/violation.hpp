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
  uint32_t instance;    // the hook instance whose code was running, 0 when none
  int32_t nr;           // the system call's number on `arch`
  uint32_t arch;        // AUDIT_ARCH_*
  uint16_t fatal;       // 1: a call no hook has a use for; the runner dies of SIGSYS after writing
  uint16_t writes;      // a file call: 1 when it asked to create, change or remove
  uint32_t path_bytes;  // the bytes after the record: a file call's path(s), '\0' between two
  uint64_t args[6];
};
static_assert(sizeof(ViolationRecord) == 72);
// A record and its paths stay one write below PIPE_BUF; longer paths are cut (their end kept).
constexpr uint32_t kMaxViolationPathBytes = 2048;

// A record as the host reads it: the fixed part and the path(s) of a call on files.
struct Violation {
  ViolationRecord record{};
  std::string path;         // absolute, as the runner resolved it; "" for calls on no file
  std::string second_path;  // the other name of a rename or link
};

// Splits the bytes read from a runner's violation pipe into records. A record whose magic or
// path length is wrong is passed on as read, without paths, and ends the reading (`corrupt()`):
// what follows cannot be framed, and is dropped as it comes.
class ViolationReader {
 public:
  void append(const char* bytes, size_t size);
  bool next(Violation* out);
  bool corrupt() const { return corrupt_; }

 private:
  std::string pending_;
  size_t used_ = 0;
  bool corrupt_ = false;
};

// Whether a record read from a runner could have come from its SIGSYS handler: the magic, this
// architecture (a call of another one kills the runner before any handler runs), a path only on a
// call on files. The rest is the runner's word, which its plugins own: the host takes `fatal`
// from is_fatal(), never from the record.
bool plausible_violation(const ViolationRecord& record);

// "attach a debugger to a process" / "ptrace" / "pid 1234".
struct ViolationText {
  std::string what, call, detail;
};
ViolationText describe_violation(const Violation& violation);
ViolationText describe_violation(const ViolationRecord& record);

// When a call in the table is refused, as its words say (the filter's allow-list decides; a call
// of the table is refused where the allow-list does not let it through, and only `always` and
// `clone_namespace` end the runner).
enum class DeniedWhen {
  always,             // never needed: the runner dies (SIGSYS) after the record
  other_pid,          // its first argument is a pid other than the runner's
  always_eperm,       // refused with EPERM, whatever the arguments
  not_af_unix,        // a socket other than an AF_UNIX stream or packet one, unless the network is
                      // allowed
  without_network,    // unless the network is allowed
  without_processes,  // unless processes are allowed
  clone_process,      // clone without CLONE_THREAD, unless processes are allowed
  clone_namespace,    // clone with a CLONE_NEW* flag: always, as `always`
  not_allowed,        // outside the allow-list, or its arguments (another pid, a command)
};

// A call on files or folders that the runner traps only to name: its SIGSYS handler makes the call
// itself (with kFileCallPassMagic as the unused sixth argument, which the filter lets through) and
// hands its result back; Landlock alone decides, and an EACCES it returns is recorded with the
// path. A plugin that passes the magic itself is still refused by Landlock, only not named.
enum class FileAccess {
  read,
  write,
  open_flags,  // by the open flags in argument `flags_arg`
  open_how,    // by the flags of the struct open_how that argument `flags_arg` points to
};
struct FileCall {
  int nr;
  const char* name;
  int dirfd_arg;  // the folder descriptor the path is relative to, or -1 (working folder)
  int path_arg;
  int second_dirfd_arg;  // rename, link: the other name's, or -1
  int second_path_arg;   // or -1
  FileAccess access;
  int flags_arg;     // open_flags, open_how; else -1
  const char* what;  // what a writing call does; an open is "read a file", "write a file"
};
constexpr uint64_t kFileCallPassMagic = 0x68686f6f6b706173;  // "sapkoohh" in memory order
std::span<const FileCall> file_calls();
const FileCall* find_file_call(int nr);
// Trap the file calls (the filter adds the rules): x86_64 only, where the handler can set the
// result; and not when processes are allowed, since a program the hook starts keeps the filter
// but not the handler.
bool names_file_denials(bool processes_allowed);

struct DeniedCall {
  int nr;  // native number (<sys/syscall.h>)
  const char* name;
  DeniedWhen when;
  const char* what;  // what the call would do, for the log line
};

// Every call the host names, native numbers only (calls this architecture lacks are absent). A
// refused call not in the table is named by its number.
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
