// libFuzzer target: the job config parser (INI file and --set overrides). Any input must end in a
// JobConfig or a ConfigError; anything else (a crash, another exception, a sanitizer report) is a
// bug.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "hookhost/host/config.hpp"

namespace {

// One in-memory file for every input: a real regular file to open, without touching the disk.
int input_file() {
  static const int fd = [] {
    const int made = ::memfd_create("hookhost-fuzz-config", 0);
    if (made < 0) std::abort();
    return made;
  }();
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = input_file();
  if (::ftruncate(fd, 0) != 0) std::abort();
  if (size > 0 && ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
  const std::filesystem::path file = "/proc/self/fd/" + std::to_string(fd);
  try {
    hookhost::load_job_config(file, {});
  } catch (const hookhost::ConfigError&) {
  }
  // The first line again, as a --set argument.
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    hookhost::load_job_config(std::nullopt, {std::string(text.substr(0, text.find('\n')))});
  } catch (const hookhost::ConfigError&) {
  }
  return 0;
}
