/* Lowers the host's RLIMIT_NOFILE to `signal` (soft and hard) with prlimit64: a host that can open
 * no file cannot write a checkpoint, restart a runner or accept a control connection. */
#include "hostile.h"

#include <sys/resource.h>

static void hostile_attempt(hostile* h) {
  const struct rlimit limit = {(rlim_t)h->signal, (rlim_t)h->signal};
  char what[96];
  const long rc = syscall(SYS_prlimit64, hostile_host_pid(), RLIMIT_NOFILE, &limit, NULL);
  snprintf(what, sizeof what, "prlimit64(host, RLIMIT_NOFILE, %d)", (int)h->signal);
  hostile_report(h, what, rc);
}

#define HOSTILE_PRLIMIT_PARAMS(P) P(signal, INT, DEFAULT, "0", "the host's new open-files limit")

HH_PLUGIN_DEFINE("hostile_prlimit", "1.0.0", "Test fixture: lowers the host's open-files limit",
                 HOSTILE_PRLIMIT_PARAMS, hostile_create)
