// The few libelf pieces every ELF reader here needs: an owning handle, the library's one-time
// version handshake, its last error as text, and a file opened once for several readers.
#pragma once

#include <fcntl.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "support/unique_fd.hpp"

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

// A plugin file opened once for every reader that needs it (the note, the imports): one
// descriptor and one libelf handle. The handle uses ELF_C_READ, with which libelf preads each
// header, table or section the first time it is asked for and nothing else: listing reads only
// the ELF header, the program headers and the notes. ELF_C_READ_MMAP would map the whole file, and
// a file cut short under a mapping is SIGBUS rather than an error.
class ElfFile {
 public:
  explicit ElfFile(const std::filesystem::path& file) {
    // O_NONBLOCK so that a FIFO cannot hang us in open().
    fd_.reset(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    struct stat st {};
    if (!fd_) {
      open_error_ = std::string("cannot open: ") + std::strerror(errno);
    } else if (::fstat(fd_.get(), &st) != 0) {
      open_error_ = std::string("cannot stat: ") + std::strerror(errno);
    } else if (!S_ISREG(st.st_mode)) {
      open_error_ = "not a regular file";
    } else {
      size_ = static_cast<std::uint64_t>(st.st_size);
    }
  }

  // Why the file cannot be read at all ("cannot open: ...", "not a regular file"), or "".
  const std::string& open_error() const { return open_error_; }
  int fd() const { return fd_.get(); }
  // The size when it was opened; every range read from it is checked against this first.
  std::uint64_t size() const { return size_; }

  // The libelf handle, begun on first use; null when libelf could not initialise or refused the
  // file (see elf_error()). Only for a file that opened.
  Elf* elf() {
    if (!begun_ && open_error_.empty() && libelf_ready()) {
      elf_.reset(elf_begin(fd_.get(), ELF_C_READ, nullptr));
      begun_ = true;
    }
    return elf_.get();
  }

 private:
  UniqueFd fd_;
  std::uint64_t size_ = 0;
  std::string open_error_;
  ElfPtr elf_;
  bool begun_ = false;
};

}  // namespace hookhost
