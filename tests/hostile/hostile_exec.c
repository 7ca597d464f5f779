/* Starts /bin/sh: fork, then execve in the child, which exits 7 when the shell ran; the runner
 * reports the fork's and the exec's result. */
/* Built twice: as itself, and as its benign twin that declares the need in its note. */
#ifdef HOSTILE_DECLARES_NEEDS
#define HH_PLUGIN_NEEDS HH_NEEDS_PROCESSES
#define HOSTILE_ID "hostile_exec_declared"
#else
#define HOSTILE_ID "hostile_exec"
#endif
#include "hostile.h"

#include <sys/wait.h>

static void hostile_attempt(hostile* h) {
  int result[2], answer[2] = {0, 0}, status = 0;
  long child;
  if (pipe(result) != 0) return;
  child = syscall(SYS_fork);
  if (child == 0) {
    char* const argv[] = {(char*)"sh", (char*)"-c", (char*)"exit 7", NULL};
    char* const envp[] = {NULL};
    answer[0] = (int)syscall(SYS_execve, "/bin/sh", argv, envp);
    answer[1] = errno;
    if (write(result[1], answer, sizeof answer) != (ssize_t)sizeof answer) _exit(1);
    _exit(0);
  }
  if (child < 0) {
    hostile_report(h, "fork", -1);
    close(result[0]);
    close(result[1]);
    return;
  }
  close(result[1]);
  waitpid((pid_t)child, &status, 0);
  if (read(result[0], answer, sizeof answer) == (ssize_t)sizeof answer) {
    errno = answer[1];
    hostile_report(h, "execve(/bin/sh)", answer[0]);
  } else {
    char what[64];
    snprintf(what, sizeof what, "execve(/bin/sh) ran, exit %d",
             WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    hostile_report(h, what, 0);
  }
  close(result[0]);
}

HH_PLUGIN_DEFINE(HOSTILE_ID, "1.0.0", "Test fixture: starts /bin/sh", HH_NO_PARAMS, hostile_create)
