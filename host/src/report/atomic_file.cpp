#include "report/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "support/unique_fd.hpp"

namespace hookhost {
namespace fs = std::filesystem;

void write_file_atomically(const fs::path& file, std::string_view content) {
  const fs::path tmp = fs::path(file).concat(".tmp");
  auto fail = [&](const std::string& what, const fs::path& which, const std::string& then = {}) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot " + what + " " + which.string() + then + ": " + why);
  };
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) fail("create", tmp);
  for (std::size_t done = 0; done < content.size();) {
    const ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write", tmp);
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd.get()) != 0) fail("sync", tmp);
  if (fd.close() != 0) fail("close", tmp);
  if (::rename(tmp.c_str(), file.c_str()) != 0) fail("rename", tmp, " to " + file.string());
  // The rename itself reaches the disk with the folder.
  const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
  UniqueFd dir(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir) ::fsync(dir.get());
}

}  // namespace hookhost
