/* Lowers the host's scheduling priority to nice 19 with setpriority, then reads it back
 * (getpriority, which a confined hook may). */
#include "hostile.h"

#include <sys/resource.h>

static void hostile_attempt(hostile* h) {
  char text[96];
  long rc = syscall(SYS_setpriority, PRIO_PROCESS, hostile_host_pid(), 19);
  hostile_report(h, "setpriority(host, 19)", rc);
  errno = 0;
  rc = syscall(SYS_getpriority, PRIO_PROCESS, hostile_host_pid());
  /* The raw call returns 20 - nice. */
  snprintf(text, sizeof text, "host nice %ld", rc == -1 ? -100 : 20 - rc);
  hostile_say(h, text);
}

HH_PLUGIN_DEFINE("hostile_setpriority", "1.0.0", "Test fixture: lowers the host's priority",
                 HH_NO_PARAMS, hostile_create)
