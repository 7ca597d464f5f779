// An owned file descriptor, closed once. Every descriptor the host and hookhost-runner open is held
// in one, so that no error path can leak it.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <utility>

namespace hookhost {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  // Closes now and gives close()'s result: a file written through the descriptor can report a
  // write error only here (NFS, some FUSE folders). 0 when nothing was open.
  int close() { return fd_ >= 0 ? ::close(std::exchange(fd_, -1)) : 0; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// A new pipe, both ends close-on-exec: {read end, write end}. Both are empty when it cannot be made
// (errno says why), so that each caller words its own error.
inline std::pair<UniqueFd, UniqueFd> open_pipe() {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) return {};
  return {UniqueFd(ends[0]), UniqueFd(ends[1])};
}

namespace sandbox {
using hookhost::UniqueFd;
}

}  // namespace hookhost
