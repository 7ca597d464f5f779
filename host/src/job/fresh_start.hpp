// --fresh: the previous run's folders moved aside, so that no later start resumes its
// checkpoints, and put back when the new job does not start after all.
#pragma once

#include <filesystem>
#include <optional>
#include <utility>

namespace spdlog {
class logger;
}

namespace hookhost {

// What --fresh moved aside, to put back when the job does not start after all.
struct MovedAside {
  std::optional<std::filesystem::path> run_dir;
  // (the folder, where it went)
  std::optional<std::pair<std::filesystem::path, std::filesystem::path>> checkpoint_dir;
};

// Renames a used run directory to <run_dir>.old-<time>, and a used checkpoint folder outside it
// (an absolute [run] checkpoint_dir) to <checkpoint_dir>.old-<time> with the same suffix. Throws
// ConfigError when a folder cannot be moved, or the checkpoint folder holds the run directory.
MovedAside move_aside(const std::filesystem::path& run_dir,
                      const std::filesystem::path& checkpoint_dir, spdlog::logger& log);

}  // namespace hookhost
