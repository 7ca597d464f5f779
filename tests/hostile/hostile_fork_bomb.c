/* Forks up to `signal` children (each waits for the runner to close a pipe, then exits) and
 * reports how many it got and why it stopped. */
#include "hostile.h"

#include <sys/wait.h>

static void hostile_attempt(hostile* h) {
  int hold[2];
  long made = 0, rc = 0;
  char what[96];
  if (pipe(hold) != 0) return;
  for (; made < h->signal; ++made) {
    rc = syscall(SYS_fork);
    if (rc == 0) {
      char byte;
      close(hold[1]);
      if (read(hold[0], &byte, 1) < 0) _exit(1);
      _exit(0);
    }
    if (rc < 0) break;
  }
  const int saved = errno;
  close(hold[1]);
  close(hold[0]);
  while (wait(NULL) > 0) {
  }
  errno = saved;
  snprintf(what, sizeof what, "fork %ld of %ld", made + (rc < 0 ? 1 : 0), (long)h->signal);
  hostile_report(h, what, rc < 0 ? -1 : 0);
}

#define HOSTILE_FORK_PARAMS(P) P(signal, INT, DEFAULT, "64", "how many children to fork")

HH_PLUGIN_DEFINE("hostile_fork_bomb", "1.0.0", "Test fixture: forks many children",
                 HOSTILE_FORK_PARAMS, hostile_create)
