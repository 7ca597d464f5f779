// Last words when a hook takes the whole process down in-process: a fatal signal, exit() or
// _exit(). One line names the instance, plugin file, callback and global step that were running,
// then the process dies with a status that cannot pass for success. Everything here runs inside a
// signal handler or an exit path, so it only reads what the runtime prepared, writes with
// write(2) and restores a signal's disposition through the C library's sigaction, resolved at
// install time (never a sigaction the program defines, such as the hookhost program's guard).
#pragma once

#include "context/running_call.hpp"

namespace hookhost {

// The exit status of a process a plugin ended with exit() or _exit() (EX_SOFTWARE).
inline constexpr int kPluginExitStatus = 70;

class CrashBlame {
 public:
  // Installs the handlers (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT on an alternate stack, and an
  // atexit handler). For programs: an embedder decides for itself. Idempotent.
  static void install();
  // The program's own way out: exit() and _exit() from now on are not a plugin's.
  static void program_exits();
  // Runtimes' running calls, which a crash on a thread without a hook call is blamed on.
  static void watch(const RunningCall* running);
  static void unwatch(const RunningCall* running);
  // Called by the _exit interposer in the program; writes the blame line when a plugin called
  // it, and returns the status to exit with.
  static int exit_status_for(const char* function, int status);
};

}  // namespace hookhost
