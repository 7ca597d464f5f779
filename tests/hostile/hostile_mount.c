/* Mounts a tmpfs on a folder that does not exist: the kernel, when it gets the call, refuses it
 * with ENOENT, so nothing is ever mounted. */
#include "hostile.h"

#include <sys/mount.h>

static void hostile_attempt(hostile* h) {
  hostile_report(h, "mount(tmpfs)",
                 syscall(SYS_mount, "none", "/proc/hookhost-no-such-folder", "tmpfs", 0L, NULL));
}

HH_PLUGIN_DEFINE("hostile_mount", "1.0.0", "Test fixture: mounts a file system", HH_NO_PARAMS,
                 hostile_create)
