/* Reaches the AF_UNIX socket `path` that the test listens on (as /dev/log listens for syslog);
 * a path starting with '@' names an abstract socket (the rest of it, after a NUL byte). `target`
 * says how:
 *   "" or "socket": socket(AF_UNIX, SOCK_DGRAM), then sendto: a datagram socket needs no connect
 *                   to reach any named socket;
 *   "pair":         socketpair(AF_UNIX, SOCK_DGRAM), then sendto with an address, which overrides
 *                   the pair's peer;
 *   "stream":       socket(AF_UNIX, SOCK_STREAM), connect, then write. */
#include "hostile.h"

#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

static void hostile_attempt(hostile* h) {
  struct sockaddr_un to;
  static const char line[] = "hello from hostile_datagram\n";
  const int abstract = h->path[0] == '@';
  const char* kind = abstract ? "abstract socket" : "named socket";
  const size_t length = strlen(h->path);
  char what[96];
  socklen_t size;
  long fd, rc;
  int saved;
  memset(&to, 0, sizeof to);
  to.sun_family = AF_UNIX;
  if (length >= sizeof to.sun_path) {
    errno = ENAMETOOLONG;
    hostile_report(h, "the socket's address", -1);
    return;
  }
  memcpy(to.sun_path, h->path, length + 1);
  if (abstract) to.sun_path[0] = '\0';
  /* An abstract name is exactly its bytes: no terminating NUL counts. */
  size = abstract ? (socklen_t)(offsetof(struct sockaddr_un, sun_path) + length) : sizeof to;
  if (strcmp(h->target, "stream") == 0) {
    fd = syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      hostile_report(h, "socket(AF_UNIX, SOCK_STREAM)", -1);
      return;
    }
    rc = syscall(SYS_connect, (int)fd, (struct sockaddr*)&to, size);
    if (rc == 0 && write((int)fd, line, sizeof line - 1) != (ssize_t)(sizeof line - 1)) rc = -1;
    snprintf(what, sizeof what, "connect(%s)", kind);
  } else {
    if (strcmp(h->target, "pair") == 0) {
      int pair[2];
      if (syscall(SYS_socketpair, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) != 0) {
        hostile_report(h, "socketpair(AF_UNIX, SOCK_DGRAM)", -1);
        return;
      }
      close(pair[1]);
      fd = pair[0];
    } else {
      fd = syscall(SYS_socket, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      if (fd < 0) {
        hostile_report(h, "socket(AF_UNIX, SOCK_DGRAM)", -1);
        return;
      }
    }
    rc = syscall(SYS_sendto, (int)fd, line, sizeof line - 1, 0, (struct sockaddr*)&to, size);
    snprintf(what, sizeof what, "sendto(%s)", kind);
  }
  saved = errno;
  close((int)fd);
  errno = saved;
  hostile_report(h, what, rc < 0 ? -1 : 0);
}

#define HOSTILE_DATAGRAM_PARAMS(P)                                                \
  P(path, STRING, REQUIRED, "", "the socket to reach ('@name': an abstract one)") \
  P(target, STRING, DEFAULT, "socket",                                            \
    "how: socket (a datagram), pair (a datagram from "                            \
    "socketpair) or stream (connect)")

HH_PLUGIN_DEFINE("hostile_datagram", "1.0.0", "Test fixture: reaches a unix socket",
                 HOSTILE_DATAGRAM_PARAMS, hostile_create)
