/* Changes the mode of the file `path` names (outside the hook's run folder) to 0, with fchmodat
 * and chmod: Landlock does not govern a file's mode. */
#include "hostile.h"

#include <fcntl.h>

static void hostile_attempt(hostile* h) {
  char what[1100];
  long rc = syscall(SYS_fchmodat, AT_FDCWD, h->path, 0, 0);
  snprintf(what, sizeof what, "fchmodat(%s, 0)", h->path);
  hostile_report(h, what, rc);
  rc = syscall(SYS_chmod, h->path, 0);
  snprintf(what, sizeof what, "chmod(%s, 0)", h->path);
  hostile_report(h, what, rc);
}

#define HOSTILE_CHMOD_PARAMS(P) P(path, STRING, REQUIRED, "", "the file whose mode to clear")

HH_PLUGIN_DEFINE("hostile_chmod", "1.0.0", "Test fixture: clears a file's mode",
                 HOSTILE_CHMOD_PARAMS, hostile_create)
