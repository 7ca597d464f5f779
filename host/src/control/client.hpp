// hookhost ctl's end: one request to the job running in a run directory, and its reply.
#pragma once

#include <chrono>
#include <csignal>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "control/protocol.hpp"

namespace hookhost::control {

// Thrown when `interrupted` was set while the request waited (a signal handler sets it).
struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted") {}
};

// Sends `words` to the job listening in `run_dir` and waits at most `timeout` for the whole reply.
// The job's token is sent only to a socket served by this user. Throws std::runtime_error saying
// what is wrong and what to do (no job runs there, not this user's job, no answer in time, or it
// ended before it answered), or Interrupted when a signal whose handler set `*interrupted` came
// (its handler must be installed without SA_RESTART).
Reply send_request(const std::filesystem::path& run_dir, const std::vector<std::string>& words,
                   std::chrono::milliseconds timeout,
                   const volatile std::sig_atomic_t* interrupted = nullptr);

}  // namespace hookhost::control
