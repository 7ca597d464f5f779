#include "job/run_dir_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "hookhost/host/params.hpp"

namespace hookhost {

RunDirLock::RunDirLock(const std::filesystem::path& run_dir) {
  const std::filesystem::path file = run_dir / ".hookhost.lock";
  fd_.reset(::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd_)
    throw ConfigError("cannot open the run directory's lock file " + file.string() + ": " +
                      std::strerror(errno));
  if (::flock(fd_.get(), LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    char holder[32] = {};
    [[maybe_unused]] const ssize_t n = ::pread(fd_.get(), holder, sizeof holder - 1, 0);
    const std::string pid = std::string(holder).substr(0, std::string(holder).find('\n'));
    if (error == EWOULDBLOCK)
      throw ConfigError("the run directory " + run_dir.string() +
                        " is in use by another hookhost job (pid " +
                        (pid.empty() ? std::string("unknown") : pid) +
                        "); wait for it to end, or give this job another run_dir");
    throw ConfigError("cannot lock the run directory " + run_dir.string() + ": " +
                      std::strerror(error));
  }
  const std::string text = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_.get(), 0) == 0) {
    [[maybe_unused]] const ssize_t n = ::pwrite(fd_.get(), text.data(), text.size(), 0);
  }
}

RunDirLock::~RunDirLock() = default;

}  // namespace hookhost
