#include "confine/resource_limits.hpp"

#include <errno.h>
#include <signal.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <tuple>

#include "support/sanitizer.hpp"

namespace hookhost::confine {
namespace {

constexpr uint64_t kMegabyte = 1024 * 1024;

std::string set_limit(int resource, const char* name, uint64_t value) {
  if (value == 0) return {};
  const rlimit limit{static_cast<rlim_t>(value), static_cast<rlim_t>(value)};
  if (::setrlimit(resource, &limit) == 0) return {};
  return std::string("setrlimit(") + name + ", " + std::to_string(value) +
         "): " + std::strerror(errno) +
         " (a hard limit below it is in force: lower the hook's limit or raise the host's)";
}

uint64_t saturating_add(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max()
                                                      : a + b;
}

}  // namespace

std::string set_early_limits(const ResourceLimits& limits) {
  if (limits.file_size_mb != 0) ::signal(SIGXFSZ, SIG_IGN);
  for (const auto& [resource, name, value] :
       {std::tuple{RLIMIT_CPU, "RLIMIT_CPU", limits.cpu_seconds},
        std::tuple{RLIMIT_FSIZE, "RLIMIT_FSIZE", limits.file_size_mb * kMegabyte},
        std::tuple{RLIMIT_NPROC, "RLIMIT_NPROC", limits.processes}})
    if (std::string error = set_limit(resource, name, value); !error.empty()) return error;
  return {};
}

uint64_t address_space_base() {
#if defined(HOOKHOST_ASAN)
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmSize:", 0) == 0) return std::strtoull(line.c_str() + 7, nullptr, 10) * 1024;
#endif
  return 0;
}

std::string set_late_limits(const ResourceLimits& limits, uint64_t base) {
  if (std::string error = set_limit(RLIMIT_NOFILE, "RLIMIT_NOFILE", limits.open_files);
      !error.empty())
    return error;
  if (limits.address_space_mb == 0) return {};
  return set_limit(RLIMIT_AS, "RLIMIT_AS",
                   saturating_add(base, limits.address_space_mb * kMegabyte));
}

}  // namespace hookhost::confine
