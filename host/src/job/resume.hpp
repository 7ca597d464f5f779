// Resuming a job from the newest usable checkpoint of its checkpoint folder: at start, before
// any hook exists, and after a recovered session error. In a distributed job the chief alone reads
// the folder and sends what it found to every process.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>

#include "distributed/state_transfer.hpp"
#include "hookhost/host/runtime.hpp"

namespace spdlog {
class logger;
}

namespace hookhost {

// Where a job starts: the hook states of this process and the global step.
struct ResumePoint {
  HookStates hook_states;
  int64_t global_step = 0;
};

// Restores the newest usable checkpoint of `checkpoint_dir` into `session` and returns this
// process's hook states; an empty ResumePoint when there is no checkpoint. Throws ConfigError
// (telling about --fresh) when there are checkpoints but none is usable, or they cannot be read.
ResumePoint resume_from_newest(const std::filesystem::path& checkpoint_dir, Session& session,
                               Communicator* comm, int rank, spdlog::logger& log);

// RuntimeOptions::on_recover: puts the recreated session and every hook's state back to the
// newest checkpoint, so no hook counts a replayed step twice.
std::function<void(Runtime&)> recover_from_newest(const std::filesystem::path& checkpoint_dir,
                                                  std::shared_ptr<spdlog::logger> log,
                                                  Communicator* comm, int rank);

}  // namespace hookhost
