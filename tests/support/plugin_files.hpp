// Helpers that damage copies of real plugin files in known ways (discovery and loader tests).
#pragma once

#include <elf.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "test_support.hpp"

namespace hookhost::testing {

// Overwrites `size` bytes at `offset` of `file` with the bytes of `value`.
template <typename T>
void patch_file(const fs::path& file, std::size_t offset, T value) {
  std::string content = read_file(file);
  if (offset + sizeof value > content.size()) throw std::runtime_error("patch past end of file");
  std::memcpy(content.data() + offset, &value, sizeof value);
  write_file(file, content);
}

// Copies `source` into `dir` as `name`, keeping only its first `bytes` bytes.
inline fs::path truncated_copy(const fs::path& source, const fs::path& dir, const std::string& name,
                               std::size_t bytes) {
  fs::path target = dir / name;
  write_file(target, read_file(source).substr(0, bytes));
  return target;
}

// Offset of the hookhost note's header (namesz field) in a plugin file's bytes.
inline std::size_t find_hookhost_note(const std::string& content) {
  // name "hookhost" padded to 12 bytes, then the descriptor's format field (2).
  static const std::string kOwner("hookhost\0\0\0\0\2\0\0\0", 16);
  std::size_t pos = content.find(kOwner);
  if (pos == std::string::npos || pos < 12) throw std::runtime_error("no hookhost note found");
  return pos - 12;
}

// Where the last loadable segment of a (well-formed, 64-bit) plugin file ends: dlopen maps up to
// here, whatever debug sections follow.
inline std::size_t loadable_end(const std::string& content) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, content.data(), sizeof eh);
  std::size_t end = 0;
  for (std::size_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, content.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type == PT_LOAD) end = std::max<std::size_t>(end, ph.p_offset + ph.p_filesz);
  }
  return end;
}

constexpr std::size_t kMachineOffset = offsetof(Elf64_Ehdr, e_machine);
constexpr std::size_t kTypeOffset = offsetof(Elf64_Ehdr, e_type);

}  // namespace hookhost::testing
