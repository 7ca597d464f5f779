// The few libelf pieces every ELF reader here needs: an owning handle, the library's one-time
// version handshake, and its last error as text.
#pragma once

#include <libelf.h>

#include <memory>
#include <string>

namespace hookhost {

struct ElfCloser {
  void operator()(Elf* e) const { elf_end(e); }
};
using ElfPtr = std::unique_ptr<Elf, ElfCloser>;

// elf_version() must be called once before any other libelf function.
inline bool libelf_ready() {
  static const bool ready = elf_version(EV_CURRENT) != EV_NONE;
  return ready;
}

inline std::string elf_error() {
  const char* msg = elf_errmsg(-1);
  return msg ? msg : "unknown libelf error";
}

}  // namespace hookhost
