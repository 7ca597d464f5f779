// The baseline confinement of a sandboxed hook's runner (docs/isolation.md, "Confinement"):
// NO_NEW_PRIVS, then a seccomp filter that makes the calls no hook needs fail with EPERM: ptrace
// and process_vm_readv/writev, signals to any process but this one, namespaces, mounts, chroot,
// bpf, perf_event_open, keyrings, io_uring, kexec and kernel modules. Files, the network and new
// processes stay open (the capability policy's part).
#pragma once

#include <string>

namespace hookhost::confine {

// Confines the calling process for good, every thread of it (the runner calls it while it has one
// thread, before the first plugin is loaded). Returns empty when the filter is in place, else
// what failed ("seccomp_load: Invalid argument"); the process is then as it was, save
// NO_NEW_PRIVS when that part succeeded.
std::string apply_baseline();

}  // namespace hookhost::confine
