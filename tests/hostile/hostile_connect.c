/* Opens a TCP connection to 127.0.0.1:`port` (a listener the test started) and sends a line. */
/* Built twice: as itself, and as its benign twin that declares the need in its note. */
#ifdef HOSTILE_DECLARES_NEEDS
#define HH_PLUGIN_NEEDS HH_NEEDS_NETWORK
#define HOSTILE_ID "hostile_connect_declared"
#else
#define HOSTILE_ID "hostile_connect"
#endif
#include "hostile.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

static void hostile_attempt(hostile* h) {
  struct sockaddr_in to;
  static const char line[] = "hello from hostile_connect\n";
  long fd = syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    hostile_report(h, "socket(AF_INET)", -1);
    return;
  }
  memset(&to, 0, sizeof to);
  to.sin_family = AF_INET;
  to.sin_port = htons((uint16_t)h->port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  long rc = syscall(SYS_connect, (int)fd, (struct sockaddr*)&to, sizeof to);
  if (rc == 0 && write((int)fd, line, sizeof line - 1) != (ssize_t)(sizeof line - 1)) rc = -1;
  const int saved = errno;
  close((int)fd);
  errno = saved;
  hostile_report(h, "connect(127.0.0.1)", rc);
}

#define HOSTILE_CONNECT_PARAMS(P) P(port, INT, REQUIRED, "", "the TCP port on 127.0.0.1")

HH_PLUGIN_DEFINE(HOSTILE_ID, "1.0.0", "Test fixture: connects to a local TCP port",
                 HOSTILE_CONNECT_PARAMS, hostile_create)
