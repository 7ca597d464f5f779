// libFuzzer target: the plugin note reader, through its public functions. Each input is parsed as a
// note descriptor and, as a whole file, by read_plugin_note() (ELF checks, then the note). Both
// promise never to throw for malformed input.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "plugins/elf_note.hpp"

namespace {

// One in-memory file for every input: a real regular file to open, without touching the disk.
int input_file() {
  static const int fd = [] {
    const int made = ::memfd_create("hookhost-fuzz-note", 0);
    if (made < 0) std::abort();
    return made;
  }();
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hookhost::parse_note_descriptor(std::as_bytes(std::span(data, size)));

  const int fd = input_file();
  if (::ftruncate(fd, 0) != 0) std::abort();
  if (size > 0 && ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
  hookhost::read_plugin_note("/proc/self/fd/" + std::to_string(fd));
  return 0;
}
