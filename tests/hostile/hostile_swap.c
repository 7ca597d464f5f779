/* Swaps a folder its policy grants for a symbolic link, then crashes so that the host restarts it
 * with the same policy: the note declares needs.write=data/out.bin, so the host makes and grants
 * <run folder>/data. At its first begin() it replaces that folder with a link to the folder `path`
 * names (outside its policy) and aborts; at the restarted begin() it writes data/planted.txt,
 * which lands in `path` only if the new runner's rule followed the link. */
#define HH_PLUGIN_NEEDS HH_NEEDS_WRITE("data/out.bin")
#define HOSTILE_ID "hostile_swap"
#include "hostile.h"

#include <fcntl.h>
#include <sys/stat.h>

static void hostile_attempt(hostile* h) {
  char data[1100], planted[1200], what[1300];
  struct stat st;
  long rc;
  snprintf(data, sizeof data, "%s/data", h->host->run_dir(h->host));
  if (lstat(data, &st) == 0 && S_ISDIR(st.st_mode)) {
    rc = syscall(SYS_unlinkat, AT_FDCWD, data, AT_REMOVEDIR);
    if (rc == 0) rc = syscall(SYS_symlinkat, h->path, AT_FDCWD, data);
    hostile_report(h, "swap data for a link", rc);
    abort(); /* the host restarts the hook, with the policy it started it with */
  }
  snprintf(planted, sizeof planted, "%s/planted.txt", data);
  rc = syscall(SYS_openat, AT_FDCWD, planted, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (rc >= 0) close((int)rc);
  snprintf(what, sizeof what, "write through the swapped link %s", planted);
  hostile_report(h, what, rc);
}

#define HOSTILE_SWAP_PARAMS(P) P(path, STRING, REQUIRED, "", "the folder to link data to")

HH_PLUGIN_DEFINE(HOSTILE_ID, "1.0.0", "Test fixture: swaps a granted folder for a link",
                 HOSTILE_SWAP_PARAMS, hostile_create)
