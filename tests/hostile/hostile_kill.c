/* Sends `signal` to `target`: host (kill), host_thread (tgkill of the host's main thread), group
 * (kill(0, ...): this process group) or all (kill(-1, ...): every process it may signal). */
#include "hostile.h"

static void hostile_attempt(hostile* h) {
  const pid_t host = hostile_host_pid();
  char what[96];
  long rc;
  errno = 0;
  if (strcmp(h->target, "host_thread") == 0) {
    rc = syscall(SYS_tgkill, host, host, (int)h->signal);
  } else {
    const pid_t pid = strcmp(h->target, "group") == 0 ? 0
                      : strcmp(h->target, "all") == 0 ? -1
                                                      : host;
    rc = syscall(SYS_kill, pid, (int)h->signal);
  }
  snprintf(what, sizeof what, "signal %d to %s", (int)h->signal, h->target);
  hostile_report(h, what, rc);
}

#define HOSTILE_KILL_PARAMS(P)                                          \
  P(target, STRING, DEFAULT, "host", "host, host_thread, group or all") \
  P(signal, INT, DEFAULT, "0", "the signal number (0: only check permission)")

HH_PLUGIN_DEFINE("hostile_kill", "1.0.0", "Test fixture: signals the host or other processes",
                 HOSTILE_KILL_PARAMS, hostile_create)
