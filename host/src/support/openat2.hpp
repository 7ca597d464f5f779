// openat2(2) (Linux 5.6+), which glibc 2.36 does not wrap, and the kernel's names for the errors
// a path refused by it carries ("EXDEV", "ELOOP"), for messages that say what the kernel said.
#pragma once

#include <errno.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace hookhost {

// A new descriptor, or -1 with errno set (ENOSYS on a kernel without openat2). An EAGAIN from a
// rename racing the resolution is retried.
inline int open_resolved(int dirfd, const char* path, uint64_t flags, uint64_t resolve) {
  open_how how{};
  how.flags = flags;
  how.resolve = resolve;
  for (int tries = 0;; ++tries) {
    const long fd = ::syscall(SYS_openat2, dirfd, path, &how, sizeof how);
    if (fd >= 0 || errno != EAGAIN || tries == 8) return static_cast<int>(fd);
  }
}

// "ELOOP" for ELOOP, and so on (glibc's strerrorname_np); "errno N" for one it does not name.
inline std::string errno_name(int error) {
  const char* name = ::strerrorname_np(error);
  return name ? name : "errno " + std::to_string(error);
}

}  // namespace hookhost
