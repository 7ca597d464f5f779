/* Sets up an io_uring of 4 entries (and closes it): its operations bypass system call filters. */
#include "hostile.h"

#include <linux/io_uring.h>

static void hostile_attempt(hostile* h) {
  struct io_uring_params params;
  long fd;
  memset(&params, 0, sizeof params);
  fd = syscall(SYS_io_uring_setup, 4, &params);
  hostile_report(h, "io_uring_setup", fd);
  if (fd >= 0) close((int)fd);
}

HH_PLUGIN_DEFINE("hostile_io_uring", "1.0.0", "Test fixture: sets up an io_uring", HH_NO_PARAMS,
                 hostile_create)
