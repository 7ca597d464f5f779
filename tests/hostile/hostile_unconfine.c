/* Tries to make its restarted runner start unconfined: it declares a write folder below its own
 * run folder (which the host makes and grants), removes that folder, and crashes. A runner whose
 * policy names a path that no longer exists cannot apply it. */
#define HH_PLUGIN_NEEDS HH_NEEDS_WRITE("data/out.bin")
#include "hostile.h"

#include <signal.h>

static void hostile_attempt(hostile* h) {
  char folder[1200], what[1300];
  long rc;
  snprintf(folder, sizeof folder, "%s/data", h->host->run_dir(h->host));
  rc = syscall(SYS_rmdir, folder);
  snprintf(what, sizeof what, "rmdir %s", folder);
  hostile_report(h, what, rc);
  if (rc == 0) abort();
}

HH_PLUGIN_DEFINE("hostile_unconfine", "1.0.0",
                 "Test fixture: removes its granted folder and crashes", HH_NO_PARAMS,
                 hostile_create)
