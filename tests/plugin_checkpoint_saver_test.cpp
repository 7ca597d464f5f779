// The checkpoint_saver plugin driven through the runtime: when it asks for checkpoints, and what
// the runtime writes for it at the step boundary: what a checkpoint holds whatever the hook order,
// where it goes, retention, no checkpoint from a failed job, resume and recovery.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>
#include "plugins/trust.hpp"
#include "storage/checkpoint.hpp"

#include "plugin_harness.hpp"
#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// The runtime's log line for a checkpoint the saver asked for, up to the end of `reason`.
std::string wrote(const fs::path& file, const std::string& reason) {
  return "wrote checkpoint " + file.string() + " (requested by hook 'saver': checkpoint_saver at " +
         reason;
}

TEST(CheckpointSaver, SavesAtSessionCreationEveryNStepsAndAtTheEnd) {
  PluginHarness h({"checkpoint_saver"});
  h.add("saver", "checkpoint_saver", {{"save_steps", "3"}});
  EXPECT_EQ(h.run().outcome, Outcome::completed);
  const fs::path dir = h.run_dir() / "checkpoints";
  EXPECT_THAT(saved_steps(dir), ElementsAre(0, 3, 6, 9, 10));
  // Each file holds the workload as it was at that step (the scripted workload saves its step).
  for (int64_t step : {0, 3, 6, 9, 10}) {
    const Checkpoint c = read_checkpoint(dir / ("model.ckpt-" + std::to_string(step)));
    EXPECT_EQ(c.global_step, step);
    EXPECT_EQ(c.workload_state, std::to_string(step));
  }
  EXPECT_THAT(h.log(), HasSubstr(wrote(dir / "model.ckpt-3", "global step 3")));
  EXPECT_THAT(h.log(), HasSubstr(wrote(dir / "model.ckpt-10",
                                       "global step 10 (final save; job "
                                       "completed: end of data")));
  EXPECT_EQ(read_file(dir / "checkpoint"),
            "model_checkpoint_path: \"model.ckpt-10\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-0\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-3\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-6\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-9\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-10\"\n");
  ASSERT_TRUE(h.runtime().last_checkpoint().has_value());
  EXPECT_EQ(h.runtime().last_checkpoint()->file, dir / "model.ckpt-10");
  // On save_steps alone it asks, after each save, to be called at the step that makes the next
  // one due (hh.steps/1 skip_until): after_run at global steps 2, 5 and 8 of 10 only.
  EXPECT_EQ(h.runtime().reports().at(0).callbacks.at("after_run").calls, 3u);
}

// The program's defaults are TensorFlow's: every checkpoint CheckpointSaverHook(save_steps=2) asks
// for is written (0, 2, 4), and keep_checkpoints = 3 keeps the newest three (6, 7, 8), however
// fast the disk is. checkpoint_wait = false may skip some, which the log then says.
TEST(CheckpointSaverProgram, TheDefaultsWriteEveryRequestedCheckpointAsTensorFlowDoes) {
  TempDir dir;
  auto run = [&](const std::string& run_keys, const std::string& hook_keys, int epochs) {
    write_file(dir / "job.ini",
               "[run]\nrun_dir = run\n" + run_keys +
                   "\n[workload]\nname = linreg\nepochs = " + std::to_string(epochs) +
                   "\n\n[hook.saver]\nplugin = checkpoint_saver\n" + hook_keys + "\n");
    ProcessResult r =
        run_hookhost({"run", "--config", (dir / "job.ini").string(), "--fresh"}, dir.path());
    r.out += r.err;
    return r;
  };
  ProcessResult r = run("", "save_steps = 2", 1);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(saved_steps(dir / "run" / "checkpoints"), ElementsAre(0, 2, 4)) << r.out;
  EXPECT_THAT(r.out, HasSubstr("checkpoint_wait = true"));
  EXPECT_THAT(r.out, Not(HasSubstr("was not written")));
  r = run("keep_checkpoints = 3", "save_steps = 1", 2);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(saved_steps(dir / "run" / "checkpoints"), ElementsAre(6, 7, 8)) << r.out;
  EXPECT_THAT(r.out, Not(HasSubstr("skipped")));
}

TEST(CheckpointSaver, DoesNotSaveTwiceWhenTheLastStepWasAlreadySaved) {
  PluginHarness h({"checkpoint_saver"});
  h.add("saver", "checkpoint_saver", {{"save_steps", "5"}});
  h.run();
  EXPECT_THAT(saved_steps(h.run_dir() / "checkpoints"), ElementsAre(0, 5, 10));
  EXPECT_EQ(count_occurrences(h.log(), "wrote checkpoint"), 3);
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
    h.options.keep_checkpoints = 0;
    h.add("saver", "checkpoint_saver", {{"save_steps", "1000"}, {"save_secs", "0.000000001"}});
    h.run();
    EXPECT_THAT(saved_steps(h.run_dir() / "checkpoints"),
                ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
  }
}

TEST(CheckpointSaver, TheJobKeepsTheNewestKeepCheckpoints) {
  PluginHarness h({"checkpoint_saver"});
  h.options.keep_checkpoints = 2;
  h.add("saver", "checkpoint_saver", {{"save_steps", "3"}});
  h.run();
  const fs::path dir = h.run_dir() / "checkpoints";
  EXPECT_THAT(saved_steps(dir), ElementsAre(9, 10));
  EXPECT_EQ(read_file(dir / "checkpoint"),
            "model_checkpoint_path: \"model.ckpt-10\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-9\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-10\"\n");
}

TEST(CheckpointSaver, KeepZeroKeepsAll) {
  PluginHarness h({"checkpoint_saver"});
  h.options.keep_checkpoints = 0;
  h.add("saver", "checkpoint_saver", {{"save_steps", "1"}});
  h.run();
  EXPECT_THAT(saved_steps(h.run_dir() / "checkpoints"),
              ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
}

TEST(CheckpointSaver, TheJobsFolderIsUsedARelativeOneFromTheRunDirectory) {
  {
    PluginHarness h({"checkpoint_saver"});
    h.options.checkpoint_dir = "ckpt/net";
    h.add("saver", "checkpoint_saver", {{"save_steps", "5"}});
    h.run();
    EXPECT_THAT(saved_steps(h.run_dir() / "ckpt" / "net"), ElementsAre(0, 5, 10));
    EXPECT_FALSE(fs::exists(h.run_dir() / "checkpoints"));
  }
  {
    PluginHarness h({"checkpoint_saver"});
    const fs::path elsewhere = h.root() / "elsewhere";
    h.options.checkpoint_dir = elsewhere;
    h.add("saver", "checkpoint_saver", {{"save_steps", "5"}});
    h.run();
    EXPECT_THAT(saved_steps(elsewhere), ElementsAre(0, 5, 10));
    EXPECT_THAT(read_file(elsewhere / "checkpoint"),
                HasSubstr("model_checkpoint_path: \"model.ckpt-10\""));
  }
}

TEST(CheckpointSaver, CheckpointsHoldEveryHookStateOfTheSameStepWhateverTheOrder) {
  // One recorder runs before the saver, one after it: at the boundary both have counted the step.
  PluginHarness h({"checkpoint_saver"}, {"scripted"});
  const fs::path trace = h.root() / "trace.txt";
  h.add("before", "scripted", {{"trace", trace.string()}}, -1);
  h.add("saver", "checkpoint_saver", {{"save_steps", "3"}}, 0);
  h.add("after", "scripted", {{"trace", trace.string()}}, 1);
  h.run();
  const fs::path dir = h.run_dir() / "checkpoints";
  EXPECT_THAT(read_checkpoint(dir / "model.ckpt-0").hook_states, IsEmpty());
  const Checkpoint at3 = read_checkpoint(dir / "model.ckpt-3");
  EXPECT_EQ(at3.workload_state, "3");
  // Each tagged with the build that saved it: the SHA-256 of the plugin file's bytes.
  const std::string build = sha256_of_file(h.plugin_dir() / "scripted.so");
  EXPECT_EQ(at3.hook_states.at("before"), (SavedHookState{"scripted", 1, "after_runs=3", build}));
  EXPECT_EQ(at3.hook_states.at("after"), (SavedHookState{"scripted", 1, "after_runs=3", build}));
  const auto newest = restore_latest_checkpoint(dir);
  ASSERT_TRUE(newest.has_value());
  EXPECT_EQ(newest->file, dir / "model.ckpt-10");
  EXPECT_EQ(newest->checkpoint.workload_state, "10");
  EXPECT_EQ(newest->checkpoint.hook_states.at("after").bytes, "after_runs=10");
}

TEST(CheckpointSaver, ResumedHooksHaveTheirStateBeforeCreateAndTheStepBeforeBegin) {
  TempDir shared;
  const fs::path dir = shared / "ckpt";
  {
    PluginHarness h({"checkpoint_saver"}, {"scripted"});
    h.options.checkpoint_dir = dir;
    h.add("recorder", "scripted",
          {{"trace", (shared / "first.txt").string()}, {"stop_at_iteration", "3"}}, 1);
    h.add("saver", "checkpoint_saver");
    EXPECT_EQ(h.run().outcome, Outcome::stopped);
  }
  const auto restored = restore_latest_checkpoint(dir);
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->checkpoint.global_step, 4);

  // The order a program resumes in: workload state and hook states first, then the hooks.
  PluginHarness h({"checkpoint_saver"}, {"scripted"});
  h.options.checkpoint_dir = dir;
  h.workload.restore_state(restored->checkpoint.workload_state);
  h.runtime().restore_hook_states(restored->checkpoint.hook_states);
  h.add("recorder", "scripted",
        {{"trace", (shared / "second.txt").string()}, {"trace_create", "true"}}, 1);
  h.add("saver", "checkpoint_saver");
  h.run();
  const std::string second = read_file(shared / "second.txt");
  EXPECT_THAT(second, HasSubstr("recorder create state=after_runs=4\n"));
  EXPECT_THAT(second, HasSubstr("recorder begin state=after_runs=4 live=4\n"));
  EXPECT_THAT(second, HasSubstr("recorder after_create_session gs=4 creation=1\n"));
  EXPECT_EQ(h.runtime().result().steps_run, 6);
  // The recorder counted on from its restored state, not from 0.
  EXPECT_EQ(h.runtime().saved_hook_states().at("recorder").bytes, "after_runs=10");
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
  EXPECT_THAT(h.log(), HasSubstr(wrote(dir / "model.ckpt-5",
                                       "global step 5 (final save; job stopped: hook 'stopper'")));
}

TEST(CheckpointSaver, AFailedJobWritesNoCheckpoint) {
  PluginHarness h({"checkpoint_saver"});
  h.workload.script().faults[7] = {{StepStatus::error, "injected fault"}};  // at global step 6
  h.add("saver", "checkpoint_saver", {{"save_steps", "4"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::failed);
  const fs::path dir = h.run_dir() / "checkpoints";
  EXPECT_THAT(saved_steps(dir), ElementsAre(0, 4));
  EXPECT_THAT(h.log(), AllOf(HasSubstr("not writing the checkpoint requested by hook 'saver': "
                                       "checkpoint_saver at global step 6 (final save; job failed"),
                             HasSubstr("(the newest is " + (dir / "model.ckpt-4").string() + ")")));
}

TEST(CheckpointSaver, AHookFailingTheJobInTheSameStepCancelsThatStepsCheckpoint) {
  // The saver (first) asks at step 3; a later hook fails the job in the same after_run phase.
  PluginHarness h({"checkpoint_saver"}, {"scripted"});
  h.add("saver", "checkpoint_saver", {{"save_steps", "3"}}, -1);
  h.add("guard", "scripted",
        {{"trace", (h.root() / "trace.txt").string()},
         {"fail_in", "after_run"},
         {"fail_at_iteration", "2"}},
        0, FailurePolicy::fail);
  EXPECT_EQ(h.run().outcome, Outcome::failed);
  EXPECT_THAT(saved_steps(h.run_dir() / "checkpoints"), ElementsAre(0));
}

TEST(CheckpointSaver, ARecoveryPutsEveryHookBackToTheRestoredCheckpoint) {
  PluginHarness h({"checkpoint_saver"}, {"scripted"});
  const fs::path dir = h.run_dir() / "checkpoints";
  h.workload.script().faults[6] = {{StepStatus::aborted, "injected fault"}};  // at global step 5
  // The program's recovery: the session and every hook state go back to the newest checkpoint.
  h.options.on_recover = [dir](Runtime& rt) {
    const auto restored = restore_latest_checkpoint(dir);
    ASSERT_TRUE(restored && !restored->file.empty());
    rt.session().restore_state(restored->checkpoint.workload_state);
    rt.restore_hook_states(restored->checkpoint.hook_states);
  };
  const fs::path trace = h.root() / "trace.txt";
  h.add("recorder", "scripted", {{"trace", trace.string()}}, 1);
  h.add("saver", "checkpoint_saver", {{"save_steps", "3"}});
  EXPECT_EQ(h.run().outcome, Outcome::completed);
  EXPECT_THAT(h.workload.creations(), ElementsAre(1, 2));
  // Steps 4 and 5 ran twice, but the recorder counted each once: back to 3 at the recovery.
  EXPECT_THAT(read_file(trace), HasSubstr("after_create_session gs=3 creation=2 after_runs=3\n"));
  EXPECT_EQ(h.runtime().saved_hook_states().at("recorder").bytes, "after_runs=10");
  // The recovered session is saved at step 3 again, and the timer counts from there.
  EXPECT_THAT(saved_steps(dir), ElementsAre(0, 3, 6, 9, 10));
  EXPECT_THAT(h.log(), HasSubstr("global step 3 (after a session recovery)"));
  // Its after_runs: global step 2 (saving 3) in the first session; the new session's save at 3
  // asks for 5 (saving 6), which asks for 8 (saving 9).
  for (const HookReport& report : h.runtime().reports()) {
    if (report.instance_name == "saver") {
      EXPECT_EQ(report.callbacks.at("after_run").calls, 3u);
    }
  }
}

TEST(CheckpointSaver, AWriteThatFailsIsLoggedAndTheJobGoesOn) {
  PluginHarness h({"checkpoint_saver"});
  const fs::path not_a_folder = h.root() / "file";
  write_file(not_a_folder, "x");
  h.options.checkpoint_dir = not_a_folder;
  h.add("saver", "checkpoint_saver");
  EXPECT_EQ(h.run().outcome, Outcome::completed);
  EXPECT_THAT(h.log(), AllOf(HasSubstr("could not write the checkpoint at global step 0 requested "
                                       "by hook 'saver'"),
                             HasSubstr("cannot create checkpoint folder")));
  EXPECT_FALSE(h.runtime().last_checkpoint().has_value());
}

// ---- configuration errors ------------------------------------------------------------------

std::string saver_error(const std::multimap<std::string, std::string>& params) {
  PluginHarness h({"checkpoint_saver"});
  return h.config_error("saver", "checkpoint_saver", params);
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

TEST(CheckpointSaver, WhereCheckpointsGoIsNotAHookParameter) {
  EXPECT_THAT(saver_error({{"checkpoint_dir", "x"}}),
              HasSubstr("unknown parameter 'checkpoint_dir'"));
  EXPECT_THAT(saver_error({{"max_to_keep", "3"}}), HasSubstr("unknown parameter 'max_to_keep'"));
}

TEST(CheckpointSaver, ValidConfigurationsAreAccepted) {
  EXPECT_EQ(saver_error({}), "");
  EXPECT_EQ(saver_error({{"save_steps", "1"}, {"save_secs", "0.5"}}), "");
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
