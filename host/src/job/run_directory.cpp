#include "job/run_directory.hpp"

#include <stdlib.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "job/fresh_start.hpp"
#include "storage/checkpoint.hpp"

namespace hookhost {
namespace fs = std::filesystem;

RunDirectory::~RunDirectory() {
  lock_.reset();
  std::error_code ec;
  if (!scratch_.empty()) fs::remove_all(scratch_, ec);
  // Newest first: a folder made inside another one made earlier goes before it.
  for (auto f = made_by_check_.rbegin(); f != made_by_check_.rend(); ++f) fs::remove_all(*f, ec);
}

void RunDirectory::create(const std::string& config_name) {
  std::error_code ec;
  fs::create_directories(path_, ec);
  if (ec)
    throw ConfigError(config_name + ": run_dir " + path_.string() +
                      " cannot be created: " + ec.message());
}

void RunDirectory::open_chief(const JobConfig& cfg, bool fresh, bool check_only, int rank,
                              spdlog::logger& log) {
  const std::string config_name = cfg.file ? cfg.file->string() : "(no config file)";
  if (check_only) {
    // A check must leave nothing in the run directory (it may not exist yet), yet a hook's
    // create() may open its outputs there: it gets a temporary folder instead.
    std::string pattern = (fs::temp_directory_path() / "hookhost-check-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      throw std::runtime_error("cannot create a temporary folder for --check in " +
                               fs::temp_directory_path().string() + ": " + std::strerror(errno));
    scratch_ = path_ = pattern;
  } else if (rank == 0) {
    path_ = cfg.run_dir;
    create(config_name);
    path_ = fs::canonical(path_);
    // Nobody else may use the run directory, --fresh or not, before anything in it is touched.
    lock_ = std::make_unique<RunDirLock>(path_);
    // --fresh: everything but the hooks' create() is validated by now; if a create() fails
    // later, the previous run is put back as it was.
    if (fresh) {
      const fs::path checkpoints =
          cfg.checkpoint_dir.is_relative() ? path_ / cfg.checkpoint_dir : cfg.checkpoint_dir;
      MovedAside moved = move_aside(path_, checkpoints, log);
      checkpoints_aside_ = moved.checkpoint_dir;
      if (moved.run_dir || moved.checkpoint_dir) moved_aside_ = moved.run_dir.value_or(fs::path());
      if (moved.run_dir) {
        create(config_name);
        lock_ = std::make_unique<RunDirLock>(path_);
      }
    }
  }
  // Every process but the chief has no run directory yet: its relative checkpoint folder is
  // never written (the chief writes the checkpoints).
  checkpoint_dir_ = cfg.checkpoint_dir.is_relative() || check_only
                        ? path_ / cfg.checkpoint_dir.relative_path()
                        : cfg.checkpoint_dir;
  if (rank == 0 && !check_only)
    for (const std::string& repair : tidy_checkpoint_folder(checkpoint_dir_, kCheckpointBasename))
      log.info("checkpoint folder: {}", repair);
}

void RunDirectory::open_rank_folder(const JobConfig& cfg, bool check_only, int rank) {
  if (rank == 0 || check_only) return;
  path_ = cfg.run_dir / ("rank-" + std::to_string(rank));
  create(cfg.file ? cfg.file->string() : "(no config file)");
  path_ = fs::canonical(path_);
  lock_ = std::make_unique<RunDirLock>(path_);
}

void RunDirectory::put_back_previous_run(spdlog::logger& log) {
  if (!moved_aside_) return;
  const fs::path aside = *moved_aside_;
  moved_aside_.reset();
  lock_.reset();
  std::error_code ec;
  if (checkpoints_aside_) {
    const auto& [folder, moved_to] = *checkpoints_aside_;
    fs::remove_all(folder, ec);
    fs::rename(moved_to, folder, ec);
    if (ec)
      log.error("--fresh: could not put the previous checkpoints back from {}: {}",
                moved_to.string(), ec.message());
  }
  if (aside.empty()) return;
  fs::remove_all(path_, ec);
  fs::rename(aside, path_, ec);
  if (ec)
    log.error("--fresh: could not put the previous run back from {}: {}", aside.string(),
              ec.message());
  else
    log.info("--fresh: the job did not start; the previous run is back in {}", path_.string());
}

}  // namespace hookhost
