/* Steers the job through its control socket (RUN_DIR/control.sock: a confined hook's run folder
 * is RUN_DIR/hooks/NAME, an unconfined one's RUN_DIR itself): reads the job's control token (where
 * the job keeps it: the user's private folder, named after the run directory's device and inode),
 * then asks for `stop` without a token and, with the token it read (zeros when it could not), for
 * `stop`, `set <self>.isolation=in_process` and the same with --allow-widen, and logs each reply's
 * words. Needs the network granted (a confined hook without it cannot make the socket). */
#include "hostile.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

/* Sends `request` on a new connection to the socket and logs the job's reply (its words, one
 * line), or why there was none. */
static void hostile_ask(hostile* h, const char* socket_path, const char* what,
                        const char* request) {
  struct sockaddr_un to;
  char reply[600], text[900];
  ssize_t n, got = 0;
  long fd = syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    hostile_report(h, "socket(AF_UNIX)", -1);
    return;
  }
  memset(&to, 0, sizeof to);
  to.sun_family = AF_UNIX;
  snprintf(to.sun_path, sizeof to.sun_path, "%s", socket_path);
  if (syscall(SYS_connect, (int)fd, (struct sockaddr*)&to, sizeof to) != 0) {
    hostile_report(h, "connect(control.sock)", -1);
    close((int)fd);
    return;
  }
  (void)!send((int)fd, request, strlen(request), MSG_NOSIGNAL);
  while (got < (ssize_t)sizeof reply - 1 &&
         (n = read((int)fd, reply + got, sizeof reply - 1 - (size_t)got)) > 0)
    got += n;
  close((int)fd);
  reply[got] = '\0';
  for (char* c = reply; *c; ++c)
    if (*c == '\n') *c = ' ';
  snprintf(text, sizeof text, "control %s: %s", what, got > 0 ? reply : "(no reply)");
  hostile_say(h, text);
}

static void hostile_attempt(hostile* h) {
  char own[1024], socket_path[1100], token_path[1100], request[1400], token[80], comm[32];
  const char* self;
  struct stat run, probe;
  long fd;
  ssize_t n;
  snprintf(own, sizeof own, "%s", h->host->run_dir(h->host));
  self = h->name;
  /* RUN_DIR/hooks/NAME when confined: the job's run directory is two folders up. */
  snprintf(token_path, sizeof token_path, "%s/../../hooks/%s", own, self);
  if (stat(token_path, &run) == 0 && stat(own, &probe) == 0 && run.st_ino == probe.st_ino &&
      run.st_dev == probe.st_dev)
    snprintf(own + strlen(own), sizeof own - strlen(own), "/../..");
  snprintf(socket_path, sizeof socket_path, "%s/control.sock", own);
  snprintf(token_path, sizeof token_path, "%s", own);
  if (stat(token_path, &run) != 0) memset(&run, 0, sizeof run);
  snprintf(token_path, sizeof token_path, "/run/user/%d/hookhost/control-%llu-%llu", (int)geteuid(),
           (unsigned long long)run.st_dev, (unsigned long long)run.st_ino);
  if (access(token_path, F_OK) != 0)
    snprintf(token_path, sizeof token_path, "/tmp/hookhost-%d/control-%llu-%llu", (int)geteuid(),
             (unsigned long long)run.st_dev, (unsigned long long)run.st_ino);
  fd = syscall(SYS_openat, AT_FDCWD, token_path, O_RDONLY | O_CLOEXEC, 0);
  hostile_report(h, "open(the control token)", fd);
  memset(token, '0', 64);
  token[64] = '\0';
  if (fd >= 0) {
    if (read((int)fd, token, 64) != 64) memset(token, '0', 64);
    close((int)fd);
  }
  hostile_ask(h, socket_path, "stop", "stop\n");
  snprintf(request, sizeof request, "token\t%s\nstop\n", token);
  hostile_ask(h, socket_path, "stop with a token", request);
  snprintf(request, sizeof request, "token\t%s\nset\t%s.isolation=in_process\n", token, self);
  hostile_ask(h, socket_path, "set isolation", request);
  snprintf(request, sizeof request, "token\t%s\nset\t--allow-widen\t%s.isolation=in_process\n",
           token, self);
  hostile_ask(h, socket_path, "set --allow-widen", request);
  /* Where this begin ran: a runner, or (had the set been applied) the host's process. */
  fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/comm", O_RDONLY | O_CLOEXEC, 0);
  memset(comm, 0, sizeof comm);
  if (fd >= 0) {
    n = read((int)fd, comm, sizeof comm - 1);
    close((int)fd);
    if (n > 0 && comm[n - 1] == '\n') comm[n - 1] = '\0';
  }
  snprintf(request, sizeof request, "begin ran in %s", comm);
  hostile_say(h, request);
}

HH_PLUGIN_DEFINE("hostile_control", "1.0.0",
                 "Test fixture: steers the job through its control socket", HH_NO_PARAMS,
                 hostile_create)
