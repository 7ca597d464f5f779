/* Sends a datagram to the named AF_UNIX socket `path` (one the test listens on, as /dev/log
 * listens for syslog): a datagram socket needs no connect to reach any named socket. */
#include "hostile.h"

#include <sys/socket.h>
#include <sys/un.h>

static void hostile_attempt(hostile* h) {
  struct sockaddr_un to;
  static const char line[] = "hello from hostile_datagram\n";
  long fd = syscall(SYS_socket, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    hostile_report(h, "socket(AF_UNIX, SOCK_DGRAM)", -1);
    return;
  }
  memset(&to, 0, sizeof to);
  to.sun_family = AF_UNIX;
  if (strlen(h->path) >= sizeof to.sun_path) {
    errno = ENAMETOOLONG;
    hostile_report(h, "sendto(named socket)", -1);
    close((int)fd);
    return;
  }
  memcpy(to.sun_path, h->path, strlen(h->path) + 1);
  long rc =
      syscall(SYS_sendto, (int)fd, line, sizeof line - 1, 0, (struct sockaddr*)&to, sizeof to);
  const int saved = errno;
  close((int)fd);
  errno = saved;
  hostile_report(h, "sendto(named socket)", rc < 0 ? -1 : 0);
}

#define HOSTILE_DATAGRAM_PARAMS(P) P(path, STRING, REQUIRED, "", "the named socket to send to")

HH_PLUGIN_DEFINE("hostile_datagram", "1.0.0", "Test fixture: sends a datagram to a named socket",
                 HOSTILE_DATAGRAM_PARAMS, hostile_create)
