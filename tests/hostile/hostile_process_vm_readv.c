/* Reads 16 bytes of the host's memory, from the first readable mapping in its /proc maps. */
#include "hostile.h"

#include <sys/uio.h>

static void hostile_attempt(hostile* h) {
  char path[64], line[512], buffer[16];
  unsigned long start = 0;
  FILE* maps;
  struct iovec local, remote;
  snprintf(path, sizeof path, "/proc/%d/maps", (int)hostile_host_pid());
  maps = fopen(path, "r");
  while (maps && fgets(line, sizeof line, maps)) {
    char perms[8] = "";
    if (sscanf(line, "%lx-%*x %7s", &start, perms) == 2 && perms[0] == 'r') break;
    start = 0;
  }
  if (maps) fclose(maps);
  local.iov_base = buffer;
  local.iov_len = sizeof buffer;
  remote.iov_base = (void*)start;
  remote.iov_len = sizeof buffer;
  /* syscall() reads each argument as a long: pass longs. */
  hostile_report(h, "process_vm_readv(host)",
                 syscall(SYS_process_vm_readv, (long)hostile_host_pid(), &local, 1UL, &remote, 1UL,
                         0UL));
}

HH_PLUGIN_DEFINE("hostile_process_vm_readv", "1.0.0", "Test fixture: reads the host's memory",
                 HH_NO_PARAMS, hostile_create)
