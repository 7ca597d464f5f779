/* Creates the file `path` names and writes a line to it (outside the hook's run folder). */
/* Built four times: as itself; as its benign twin that declares the need in its note; as one that
 * declares it writes everywhere (needs.write=/); as one whose parameter's default climbs out of
 * its run folder. Only the operator grants the last two. */
#if defined(HOSTILE_DECLARES_NEEDS)
#define HH_PLUGIN_NEEDS HH_NEEDS_WRITE_PARAM(path)
#define HOSTILE_ID "hostile_write_declared"
#elif defined(HOSTILE_CLAIMS_ROOT)
#define HH_PLUGIN_NEEDS HH_NEEDS_WRITE("/")
#define HOSTILE_ID "hostile_write_root"
#elif defined(HOSTILE_DEFAULT_OUTSIDE)
#define HH_PLUGIN_NEEDS HH_NEEDS_WRITE_PARAM(path)
#define HOSTILE_ID "hostile_write_default"
#else
#define HOSTILE_ID "hostile_write"
#endif
#include "hostile.h"

#include <fcntl.h>

static void hostile_attempt(hostile* h) {
  char what[1100];
  static const char line[] = "written by hostile_write\n";
  long rc = syscall(SYS_openat, AT_FDCWD, h->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (rc >= 0) {
    const int fd = (int)rc;
    rc = write(fd, line, sizeof line - 1) == (ssize_t)(sizeof line - 1) ? 0 : -1;
    close(fd);
  }
  snprintf(what, sizeof what, "write %s", h->path);
  hostile_report(h, what, rc);
}

#ifdef HOSTILE_DEFAULT_OUTSIDE
#define HOSTILE_WRITE_PARAMS(P) \
  P(path, STRING, DEFAULT, "../../../outside.txt", "the file to create and write")
#else
#define HOSTILE_WRITE_PARAMS(P) P(path, STRING, REQUIRED, "", "the file to create and write")
#endif

HH_PLUGIN_DEFINE(HOSTILE_ID, "1.0.0", "Test fixture: writes a file", HOSTILE_WRITE_PARAMS,
                 hostile_create)
