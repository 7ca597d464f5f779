#include "confine/policy.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string_view>

namespace hookhost::confine {
namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// The limits' flags and where each value goes, one table for both directions of the codec.
struct LimitFlag {
  const char* flag;
  uint64_t ResourceLimits::*field;
  uint64_t max;  // the largest value whose unit still fits a 64-bit count of bytes or seconds
};
constexpr uint64_t kMaxMegabytes = std::numeric_limits<uint64_t>::max() >> 20;
constexpr uint64_t kMaxCount = std::numeric_limits<uint64_t>::max();
constexpr LimitFlag kLimitFlags[] = {
    {"--limit-as-mb", &ResourceLimits::address_space_mb, kMaxMegabytes},
    {"--limit-cpu-secs", &ResourceLimits::cpu_seconds, kMaxCount},
    {"--limit-file-mb", &ResourceLimits::file_size_mb, kMaxMegabytes},
    {"--limit-open-files", &ResourceLimits::open_files, kMaxCount},
    {"--limit-processes", &ResourceLimits::processes, kMaxCount},
};

// Digits only: no sign, no space, no base prefix, no suffix; 0 is refused too, since a limit of 0
// means "not set" and the host never writes it.
bool parse_count(std::string_view text, uint64_t max, uint64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  for (char c : text)
    if (c < '0' || c > '9') return false;
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return false;
  if (value == 0 || value > max) return false;
  *out = value;
  return true;
}

}  // namespace

std::vector<std::string> system_read_paths(int runner) {
  // The loader's cache and the system's libraries (merged /usr or not), the files glibc reads for
  // time zones and CPU counts, CPython 3.11's site configuration, and the devices runtimes open
  // for reading. /proc/<this pid> lets the process read its own maps and status
  // (pthread_getattr_np, ASan, Python's resource module) and dlopen the sealed memfd the host
  // sends through /proc/<pid>/fd/N; it is this process's folder only, so /proc/<host pid>
  // (its mem, its environ) stays closed.
  const std::string own_proc = "/proc/" + std::to_string(runner ? runner : ::getpid());
  const std::string candidates[] = {
      "/usr",
      "/lib",
      "/lib64",
      "/lib32",
      "/bin",
      "/sbin",
      "/etc/ld.so.cache",
      "/etc/ld.so.conf",
      "/etc/ld.so.conf.d",
      "/etc/localtime",
      "/etc/python3.11",
      "/etc/ssl/certs",  // the public certificates TLS libraries read when they load
      "/sys/devices/system/cpu",
      "/proc/cpuinfo",
      "/dev/null",
      "/dev/zero",
      "/dev/urandom",
      "/dev/random",
      own_proc,
  };
  std::vector<std::string> paths;
  for (const std::string& path : candidates)
    if (exists(path)) paths.push_back(path);
  return paths;
}

bool policy_allows(const CapabilityPolicy& policy, int runner, const std::string& path,
                   bool write) {
  const std::filesystem::path wanted = std::filesystem::path(path).lexically_normal();
  auto beneath = [&](const std::string& root) {
    const std::filesystem::path base = std::filesystem::path(root).lexically_normal();
    auto [end, unused] = std::mismatch(base.begin(), base.end(), wanted.begin(), wanted.end());
    (void)unused;
    return end == base.end() || (std::next(end) == base.end() && end->empty());  // "dir/" too
  };
  for (const std::string& root : policy.write)
    if (beneath(root)) return true;
  if (write) return false;
  for (const std::string& root : policy.read)
    if (beneath(root)) return true;
  for (const std::string& root : system_read_paths(runner))
    if (beneath(root)) return true;
  return false;
}

std::vector<std::string> runner_args(const CapabilityPolicy& policy) {
  std::vector<std::string> args;
  for (const std::string& path : policy.read) {
    args.push_back("--read");
    args.push_back(path);
  }
  for (const std::string& path : policy.write) {
    args.push_back("--write");
    args.push_back(path);
  }
  if (policy.network) args.push_back("--network");
  if (policy.processes) args.push_back("--processes");
  if (policy.metadata) args.push_back("--metadata");
  if (!policy.restrict_files) args.push_back("--files-open");
  for (const LimitFlag& limit : kLimitFlags)
    if (const uint64_t value = policy.limits.*limit.field; value != 0) {
      args.push_back(limit.flag);
      args.push_back(std::to_string(value));
    }
  return args;
}

bool parse_runner_arg(int argc, char** argv, int* i, CapabilityPolicy* policy, std::string* error) {
  const std::string_view arg = argv[*i];
  if (arg == "--network" || arg == "--processes") {
    (arg == "--network" ? policy->network : policy->processes) = true;
    ++*i;
    return true;
  }
  if (arg == "--metadata") {
    policy->metadata = true;
    ++*i;
    return true;
  }
  if (arg == "--files-open") {
    policy->restrict_files = false;
    ++*i;
    return true;
  }
  const bool is_path = arg == "--read" || arg == "--write";
  const LimitFlag* limit = nullptr;
  for (const LimitFlag& candidate : kLimitFlags)
    if (arg == candidate.flag) limit = &candidate;
  if (!is_path && !limit) return false;
  if (*i + 1 >= argc) {
    *error = std::string(arg) + " needs a value (this program is started by hookhost)";
    *i = argc;
    return true;
  }
  const std::string_view value = argv[*i + 1];
  *i += 2;
  if (is_path) {
    if (value.empty() || value.front() != '/') {
      *error = std::string(arg) + " '" + std::string(value) +
               "': an absolute path is needed (the host resolves every path)";
      return true;
    }
    (arg == "--read" ? policy->read : policy->write).emplace_back(value);
    return true;
  }
  uint64_t number = 0;
  if (!parse_count(value, limit->max, &number)) {
    *error = std::string(arg) + " '" + std::string(value) + "': a whole number from 1 to " +
             std::to_string(limit->max) + " is needed";
    return true;
  }
  policy->limits.*limit->field = number;
  return true;
}

}  // namespace hookhost::confine
