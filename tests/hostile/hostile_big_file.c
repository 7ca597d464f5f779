/* Writes `signal` MiB to the file `path` names (relative: in the hook's run folder) and reports
 * how far it got. */
#include "hostile.h"

#include <fcntl.h>

static void hostile_attempt(hostile* h) {
  static char block[1 << 16];
  char what[1100];
  long written = 0, rc = 0;
  const long wanted = (long)h->signal << 20;
  char file[2048];
  snprintf(file, sizeof file, "%s/%s", h->host->run_dir(h->host), h->path);
  const int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    hostile_report(h, "open", -1);
    return;
  }
  while (written < wanted) {
    rc = write(fd, block, sizeof block);
    if (rc <= 0) break;
    written += rc;
  }
  const int saved = errno;
  close(fd);
  errno = saved;
  snprintf(what, sizeof what, "write %ld MiB (%ld bytes written)", (long)h->signal, written);
  hostile_report(h, what, rc < 0 ? -1 : 0);
}

#define HOSTILE_BIG_FILE_PARAMS(P)                                   \
  P(path, STRING, DEFAULT, "big.bin", "the file, in the run folder") \
  P(signal, INT, DEFAULT, "4", "MiB to write")

HH_PLUGIN_DEFINE("hostile_big_file", "1.0.0", "Test fixture: writes a big file",
                 HOSTILE_BIG_FILE_PARAMS, hostile_create)
