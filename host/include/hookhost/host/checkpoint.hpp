// Checkpoint files: the workload's state and every hook's state, written atomically with a
// checksum, plus an index of the kept checkpoints. Format: docs/checkpoint-format.md. The program
// uses these; an embedding program may too, to keep its checkpoints in the same format.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hook_state.hpp"

namespace hookhost {

struct Checkpoint {
  int64_t global_step = 0;
  std::string workload_state;
  std::map<std::string, SavedHookState> hook_states;  // instance name -> saved state
};

// Writes <dir>/<basename>-<step> atomically (temporary file in `dir`, fsync, rename, fsync of
// `dir`), then rewrites the index <dir>/checkpoint atomically and deletes checkpoints beyond the
// newest `max_to_keep` by step (0 keeps all; the file just written is always kept). Returns the
// checkpoint's path. Throws std::runtime_error naming the file on any I/O error.
std::filesystem::path write_checkpoint(const std::filesystem::path& dir,
                                       const std::string& basename, const Checkpoint& checkpoint,
                                       uint32_t max_to_keep);

// Reads and verifies one checkpoint file. Throws std::runtime_error saying what is wrong.
Checkpoint read_checkpoint(const std::filesystem::path& file);

// The files of `dir` named <basename>-<step>, newest (highest step) first.
std::vector<std::filesystem::path> list_checkpoints(const std::filesystem::path& dir,
                                                    const std::string& basename = "model.ckpt");

struct RestoredCheckpoint {
  std::filesystem::path file;  // empty when every checkpoint found was corrupt
  Checkpoint checkpoint;
  std::vector<std::string> skipped;  // "file: reason" for every newer one that was corrupt
};

// Throws std::runtime_error (naming the file) when a checkpoint that read correctly is still not
// usable, e.g. its workload state disagrees with its step.
using CheckpointValidator =
    std::function<void(const std::filesystem::path& file, const Checkpoint& checkpoint)>;

// The newest usable checkpoint in `dir`: it reads and verifies, the step in its name equals the
// step in its header, and `validate` (when given) accepts it. Unusable ones are skipped (listed in
// `skipped`, newest first). nullopt when the folder holds no checkpoint file at all; a result with
// an empty `file` when every one was unusable.
std::optional<RestoredCheckpoint> restore_latest_checkpoint(
    const std::filesystem::path& dir, const std::string& basename = "model.ckpt",
    const CheckpointValidator& validate = {});

// Repairs what a killed job can leave in a checkpoint folder: removes temporary files of an
// interrupted save and rewrites an index that names missing files. Returns one line per repair.
// Call it only while no other job writes into `dir`.
std::vector<std::string> tidy_checkpoint_folder(const std::filesystem::path& dir,
                                                const std::string& basename = "model.ckpt");

}  // namespace hookhost
