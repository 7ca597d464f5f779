// A "fork" of a built plugin under another id, as an author who copies a built-in and renames it
// gets: every occurrence of the id in the file (the note's id= line, the entry's id string) is
// replaced by another id of the same length, so the note and the entry still agree.
#pragma once

#include <stdexcept>
#include <string>

#include "test_support.hpp"

namespace hookhost::testing {

inline fs::path fork_plugin(const fs::path& source, const fs::path& dir, const std::string& id,
                            const std::string& new_id) {
  if (id.size() != new_id.size()) throw std::invalid_argument("the ids must have one length");
  std::string bytes = read_file(source);
  std::size_t replaced = 0;
  for (std::size_t at = bytes.find(id); at != std::string::npos; at = bytes.find(id, at)) {
    bytes.replace(at, id.size(), new_id);
    ++replaced;
  }
  if (replaced < 2) throw std::runtime_error("the id is not in both the note and the entry");
  const fs::path target = dir / (new_id + ".so");
  write_file(target, bytes);
  fs::permissions(target, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  return target;
}

}  // namespace hookhost::testing
