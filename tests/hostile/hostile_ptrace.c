/* Attaches a debugger to the host: PTRACE_SEIZE from a child of the runner, which ends right after
 * the runner has read the host's TracerPid, so an attach that succeeds (unconfined) never stops the
 * host and ends with the child. */
#include "hostile.h"

#include <sys/ptrace.h>
#include <sys/wait.h>

static void hostile_attempt(hostile* h) {
  const pid_t host = hostile_host_pid();
  int result[2], go[2];
  int answer[2] = {0, 0}; /* the call's return value, its errno */
  pid_t child;
  if (pipe(result) != 0 || pipe(go) != 0) return;
  child = fork();
  if (child == 0) {
    char byte;
    close(go[1]); /* so the read below ends when the runner closes its end */
    answer[0] = (int)syscall(SYS_ptrace, PTRACE_SEIZE, host, 0, 0);
    answer[1] = errno;
    if (write(result[1], answer, sizeof answer) != (ssize_t)sizeof answer) _exit(1);
    if (read(go[0], &byte, 1) < 0) _exit(1);
    _exit(0);
  }
  if (child < 0) {
    hostile_report(h, "fork", -1);
    return;
  }
  close(result[1]); /* so the read below ends if the child dies before it answers */
  result[1] = -1;
  if (read(result[0], answer, sizeof answer) != (ssize_t)sizeof answer) {
    hostile_say(h, "ptrace(PTRACE_SEIZE, host): the child ended without an answer");
    hostile_report_tracer(h);
    close(go[1]);
    waitpid(child, NULL, 0);
    close(go[0]);
    close(result[0]);
    return;
  }
  errno = answer[1];
  hostile_report(h, "ptrace(PTRACE_SEIZE, host)", answer[0]);
  hostile_report_tracer(h);
  close(go[1]);
  waitpid(child, NULL, 0);
  close(go[0]);
  close(result[0]);
}

HH_PLUGIN_DEFINE("hostile_ptrace", "1.0.0", "Test fixture: ptrace-attaches the host", HH_NO_PARAMS,
                 hostile_create)
