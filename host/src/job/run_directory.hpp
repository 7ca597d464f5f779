// The folders a job writes to: the run directory (the chief's; rank-N inside it for every other
// process of a distributed job; a temporary folder for --check), its lock, and its checkpoint
// folder. It also remembers what --fresh moved aside, to put it back when the job does not start.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hookhost/host/config.hpp"
#include "job/run_dir_lock.hpp"

namespace spdlog {
class logger;
}

namespace hookhost {

// Checkpoint files are <basename>-<step>, with TensorFlow's basename.
inline constexpr const char* kCheckpointBasename = "model.ckpt";

class RunDirectory {
 public:
  RunDirectory() = default;
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;
  ~RunDirectory();

  // The chief's part: the run directory created and locked before anything in it is touched,
  // --fresh applied, and the checkpoint folder tidied; with `check_only`, a temporary folder
  // instead, and nothing else. Every process then knows its checkpoint folder.
  void open_chief(const JobConfig& cfg, bool fresh, bool check_only, int rank, spdlog::logger& log);
  // Every other process of a distributed job: its own rank-N folder inside the run directory,
  // created and locked (on its own machine's disk when the nodes share no filesystem).
  void open_rank_folder(const JobConfig& cfg, bool check_only, int rank);

  // Whether --fresh moved anything aside.
  bool moved_previous_run() const { return moved_aside_.has_value(); }
  // Undoes --fresh after a hook's create() failed: the job never ran, the previous run stays.
  // The hooks must be gone first (their files closed).
  void put_back_previous_run(spdlog::logger& log);

  const std::filesystem::path& path() const { return path_; }
  // With `check_only`: where the check records the folders it had to make outside its temporary
  // folder (a confined hook's write grants), removed with it at the end, since a check writes
  // nothing. Null for a job that runs.
  std::vector<std::filesystem::path>* folders_made_by_check() {
    return scratch_.empty() ? nullptr : &made_by_check_;
  }
  // The checkpoint folder is the job's, never one plugin's: hooks only ask for checkpoints.
  const std::filesystem::path& checkpoint_dir() const { return checkpoint_dir_; }

 private:
  void create(const std::string& config_name);

  std::filesystem::path path_;
  std::filesystem::path checkpoint_dir_;
  std::filesystem::path scratch_;  // check_only: removed with everything in it at the end
  std::vector<std::filesystem::path> made_by_check_;  // check_only: removed at the end too
  std::unique_ptr<RunDirLock> lock_;  // held from before the first file is touched to the end
  // Set when --fresh moved anything aside (an empty path: only the checkpoint folder).
  std::optional<std::filesystem::path> moved_aside_;
  // An absolute checkpoint folder that --fresh moved aside: (the folder, where it went).
  std::optional<std::pair<std::filesystem::path, std::filesystem::path>> checkpoints_aside_;
};

}  // namespace hookhost
