/* Reads the file `path` names (a file outside everything the hook's policy lets it read). */
/* Built twice: as itself, and as its benign twin that declares the need in its note. */
#ifdef HOSTILE_DECLARES_NEEDS
#define HH_PLUGIN_NEEDS HH_NEEDS_READ_PARAM(path)
#define HOSTILE_ID "hostile_read_declared"
#else
#define HOSTILE_ID "hostile_read"
#endif
#include "hostile.h"

#include <fcntl.h>

static void hostile_attempt(hostile* h) {
  char what[1100], bytes[64];
  const long fd = syscall(SYS_openat, AT_FDCWD, h->path, O_RDONLY | O_CLOEXEC);
  snprintf(what, sizeof what, "read %s", h->path);
  if (fd >= 0) {
    const ssize_t n = read((int)fd, bytes, sizeof bytes - 1);
    close((int)fd);
    bytes[n > 0 ? n : 0] = '\0';
    snprintf(what, sizeof what, "read %s (%zd bytes: %.20s)", h->path, n, bytes);
  }
  hostile_report(h, what, fd >= 0 ? 0 : -1);
}

#define HOSTILE_READ_PARAMS(P) P(path, STRING, REQUIRED, "", "the file to read")

HH_PLUGIN_DEFINE(HOSTILE_ID, "1.0.0", "Test fixture: reads a file", HOSTILE_READ_PARAMS,
                 hostile_create)
