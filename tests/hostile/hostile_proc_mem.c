/* Opens the host's memory through /proc/<host>/mem and reads a byte of it. */
#include "hostile.h"

#include <fcntl.h>

static void hostile_attempt(hostile* h) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/mem", (int)hostile_host_pid());
  const long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) close((int)fd);
  hostile_report(h, "open(/proc/<host>/mem)", fd >= 0 ? 0 : -1);
}

HH_PLUGIN_DEFINE("hostile_proc_mem", "1.0.0", "Test fixture: opens the host's memory", HH_NO_PARAMS,
                 hostile_create)
