// Folders the host makes and writes for a sandboxed hook, resolved with the hook's rights: beneath
// a folder the hook may write, never through a symbolic link it could have planted there
// (docs/isolation.md, "What the host does for a confined hook").
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "support/unique_fd.hpp"

namespace hookhost {

// A path refused because of where it leads; what() starts with the kernel's name of the reason:
// "EXDEV: 'x' resolves outside ...", "ELOOP: a symbolic link on the way to 'x' ...".
class PathRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The folder `relative` beneath the open folder `root`, made level by level with mkdirat where it
// is missing, as a descriptor (O_DIRECTORY). Every level is opened with openat2(RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS) from `root`, so `..` may move within it but never above it, and a symbolic
// link anywhere on the way is refused. `root_name` names the root in messages ("the run folder").
// Throws PathRefused for an absolute path, an escape, a link or a file on the way, and
// std::runtime_error when a level cannot be made (a full disk).
UniqueFd open_folder_beneath(int root, std::string_view relative, std::string_view root_name);

}  // namespace hookhost
