#include "check/runner_memory.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace hookhost::check {

std::optional<uint64_t> resident_bytes(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  std::ifstream in("/proc/" + std::to_string(pid) + "/statm");
  uint64_t size_pages = 0, resident_pages = 0;
  if (!(in >> size_pages >> resident_pages)) return std::nullopt;
  return resident_pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

std::string describe_growth(const std::vector<MemorySample>& samples, uint64_t threshold_bytes) {
  if (samples.size() < 3) return {};
  const MemorySample& first = samples.front();
  const MemorySample& middle = samples[samples.size() / 2];
  const MemorySample& last = samples.back();
  if (last.bytes <= first.bytes + threshold_bytes) return {};
  const uint64_t total = last.bytes - first.bytes;
  // Linear growth puts about half of it in each half; a quarter in each is still clearly steady.
  const auto grew_by = [](const MemorySample& a, const MemorySample& b) {
    return b.bytes > a.bytes ? b.bytes - a.bytes : 0;
  };
  if (grew_by(first, middle) < total / 4 || grew_by(middle, last) < total / 4) return {};
  const double mib = 1024.0 * 1024.0;
  const double per_step =
      static_cast<double>(total) / static_cast<double>(last.step - first.step) / 1024.0;
  char text[256];
  std::snprintf(text, sizeof text,
                "the hook's runner process grew from %.1f MiB resident after %lld steps to %.1f "
                "MiB after %lld and %.1f MiB after %lld (about %.1f KiB per step)",
                static_cast<double>(first.bytes) / mib, static_cast<long long>(first.step),
                static_cast<double>(middle.bytes) / mib, static_cast<long long>(middle.step),
                static_cast<double>(last.bytes) / mib, static_cast<long long>(last.step), per_step);
  return text;
}

}  // namespace hookhost::check
