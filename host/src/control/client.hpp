// hookhost ctl's end: one request to the job running in a run directory, and its reply.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "control/protocol.hpp"

namespace hookhost::control {

// Sends `words` to the job listening in `run_dir` and waits at most `timeout` for the whole reply.
// Throws std::runtime_error saying what is wrong and what to do (no job runs there, not this
// user's job, no answer in time, or it ended before it answered).
Reply send_request(const std::filesystem::path& run_dir, const std::vector<std::string>& words,
                   std::chrono::milliseconds timeout);

}  // namespace hookhost::control
