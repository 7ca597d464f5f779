// The checkpoint_saver plugin driven through the runtime: when it saves, what a checkpoint holds,
// retention, and its configuration errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hookhost/host/checkpoint.hpp>
#include <string>
#include <vector>

#include "plugin_harness.hpp"

namespace hookhost::testing {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// The steps of the checkpoint files in `dir`, oldest first.
std::vector<int64_t> saved_steps(const fs::path& dir) {
  std::vector<int64_t> steps;
  for (const auto& file : list_checkpoints(dir)) {
    const std::string name = file.filename().string();
    steps.insert(steps.begin(), std::stoll(name.substr(name.rfind('-') + 1)));
  }
  return steps;
}

TEST(CheckpointSaver, SavesAtSessionCreationEveryNStepsAndAtTheEnd) {
  PluginHarness h({"checkpoint_saver"});
  h.add("saver", "checkpoint_saver", {{"save_steps", "3"}});
  EXPECT_EQ(h.run().outcome, Outcome::completed);
  const fs::path dir = h.run_dir() / "checkpoints";
  EXPECT_THAT(saved_steps(dir), ElementsAre(0, 3, 6, 9, 10));
  // Each file holds the workload as it was at that step (ScriptedSession saves its step).
  for (int64_t step : {0, 3, 6, 9, 10}) {
    const Checkpoint c = read_checkpoint(dir / ("model.ckpt-" + std::to_string(step)));
    EXPECT_EQ(c.global_step, step);
    EXPECT_EQ(c.workload_state, std::to_string(step));
  }
  EXPECT_THAT(h.log(), HasSubstr("[saver] [info] saved checkpoint " +
                                 (dir / "model.ckpt-3").string() + "\n"));
  EXPECT_THAT(h.log(), HasSubstr("saved checkpoint " + (dir / "model.ckpt-10").string() +
                                 " (final save; job completed: end of data"));
  EXPECT_EQ(read_file(dir / "checkpoint"),
            "model_checkpoint_path: \"model.ckpt-10\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-0\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-3\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-6\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-9\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-10\"\n");
}

TEST(CheckpointSaver, DoesNotSaveTwiceWhenTheLastStepWasAlreadySaved) {
  PluginHarness h({"checkpoint_saver"});
  h.add("saver", "checkpoint_saver", {{"save_steps", "5"}});
  h.run();
  EXPECT_THAT(saved_steps(h.run_dir() / "checkpoints"), ElementsAre(0, 5, 10));
  EXPECT_EQ(count_occurrences(h.log(), "saved checkpoint"), 3);
  EXPECT_THAT(h.log(), Not(HasSubstr("final save")));
}

TEST(CheckpointSaver, SavesEvery600SecondsByDefault) {
  PluginHarness h({"checkpoint_saver"});
  h.add("saver", "checkpoint_saver");
  h.run();
  // A 10-step job takes far less than 600 s: only the start and the end are saved.
  EXPECT_THAT(saved_steps(h.run_dir() / "checkpoints"), ElementsAre(0, 10));
}

TEST(CheckpointSaver, WithStepsAndSecondsWhicheverComesFirstSaves) {
  {
    PluginHarness h({"checkpoint_saver"});
    h.add("saver", "checkpoint_saver", {{"save_steps", "4"}, {"save_secs", "600"}});
    h.run();
    EXPECT_THAT(saved_steps(h.run_dir() / "checkpoints"), ElementsAre(0, 4, 8, 10));
  }
  {
    PluginHarness h({"checkpoint_saver"});
    h.add("saver", "checkpoint_saver",
          {{"save_steps", "1000"}, {"save_secs", "0.000000001"}, {"max_to_keep", "0"}});
    h.run();
    EXPECT_THAT(saved_steps(h.run_dir() / "checkpoints"),
                ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
  }
}

TEST(CheckpointSaver, KeepsTheNewestMaxToKeepCheckpoints) {
  PluginHarness h({"checkpoint_saver"});
  h.add("saver", "checkpoint_saver", {{"save_steps", "3"}, {"max_to_keep", "2"}});
  h.run();
  const fs::path dir = h.run_dir() / "checkpoints";
  EXPECT_THAT(saved_steps(dir), ElementsAre(9, 10));
  EXPECT_EQ(read_file(dir / "checkpoint"),
            "model_checkpoint_path: \"model.ckpt-10\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-9\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-10\"\n");
}

TEST(CheckpointSaver, MaxToKeepZeroKeepsAll) {
  PluginHarness h({"checkpoint_saver"});
  h.add("saver", "checkpoint_saver", {{"save_steps", "1"}, {"max_to_keep", "0"}});
  h.run();
  EXPECT_THAT(saved_steps(h.run_dir() / "checkpoints"),
              ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
}

TEST(CheckpointSaver, UsesTheConfiguredFolderAndBasename) {
  PluginHarness h({"checkpoint_saver"});
  const fs::path dir = h.root() / "elsewhere" / "ckpt";
  h.add("saver", "checkpoint_saver",
        {{"checkpoint_dir", dir.string()}, {"basename", "net"}, {"save_steps", "5"}});
  h.run();
  EXPECT_TRUE(fs::exists(dir / "net-0"));
  EXPECT_TRUE(fs::exists(dir / "net-5"));
  EXPECT_TRUE(fs::exists(dir / "net-10"));
  EXPECT_THAT(read_file(dir / "checkpoint"), HasSubstr("model_checkpoint_path: \"net-10\""));
  EXPECT_FALSE(fs::exists(h.run_dir() / "checkpoints"));
}

TEST(CheckpointSaver, CheckpointsHoldEveryHookStateAtTheTimeOfTheSave) {
  PluginHarness h({"checkpoint_saver"}, {"scripted"});
  const fs::path trace = h.root() / "trace.txt";
  // The recorder runs first, so its after_run has stored "after_runs=N" when the saver saves.
  h.add("recorder", "scripted", {{"trace", trace.string()}}, -1);
  h.add("saver", "checkpoint_saver", {{"save_steps", "3"}});
  h.run();
  const fs::path dir = h.run_dir() / "checkpoints";
  EXPECT_THAT(read_checkpoint(dir / "model.ckpt-0").hook_states, IsEmpty());
  const Checkpoint at3 = read_checkpoint(dir / "model.ckpt-3");
  EXPECT_EQ(at3.workload_state, "3");
  EXPECT_EQ(at3.hook_states.at("recorder"), (SavedHookState{"scripted", 1, "after_runs=3"}));
  const auto newest = restore_latest_checkpoint(dir);
  ASSERT_TRUE(newest.has_value());
  EXPECT_EQ(newest->file, dir / "model.ckpt-10");
  EXPECT_EQ(newest->checkpoint.workload_state, "10");
  EXPECT_EQ(newest->checkpoint.hook_states.at("recorder").bytes, "after_runs=10");
}

TEST(CheckpointSaver, ResumedJobGetsTheSavedHookStatesBack) {
  TempDir shared;
  const fs::path dir = shared / "ckpt";
  {
    PluginHarness h({"checkpoint_saver"}, {"scripted"});
    h.add("recorder", "scripted",
          {{"trace", (shared / "first.txt").string()}, {"stop_at_iteration", "3"}}, -1);
    h.add("saver", "checkpoint_saver", {{"checkpoint_dir", dir.string()}});
    EXPECT_EQ(h.run().outcome, Outcome::stopped);
  }
  const auto restored = restore_latest_checkpoint(dir);
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->checkpoint.global_step, 4);

  PluginHarness h({"checkpoint_saver"}, {"scripted"});
  h.session.restore_state(restored->checkpoint.workload_state);
  h.add("recorder", "scripted", {{"trace", (shared / "second.txt").string()}}, -1);
  h.add("saver", "checkpoint_saver", {{"checkpoint_dir", dir.string()}});
  h.runtime().restore_hook_states(restored->checkpoint.hook_states);
  h.run();
  const std::string second = read_file(shared / "second.txt");
  EXPECT_THAT(second, HasSubstr("recorder begin state=after_runs=4\n"));
  EXPECT_THAT(second, HasSubstr("recorder after_create_session gs=4 creation=1\n"));
  EXPECT_EQ(h.runtime().result().steps_run, 6);
}

TEST(CheckpointSaver, FinalSaveWhenAHookStopsTheJob) {
  PluginHarness h({"checkpoint_saver"}, {"scripted"});
  h.add("stopper", "scripted",
        {{"trace", (h.root() / "trace.txt").string()}, {"stop_at_iteration", "4"}});
  h.add("saver", "checkpoint_saver", {{"save_steps", "3"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.global_step, 5);
  const fs::path dir = h.run_dir() / "checkpoints";
  EXPECT_THAT(saved_steps(dir), ElementsAre(0, 3, 5));
  EXPECT_THAT(h.log(), HasSubstr("saved checkpoint " + (dir / "model.ckpt-5").string() +
                                 " (final save; job stopped: hook 'stopper'"));
}

TEST(CheckpointSaver, FinalSaveWhenTheJobFails) {
  PluginHarness h({"checkpoint_saver"});
  h.session.faults[6] = {StepStatus::error};
  h.add("saver", "checkpoint_saver", {{"save_steps", "4"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::failed);
  const fs::path dir = h.run_dir() / "checkpoints";
  EXPECT_THAT(saved_steps(dir), ElementsAre(0, 4, 6));
  EXPECT_EQ(read_checkpoint(dir / "model.ckpt-6").workload_state, "6");
  EXPECT_THAT(h.log(), HasSubstr("(final save; job failed: the workload failed at global step 6"));
}

TEST(CheckpointSaver, SavesAgainAfterASessionRecovery) {
  PluginHarness h({"checkpoint_saver"});
  h.session.faults[4] = {StepStatus::aborted};
  h.add("saver", "checkpoint_saver", {{"save_steps", "3"}});
  EXPECT_EQ(h.run().outcome, Outcome::completed);
  EXPECT_THAT(h.session.creations, ElementsAre(1, 2));
  // The recovered session is saved at step 4, and the timer counts from there.
  EXPECT_THAT(saved_steps(h.run_dir() / "checkpoints"), ElementsAre(0, 3, 4, 7, 10));
  EXPECT_THAT(h.log(), HasSubstr("model.ckpt-4 (after a session recovery)"));
}

TEST(CheckpointSaver, AFailedSaveFailsTheHookWithTheReason) {
  PluginHarness h({"checkpoint_saver"});
  const fs::path not_a_folder = h.root() / "file";
  write_file(not_a_folder, "x");
  h.add("saver", "checkpoint_saver", {{"checkpoint_dir", not_a_folder.string()}});
  EXPECT_EQ(h.run().outcome, Outcome::completed);  // the default policy disables the hook only
  EXPECT_THAT(h.log(), AllOf(HasSubstr("hook 'saver' (plugin 'checkpoint_saver'"),
                             HasSubstr("failed in after_create_session"),
                             HasSubstr("cannot save a checkpoint at global step 0"),
                             HasSubstr("cannot create checkpoint folder")));
  ASSERT_EQ(h.runtime().reports().size(), 1u);
  EXPECT_TRUE(h.runtime().reports()[0].disabled);
}

// ---- configuration errors ------------------------------------------------------------------

std::string saver_error(const std::multimap<std::string, std::string>& params) {
  PluginHarness h({"checkpoint_saver"});
  return h.config_error("saver", "checkpoint_saver", params);
}

TEST(CheckpointSaver, NegativeMaxToKeepIsAConfigError) {
  EXPECT_THAT(saver_error({{"max_to_keep", "-1"}}),
              AllOf(HasSubstr("hook 'saver' (plugin 'checkpoint_saver'"),
                    HasSubstr("invalid max_to_keep=-1")));
}

TEST(CheckpointSaver, NonPositiveFrequenciesAreConfigErrors) {
  EXPECT_THAT(saver_error({{"save_steps", "0"}}),
              AllOf(HasSubstr("hook 'saver'"), HasSubstr("invalid save_steps=0 (must be > 0)")));
  EXPECT_THAT(saver_error({{"save_steps", "-4"}}), HasSubstr("invalid save_steps=-4"));
  EXPECT_THAT(saver_error({{"save_secs", "0"}}),
              AllOf(HasSubstr("hook 'saver'"), HasSubstr("invalid save_secs=0 (must be > 0)")));
  EXPECT_THAT(saver_error({{"save_steps", "10"}, {"save_secs", "-1"}}),
              HasSubstr("invalid save_secs=-1"));
}

TEST(CheckpointSaver, BasenameMustBeAPlainFileName) {
  EXPECT_THAT(saver_error({{"basename", "sub/model"}}),
              AllOf(HasSubstr("hook 'saver'"), HasSubstr("invalid basename='sub/model'")));
  EXPECT_THAT(saver_error({{"basename", ".hidden"}}), HasSubstr("invalid basename='.hidden'"));
  EXPECT_THAT(saver_error({{"basename", ""}}), HasSubstr("invalid basename=''"));
  EXPECT_THAT(saver_error({{"basename", "a\"b"}}), HasSubstr("invalid basename='a\"b'"));
}

TEST(CheckpointSaver, ValidConfigurationsAreAccepted) {
  EXPECT_EQ(saver_error({}), "");
  EXPECT_EQ(saver_error({{"save_steps", "1"}, {"save_secs", "0.5"}, {"max_to_keep", "0"}}), "");
}

}  // namespace
}  // namespace hookhost::testing
