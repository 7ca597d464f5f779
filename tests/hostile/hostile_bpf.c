/* Creates a one-entry BPF array map (and closes it). */
#include "hostile.h"

#include <linux/bpf.h>

static void hostile_attempt(hostile* h) {
  union bpf_attr attr;
  long fd;
  memset(&attr, 0, sizeof attr);
  attr.map_type = BPF_MAP_TYPE_ARRAY;
  attr.key_size = 4;
  attr.value_size = 4;
  attr.max_entries = 1;
  fd = syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr);
  hostile_report(h, "bpf(BPF_MAP_CREATE)", fd);
  if (fd >= 0) close((int)fd);
}

HH_PLUGIN_DEFINE("hostile_bpf", "1.0.0", "Test fixture: creates a BPF map", HH_NO_PARAMS,
                 hostile_create)
