#include "job/resume.hpp"

#include <spdlog/spdlog.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "hookhost/host/params.hpp"
#include "job/run_directory.hpp"
#include "storage/checkpoint.hpp"
#include "support/display_text.hpp"

namespace hookhost {
namespace fs = std::filesystem;

namespace {

// Accepts a checkpoint only once its workload state is restored into `session` and puts the
// session at the checkpoint's step; a later candidate overwrites a refused one's restore.
CheckpointValidator restoring_into(Session& session) {
  return [&session](const fs::path& file, const Checkpoint& c) {
    session.restore_state(c.workload_state);
    if (session.global_step() != c.global_step)
      throw std::runtime_error(file.string() + ": its header says global step " +
                               std::to_string(c.global_step) + " but its workload state is at " +
                               std::to_string(session.global_step()));
  };
}

// The newest usable checkpoint, with its workload state restored into `session`. In a distributed
// job the chief alone reads the folder and sends what it found to every process, so the nodes
// need no shared filesystem; every process then holds the same workload state, or every process
// throws the chief's error. nullopt when there is no checkpoint.
std::optional<RestoredCheckpoint> restore_newest(const fs::path& dir, Session& session,
                                                 Communicator* comm) {
  if (!comm) return restore_latest_checkpoint(dir, kCheckpointBasename, restoring_into(session));
  // One message: 'N' none, 'U' none usable (the reasons follow), 'E' an error, 'C' a checkpoint.
  std::string message;
  if (comm->is_chief()) {
    try {
      auto found = restore_latest_checkpoint(dir, kCheckpointBasename, restoring_into(session));
      if (!found) {
        message = "N";
      } else if (found->file.empty()) {
        message = "U";
        for (const auto& skipped : found->skipped) message += skipped + "\n";
      } else {
        message = "C" + found->file.string() + "\n" + encode_checkpoint_message(found->checkpoint);
      }
    } catch (const std::exception& e) {
      message = std::string("E") + e.what();
    }
  }
  comm->broadcast(message, 0);
  const char kind = message.empty() ? 'E' : message[0];
  const std::string rest = message.empty() ? std::string() : message.substr(1);
  if (kind == 'N') return std::nullopt;
  if (kind == 'E') throw std::runtime_error("the chief could not read the checkpoints: " + rest);
  RestoredCheckpoint restored;
  if (kind == 'U') {
    for (std::size_t at = 0, nl; (nl = rest.find('\n', at)) != std::string::npos; at = nl + 1)
      restored.skipped.push_back(rest.substr(at, nl - at));
    return restored;
  }
  const std::size_t nl = rest.find('\n');
  restored.file = rest.substr(0, nl);
  restored.checkpoint = decode_checkpoint_message(rest.substr(nl + 1));
  if (!comm->is_chief()) restoring_into(session)(restored.file, restored.checkpoint);
  return restored;
}

// Gives `session` this process's part of the workload state (Session::restore_rank_state) and
// takes it out of the hook states, where no instance would adopt it.
void restore_rank_workload(HookStates& states, Session& session, const fs::path& file) {
  auto it = states.find(kRankWorkloadEntry);
  if (it == states.end()) return;
  const std::string bytes = std::move(it->second.bytes);
  states.erase(it);
  try {
    session.restore_rank_state(bytes);
  } catch (const std::exception& e) {
    throw std::runtime_error(file.string() +
                             ": this process's part of the workload state: " + e.what());
  }
}

}  // namespace

ResumePoint resume_from_newest(const fs::path& checkpoint_dir, Session& session, Communicator* comm,
                               int rank, spdlog::logger& log) {
  // A checkpoint is usable when it verifies and its name, its header and the workload's restored
  // step agree.
  ResumePoint start;
  std::optional<RestoredCheckpoint> newest;
  try {
    newest = restore_newest(checkpoint_dir, session, comm);
  } catch (const std::runtime_error& e) {
    throw ConfigError(std::string("cannot resume: ") + e.what() +
                      "\nStart over with --fresh (the previous run is moved aside), or remove "
                      "the unusable files.");
  }
  if (auto& restored = newest) {
    for (const auto& skipped : restored->skipped)
      log.warn("skipping an unusable checkpoint: {}", skipped);
    if (restored->file.empty()) {
      std::string list;
      for (const auto& skipped : restored->skipped) list += "\n  " + display_text(skipped);
      throw ConfigError("no usable checkpoint in " + checkpoint_dir.string() +
                        ", so the job cannot resume:" + list +
                        "\nStart over with --fresh (the previous run is moved aside), or "
                        "remove the unusable files.");
    }
    start.hook_states = states_of_rank(restored->checkpoint.hook_states, rank);
    try {
      restore_rank_workload(start.hook_states, session, restored->file);
    } catch (const std::runtime_error& e) {
      throw ConfigError(std::string("cannot resume: ") + e.what() +
                        "\nStart over with --fresh (the previous run is moved aside), or remove "
                        "the unusable files.");
    }
    start.global_step = restored->checkpoint.global_step;
    log.info("resuming from {} at global step {}", restored->file.string(),
             restored->checkpoint.global_step);
  }
  return start;
}

std::function<void(Runtime&)> recover_from_newest(const fs::path& checkpoint_dir,
                                                  std::shared_ptr<spdlog::logger> log,
                                                  Communicator* comm, int rank) {
  return [dir = checkpoint_dir, log = std::move(log), comm, rank](Runtime& rt) {
    // The recreated session continues from the newest checkpoint, as TensorFlow's does.
    if (auto restored = restore_newest(dir, rt.session(), comm);
        restored && !restored->file.empty()) {
      HookStates states = states_of_rank(restored->checkpoint.hook_states, rank);
      restore_rank_workload(states, rt.session(), restored->file);
      rt.restore_hook_states(states);
      log->info("recovery: restored {} at global step {}", restored->file.string(),
                restored->checkpoint.global_step);
    }
  };
}

}  // namespace hookhost
