// Which changes of a hook widen what it may do: a `hookhost ctl set` that widens needs the
// operator's explicit consent (`--allow-widen`), as editing the configuration file is.
#pragma once

#include <string>
#include <vector>

#include "job/job_plan.hpp"

namespace hookhost {

// The keys whose change from `before` to `after` (the same hook, planned twice) gives it more:
// isolation process -> in_process; a weaker confine; an isolation_group joined; an allow_*
// grant added (a path not below one it had, the network, processes); a limit raised or removed
// (memory_limit_mb, call_timeout_ms, limit_*); a path parameter its plugin reads or writes
// (needs.read.param, needs.write.param) naming a path not below one it named. In key order.
std::vector<std::string> widened_keys(const PlannedHook& before, const PlannedHook& after);

}  // namespace hookhost
