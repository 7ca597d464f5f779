// --fresh and resuming with a checkpoint folder outside the run directory (an absolute
// [run] checkpoint_dir), and what resume says about unusable checkpoints: the real program, real
// checkpoint files in temporary folders.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <string>
#include <vector>

#include "process.hpp"
#include "storage/checkpoint.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// The folders in `dir` whose name starts with `prefix`.
std::vector<fs::path> folders_starting_with(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> found;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind(prefix, 0) == 0)
      found.push_back(e.path());
  return found;
}

class FreshResumeTest : public ::testing::Test {
 protected:
  // A linreg job of 100 steps with a checkpoint every 10 steps into an absolute folder outside
  // the run directory, and a history in the run directory; hook.stop.last_step shortens it.
  fs::path config() {
    const fs::path file = dir_ / "job.ini";
    write_file(file, "[run]\nrun_dir = run\nkeep_checkpoints = 0\ncheckpoint_dir = " +
                         checkpoints().string() +
                         "\n\n[workload]\nname = linreg\nepochs = 25\n\n"
                         "[hook.checkpoints]\nplugin = checkpoint_saver\nsave_steps = 10\n"
                         "order = 100\n\n[hook.stop]\nplugin = stop_at_step\nlast_step = 100\n"
                         "\n[hook.history]\nplugin = history_saver\nevery_n_steps = 10\n");
    return file;
  }
  fs::path checkpoints() const { return dir_ / "shared" / "ckpts"; }
  ProcessResult run(std::vector<std::string> args) {
    args.insert(args.begin(), {"run", "--config", config().string()});
    return run_hookhost(args, dir_.path());
  }
  TempDir dir_;
};

// The reproduction: a 100-step run, then --fresh to step 30, then a plain start. Before,
// the old run's checkpoints stayed beside the fresh ones and the plain start resumed at 100.
TEST_F(FreshResumeTest, FreshMovesAnAbsoluteCheckpointFolderAsideWithTheRun) {
  ProcessResult first = run({});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_TRUE(fs::exists(checkpoints() / "model.ckpt-100"));

  ProcessResult fresh = run({"--fresh", "--set", "hook.stop.last_step=30"});
  ASSERT_EQ(fresh.exit_code, 0) << fresh.err;
  EXPECT_THAT(fresh.err, AllOf(HasSubstr("--fresh: moved the previous run to"),
                               HasSubstr("--fresh: moved the previous run's checkpoints to"),
                               Not(HasSubstr("resuming"))));
  EXPECT_FALSE(fs::exists(checkpoints() / "model.ckpt-100"));
  EXPECT_TRUE(fs::exists(checkpoints() / "model.ckpt-30"));
  // Both halves of the old run carry the same suffix, so they are easy to pair.
  const auto old_runs = folders_starting_with(dir_.path(), "run.old-");
  const auto old_checkpoints = folders_starting_with(dir_ / "shared", "ckpts.old-");
  ASSERT_EQ(old_runs.size(), 1u);
  ASSERT_EQ(old_checkpoints.size(), 1u);
  EXPECT_EQ(old_runs[0].filename().string().substr(3),
            old_checkpoints[0].filename().string().substr(5));
  EXPECT_TRUE(fs::exists(old_checkpoints[0] / "model.ckpt-100"));

  ProcessResult again = run({"--set", "hook.stop.last_step=40"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.err, HasSubstr("at global step 30"));
  EXPECT_THAT(again.err, Not(HasSubstr("at global step 100")));
  EXPECT_TRUE(fs::exists(checkpoints() / "model.ckpt-40"));
}

// A fresh start with no previous checkpoints moves nothing, and a second --fresh picks a suffix
// that is still free.
TEST_F(FreshResumeTest, FreshTwiceKeepsBothOldRuns) {
  ASSERT_EQ(run({"--set", "hook.stop.last_step=10"}).exit_code, 0);
  ASSERT_EQ(run({"--fresh", "--set", "hook.stop.last_step=20"}).exit_code, 0);
  ProcessResult second = run({"--fresh", "--set", "hook.stop.last_step=30"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const auto old_checkpoints = folders_starting_with(dir_ / "shared", "ckpts.old-");
  ASSERT_EQ(old_checkpoints.size(), 2u);
  std::vector<long> newest;
  for (const auto& folder : old_checkpoints)
    newest.push_back(fs::exists(folder / "model.ckpt-20") ? 20 : 10);
  std::sort(newest.begin(), newest.end());
  EXPECT_THAT(newest, ElementsAre(10, 20));
  EXPECT_EQ(folders_starting_with(dir_.path(), "run.old-").size(), 2u);
}

// A checkpoint folder that holds the run directory cannot be moved aside on its own: refused,
// naming both and the fix, before anything is moved.
TEST_F(FreshResumeTest, FreshRefusesACheckpointFolderThatHoldsTheRunDirectory) {
  ASSERT_EQ(run({"--set", "hook.stop.last_step=10"}).exit_code, 0);
  ProcessResult r = run({"--fresh", "--set", "run.checkpoint_dir=" + dir_.path().string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, AllOf(HasSubstr("--fresh: [run] checkpoint_dir " + dir_.path().string()),
                           HasSubstr("holds the run directory"),
                           HasSubstr("give checkpoint_dir a folder of its own")));
  EXPECT_TRUE(folders_starting_with(dir_.path(), "run.old-").empty());
}

// Every "skipping an unusable checkpoint" reason names its file, also when the workload (not the
// file format) refuses the checkpoint's state.
TEST_F(FreshResumeTest, EverySkippedCheckpointNamesItsFile) {
  ASSERT_EQ(run({"--set", "hook.stop.last_step=20"}).exit_code, 0);
  Checkpoint bad;
  bad.global_step = 30;
  bad.workload_state = "not a linreg state";
  const fs::path bad_file = write_checkpoint(checkpoints(), "model.ckpt", bad, 0);
  ProcessResult r = run({"--set", "hook.stop.last_step=40"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("skipping an unusable checkpoint: " + bad_file.string() + ": "));
  EXPECT_THAT(r.err, HasSubstr("at global step 20"));

  // The same reasons, from the library call itself.
  auto restored = restore_latest_checkpoint(checkpoints(), "model.ckpt",
                                            [](const fs::path&, const Checkpoint& c) {
                                              if (c.global_step == 40)
                                                throw std::runtime_error("the state is bad");
                                            });
  ASSERT_TRUE(restored);
  ASSERT_FALSE(restored->skipped.empty());
  EXPECT_EQ(restored->skipped[0],
            (checkpoints() / "model.ckpt-40").string() + ": the state is bad");
}

// `iteration` counts the steps of this process (departures-from-tensorflow.md): 0 again in a
// resumed job, while the global step goes on from the checkpoint.
TEST(IterationCount, StartsAtZeroAgainInAResumedJobWhileTheGlobalStepGoesOn) {
  TempDir dir;
  const fs::path plugins = dir / "plugins";
  fs::create_directories(plugins);
  copy_plugin(fixture_plugin("scripted"), plugins);
  write_file(dir / "job.ini",
             "[run]\nrun_dir = run\n\n[workload]\nname = linreg\nepochs = 2\n\n"
             "[hook.obs]\nplugin = scripted\ntrace = " +
                 (dir / "trace.txt").string() +
                 "\n\n[hook.ckpt]\nplugin = checkpoint_saver\nsave_steps = 4\n");
  const std::vector<std::string> args{"run", "--config", (dir / "job.ini").string(), "--plugin-dir",
                                      plugins.string()};
  ProcessResult first = run_hookhost(args, dir.path());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  std::vector<std::string> more = args;
  more.insert(more.end(), {"--set", "workload.epochs=4"});
  ProcessResult resumed = run_hookhost(more, dir.path());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const std::string trace = read_file(dir / "trace.txt");
  const std::size_t second = trace.find("obs begin", 1);
  ASSERT_NE(second, std::string::npos) << trace;
  const std::string before = trace.substr(0, second), after = trace.substr(second);
  EXPECT_THAT(before, HasSubstr("obs before_run gs=7 live=7 it=7\n"));
  // The resumed job starts at the checkpoint's step 8 with iteration 0.
  EXPECT_THAT(after, HasSubstr("obs after_create_session gs=8 "));
  EXPECT_THAT(after, HasSubstr("obs before_run gs=8 live=8 it=0\n"));
  EXPECT_THAT(after, HasSubstr("obs before_run gs=15 live=15 it=7\n"));
  EXPECT_THAT(after, Not(HasSubstr("gs=0 ")));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
