#include "storage/folder_beneath.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "support/openat2.hpp"

namespace hookhost {
namespace {

// No O_NOFOLLOW for openat2: a link as the last level would then be ENOTDIR, not the ELOOP that
// RESOLVE_NO_SYMLINKS gives it.
constexpr uint64_t kFolderFlags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
constexpr uint64_t kBeneath = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

std::vector<std::string> components(std::string_view path) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= path.size()) {
    const std::size_t slash = std::min(path.find('/', at), path.size());
    if (slash > at) out.emplace_back(path.substr(at, slash - at));
    at = slash + 1;
  }
  return out;
}

[[noreturn]] void refuse(int error, std::string_view relative, const std::string& level,
                         std::string_view root_name) {
  std::string text = errno_name(error);
  text.append(": ");
  switch (error) {
    case EXDEV:
      text.append("'").append(relative).append("' resolves outside ").append(root_name);
      throw PathRefused(text.append(" the hook may write"));
    case ELOOP:
      text.append("a symbolic link on the way to '").append(relative).append("' ('");
      throw PathRefused(
          text.append(level).append("'): the host follows no link for a "
                                    "sandboxed hook"));
    case ENOTDIR:
      text.append("'").append(level).append("' on the way to '").append(relative);
      throw PathRefused(text.append("' is not a folder"));
    default:
      text.append("cannot open or make '").append(level).append("' beneath ").append(root_name);
      throw std::runtime_error(text.append(": ").append(std::strerror(error)));
  }
}

// One more level below `parent` (opened as `level` from `root`): openat2 from the root, or, on a
// kernel without it, openat from the parent without following a link (`..` is then refused, as
// the walk could not tell where it leads).
int open_level(int root, int parent, const std::string& level, const std::string& component) {
  const int fd = open_resolved(root, level.c_str(), kFolderFlags, kBeneath);
  if (fd >= 0 || errno != ENOSYS) return fd;
  if (component == "..") {
    errno = EXDEV;
    return -1;
  }
  return ::openat(parent, component.c_str(), static_cast<int>(kFolderFlags | O_NOFOLLOW));
}

}  // namespace

UniqueFd open_folder_beneath(int root, std::string_view relative, std::string_view root_name) {
  if (!relative.empty() && relative.front() == '/') refuse(EXDEV, relative, "/", root_name);
  UniqueFd current(::openat(root, ".", static_cast<int>(kFolderFlags)));
  if (!current) refuse(errno, relative, ".", root_name);
  std::string level;
  for (const std::string& component : components(relative)) {
    if (!level.empty()) level.push_back('/');
    level.append(component);
    int fd = open_level(root, current.get(), level, component);
    // A missing level is made in the folder reached so far, which is beneath the root; a link or
    // anything else already there makes mkdirat fail with EEXIST, and the open below refuses it.
    if (fd < 0 && errno == ENOENT && component != "." && component != "..") {
      if (::mkdirat(current.get(), component.c_str(), 0755) != 0 && errno != EEXIST)
        refuse(errno, relative, level, root_name);
      fd = open_level(root, current.get(), level, component);
    }
    if (fd < 0) refuse(errno, relative, level, root_name);
    current.reset(fd);
  }
  return current;
}

}  // namespace hookhost
