// What `hookhost run` prints when a job ends.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <hookhost/host/runtime.hpp>

namespace hookhost {

// The end-of-job summary: the headline (outcome, reason, and the hooks that failed or were
// disabled), steps, wall time, steps per second, and the per-hook cost table (calls, total ms,
// mean, p50, p99 and max µs per callback).
std::string format_summary(const JobResult& result, const std::vector<HookReport>& reports,
                           std::chrono::duration<double> wall_time, int64_t first_step);

}  // namespace hookhost
