// The program's own _exit and _Exit: the dynamic loader binds a plugin's calls to these (the
// executable comes first in symbol lookup), so a plugin that calls _exit(0) in the middle of a job
// cannot make it look like a success. glibc's exit() reaches the kernel without coming here.
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>

#include "runtime/crash_blame.hpp"

extern "C" {

// Declared as glibc declares each: _exit without noexcept, _Exit with it.
void _exit(int status) {
  status = hookhost::CrashBlame::exit_status_for("_exit()", status);
  ::syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

void _Exit(int status) noexcept {
  status = hookhost::CrashBlame::exit_status_for("_Exit()", status);
  ::syscall(SYS_exit_group, status);
  __builtin_unreachable();
}
}
