// Resident memory of a hook's runner process, and the judgement of whether it grows with steps.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hookhost::check {

// The resident set of process `pid` in bytes (/proc/PID/statm), or nullopt when it cannot be read.
std::optional<uint64_t> resident_bytes(pid_t pid);

struct MemorySample {
  int64_t step = 0;  // steps run when it was taken
  uint64_t bytes = 0;
};

// Why `samples` (three or more, in step order) show memory that grows with the steps: more than
// `threshold_bytes` from the first sample to the last, and growing in each half of the run (a
// one-off allocation, like a buffer or a cache filled once, grows in one half only). Empty when
// they do not.
std::string describe_growth(const std::vector<MemorySample>& samples, uint64_t threshold_bytes);

}  // namespace hookhost::check
