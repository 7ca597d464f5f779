#include "job/fresh_start.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <ctime>
#include <string>

#include "hookhost/host/params.hpp"
#include "support/display_text.hpp"

namespace hookhost {
namespace fs = std::filesystem;

namespace {

// Whether a folder holds anything but the run lock.
bool folder_used(const fs::path& folder) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec))
    if (entry.path().filename() != ".hookhost.lock") return true;
  return false;
}

// Whether `inner` is `outer` or lies inside it (both absolute; links resolved where they exist).
bool inside(const fs::path& inner, const fs::path& outer) {
  std::error_code ec;
  const fs::path a = fs::weakly_canonical(inner, ec);
  const fs::path b = fs::weakly_canonical(outer, ec);
  return std::mismatch(a.begin(), a.end(), b.begin(), b.end()).second == b.end();
}

}  // namespace

MovedAside move_aside(const fs::path& run_dir, const fs::path& checkpoint_dir,
                      spdlog::logger& log) {
  const bool separate_checkpoints = !inside(checkpoint_dir, run_dir);
  if (separate_checkpoints && inside(run_dir, checkpoint_dir))
    throw ConfigError("--fresh: [run] checkpoint_dir " + display_text(checkpoint_dir.string()) +
                      " holds the run directory " + display_text(run_dir.string()) +
                      ", so it cannot be moved aside on its own: give checkpoint_dir a folder of "
                      "its own (or a relative one, inside the run directory)");
  std::error_code ec;
  const bool run_used = folder_used(run_dir);
  const bool checkpoints_used =
      separate_checkpoints && fs::is_directory(checkpoint_dir, ec) && folder_used(checkpoint_dir);
  MovedAside moved;
  if (!run_used && !checkpoints_used) return moved;
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  // One suffix for both folders, free for both, so the two halves of a run are easy to pair.
  std::string suffix = std::string(".old-") + stamp;
  const auto taken = [&](const fs::path& folder) {
    fs::path target = folder;
    target += suffix;
    return fs::exists(target, ec);
  };
  for (int i = 1; taken(run_dir) || (separate_checkpoints && taken(checkpoint_dir)); ++i)
    suffix = std::string(".old-") + stamp + "-" + std::to_string(i);
  const auto move_folder = [&](const fs::path& folder, const char* what) {
    fs::path target = folder;
    target += suffix;
    fs::rename(folder, target, ec);
    if (ec)
      throw ConfigError("--fresh: cannot move the previous " + std::string(what) + " " +
                        display_text(folder.string()) + " aside to " +
                        display_text(target.string()) + ": " + ec.message());
    log.info("--fresh: moved the previous {} to {}", what, target.string());
    return target;
  };
  if (checkpoints_used)
    moved.checkpoint_dir.emplace(checkpoint_dir, move_folder(checkpoint_dir, "run's checkpoints"));
  if (run_used) {
    try {
      moved.run_dir = move_folder(run_dir, "run");
    } catch (const ConfigError&) {
      if (moved.checkpoint_dir) fs::rename(moved.checkpoint_dir->second, checkpoint_dir, ec);
      throw;
    }
  }
  return moved;
}

}  // namespace hookhost
