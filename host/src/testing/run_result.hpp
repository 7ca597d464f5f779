// What HookTest reads from the runtime's own words into a RunResult whose outcome, report and
// host log are set: the hook's failure (from its report's "CALLBACK failed: MESSAGE"), the
// checkpoints it asked for (from the host log) and whether it stopped the job (from the reason).
#pragma once

#include <string>

#include "hookhost/testing.hpp"

namespace hookhost::testing {

void read_failure_checkpoints_and_stop(RunResult& run, const std::string& instance);

}  // namespace hookhost::testing
