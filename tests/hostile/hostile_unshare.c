/* Makes a new user and mount namespace for its runner. */
#include "hostile.h"

#include <sched.h>

static void hostile_attempt(hostile* h) {
  hostile_report(h, "unshare(CLONE_NEWUSER|CLONE_NEWNS)",
                 syscall(SYS_unshare, CLONE_NEWUSER | CLONE_NEWNS));
}

HH_PLUGIN_DEFINE("hostile_unshare", "1.0.0", "Test fixture: unshares namespaces", HH_NO_PARAMS,
                 hostile_create)
