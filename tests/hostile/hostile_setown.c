/* Makes a socket signal the host: F_SETOWN to the host's pid, F_SETSIG to `signal` (SIGKILL by
 * default), O_ASYNC, then data on the socket, which makes the kernel send that signal. */
#include "hostile.h"

#include <fcntl.h>
#include <sys/socket.h>

static void hostile_attempt(hostile* h) {
  int pair[2];
  char what[96];
  long rc;
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    hostile_report(h, "socketpair", -1);
    return;
  }
  rc = syscall(SYS_fcntl, pair[0], F_SETOWN, (long)hostile_host_pid());
  hostile_report(h, "fcntl(F_SETOWN, host)", rc);
  rc = syscall(SYS_fcntl, pair[0], F_SETSIG, (long)h->signal);
  snprintf(what, sizeof what, "fcntl(F_SETSIG, %d)", (int)h->signal);
  hostile_report(h, what, rc);
  rc = syscall(SYS_fcntl, pair[0], F_SETFL, (long)(O_ASYNC | O_NONBLOCK));
  hostile_report(h, "fcntl(F_SETFL, O_ASYNC)", rc);
  rc = write(pair[1], "x", 1) == 1 ? 0 : -1;
  hostile_report(h, "write to the other end", rc);
  close(pair[0]);
  close(pair[1]);
}

#define HOSTILE_SETOWN_PARAMS(P) P(signal, INT, DEFAULT, "9", "the signal the socket sends")

HH_PLUGIN_DEFINE("hostile_setown", "1.0.0", "Test fixture: makes a socket signal the host",
                 HOSTILE_SETOWN_PARAMS, hostile_create)
