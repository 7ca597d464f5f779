// TensorFlow 1.x's own tests of its built-in hooks (basic_session_run_hooks_test.py) and of the
// hook call order (monitored_session_test.py), restated for hookhost's built-in plugins run
// through the real runtime with their default settings. Each case below is either a test in this
// file (TfSemantics.*) or an existing test that already checks exactly that behaviour; a case
// hookhost departs from on purpose is listed in docs/departures-from-tensorflow.md and its test
// checks the departure.
//
// Each TensorFlow case, then the test that checks it here ("->"), "(departure)" where hookhost
// departs on purpose, or why no test applies.
//
// SecondOrStepTimer (the SDK's StepTimer, the schedule of every built-in)
//   both or neither interval: cannot be written (every_steps and every_secs take one each)
//   every_steps -> TfSemantics.AStepTimerTriggersFirstThenOnceTheStepsHavePassed
//   every_secs -> TfSemantics.ASecondsTimerTriggersFirstThenOnceTheTimeHasPassed
//   update_last_triggered_step -> TfSemantics.ATimersUpdateReturnsTheStepsAndTimeSinceTheLastOne
// StopAtStepHook (stop_at_step)
//   both num_steps and last_step -> StopAtStep.BothNumStepsAndLastStepIsAConfigError
//   stop based on last_step -> TfSemantics.StopAtStepStopsAfterTheStepThatReachesLastStep,
//     TfSemantics.StopAtStepStopsWhenTheGlobalStepJumpsPastLastStep
//   stop based on num_steps -> TfSemantics.StopAtStepCountsNumStepsFromTheSessionsGlobalStep
//   num_steps with several steps at once ->
//     TfSemantics.StopAtStepStopsWhenTheGlobalStepJumpsPastNumSteps
//   resumed at or past the limit (departure) -> StopAtStep.ALimitAlreadyReachedStopsBeforeAnyStep
//   limit kept over a recovery or resume -> StopAtStep.NumStepsIsNotRecountedAfterARecovery,
//     StopAtStep.KeepsTheComputedLimitInItsSavedState
//   a new session with num_steps counts again from the restored step (monitored_session_test;
//     departure: once per job) -> StopAtStep.RestoredLimitWinsOverNumSteps
// LoggingTensorHook (logging_tensor)
//   illegal arguments -> LoggingTensor.NonPositiveEveryNIterIsInvalid,
//     LoggingTensor.BothFrequenciesAreAConfigErrorNamingBothKeys,
//     LoggingTensor.NeitherFrequencyNorAtEndIsAConfigErrorNamingTheKeys
//   every_n_iter, local iterations; no elapsed time in the first log ->
//     LoggingTensor.LogsOnEveryNthLocalIterationStartingWithTheFirst
//   at_end only (departure: the last step's values) ->
//     LoggingTensor.AtEndAloneLogsTheLastValuesOnceWithTheOutcome
//   every_n_iter and at_end -> LoggingTensor.AtEndWithAFrequencyAddsTheEndLineAndItsElapsedTime
//   every_n_secs -> LoggingTensor.EverySecsLogsTheFirstIterationAndAgainOnceTheIntervalPassed
//   formatter -> LoggingTensor.FormatReplacesPlaceholdersWithValues
// CheckpointSaverHook (checkpoint_saver) and the Saver
//   both save_secs and save_steps (departure: accepted) ->
//     CheckpointSaver.WithStepsAndSecondsWhicheverComesFirstSaves
//   neither (departure: every 600 s) -> CheckpointSaver.SavesEvery600SecondsByDefault
//   saver and scaffold arguments: none (the runtime writes the checkpoint)
//   checkpoint before the first step; save_steps saves periodically ->
//     TfSemantics.CheckpointSaverSavesAtStepZeroThenEverySaveSteps
//   save_secs saves at the end -> TfSemantics.CheckpointSaverOnSecondsSavesAtStepZeroAndAtTheEnd
//   save_secs saves periodically -> CheckpointSaver.WithStepsAndSecondsWhicheverComesFirstSaves
//   save_steps=1 over two steps: three saves, none more in end ->
//     TfSemantics.CheckpointSaverSavesEachStepOnceAndNotAgainAtTheEnd
//   listeners (departure: none; a hook reads the newest checkpoint) ->
//     CheckpointLastWritten.ASaveInFlightIsNotWaitedForAndNotNamedYet
//   graph and SessionLog in an events file (departure) ->
//     TfSemantics.CheckpointSaverWritesNoEventsFile
//   saves again after a recovery ->
//     CheckpointSaver.ARecoveryPutsEveryHookBackToTheRestoredCheckpoint
//   max_to_keep=5 -> TfSemantics.TheJobKeepsTheNewestFiveCheckpointsByDefault
//   steps_per_run > 1: none (a private option of TensorFlow's TPU estimator)
// StepCounterHook (step_counter)
//   every_n_steps: the first trigger is the baseline ->
//     StepCounter.FirstTriggerOnlySetsTheBaselineThenLogsEveryNSteps,
//     StepCounter.SummariesWritesTheLoggedRateAtTheLiveStepIntoTheRunDirectory
//   every_n_secs -> StepCounter.EveryNSecsLogsEachStepOnceTheIntervalHasPassed
//   summaries into output_dir -> StepCounter.OutputDirWritesTheSummaryThere
//   tag named after the global step variable (departure: always global_step/sec): none
//   warns when the global step does not increase ->
//     StepCounter.WarnsAtMostFiveTimesWhenTheGlobalStepDoesNotIncrease
//   both every_n_steps and every_n_secs -> StepCounterConfig.BothEveryNStepsAndEveryNSecsIsAnError
// SummarySaverHook (summary_saver)
//   save_steps: the first step, then every N ->
//     SummarySaver.WritesAtTheFirstStepAndThenEveryNGlobalSteps
//   several summaries -> SummarySaver.WritesEveryTensorTaggedWithItsNameAndNonScalarsAsTheirMean
//   save_secs -> SummarySaver.SaveSecsWritesEveryStepOnceTheIntervalHasPassed,
//     SummarySaver.SaveSecsWritesOnlyTheFirstStepBeforeTheIntervalPasses
//   SessionLog START -> SummarySaver.FileStartsWithTheVersionThenASessionStartAtTheFirstStep
//   both or neither frequency -> SummarySaverConfig.BothSaveStepsAndSaveSecsIsAnError,
//     SummarySaverConfig.NeitherSaveStepsNorSaveSecsIsAnError
// GlobalStepWaiterHook (global_step_waiter)
//   no wait for step 0 -> GlobalStepWaiter.ZeroOrNegativeTargetNeverWaits
//   waits until the step is reached -> GlobalStepWaiter.StartsAtOnceWhenTheStepIsAlreadyReached,
//     GlobalStepWaiter.TimeoutFailsTheHookNamingTheStepReached (another process moving the
//     step during the wait needs a distributed job)
// NanTensorHook (nan_tensor)
//   fail_on_nan_loss=true ends the job -> NanTensor.NanLossFailsTheJobWithTheStep (on_error =
//     fail); NanTensor.UnderTheDefaultPolicyAFailureOnlyDisablesTheHook (departure)
//   fail_on_nan_loss=false requests a stop -> NanTensor.WithoutFailOnNanLossItWarnsAndStopsCleanly
// FinalOpsHook, FeedFnHook, ProfilerHook: not built-ins (departure)
// MonitoredSession's call order
//   begin, after_create_session, before_run, after_run, end, each in hook order; end at the end
//     of the data -> LifecycleTrace.InstancesSharingTheDefaultFileInterleaveInCallOrder,
//     RuntimeTest.CallsEveryHookInLifecycleOrder
//   a stop asked in after_run ends the loop after the step ->
//     RuntimeTest.StopRequestedInAfterRunTakesEffectAfterTheStep
//   a stop asked in before_run still runs the step ->
//     RuntimeTest.StopRequestedInBeforeRunStillRunsTheStep
//   run() after should_stop is an error -> RuntimeTest.RunBeforeStartAndAfterStopIsAnError
//   the loop raises: no after_run, no end (departure: end comes, outcome failed) ->
//     LifecycleTrace.EndReportsAFailedJobAndTheFailedStepHasNoAfterRun
//   a recovery: after_create_session again, neither begin nor end ->
//     TfSemantics.ARecoveryCallsAfterCreateSessionAgainButNotBeginOrEnd
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <hookhost/sdk/timer.hpp>
#include <string>
#include <thread>
#include <vector>

#include "event_file_reader.hpp"
#include "job/resume.hpp"
#include "plugin_harness.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// ---- SecondOrStepTimer: the SDK's StepTimer, which every built-in's schedule uses --------------

TEST(TfSemantics, AStepTimerTriggersFirstThenOnceTheStepsHavePassed) {
  StepTimer timer = StepTimer::every_steps(3);
  EXPECT_TRUE(timer.should_trigger(1));
  timer.update(1);
  EXPECT_FALSE(timer.should_trigger(1));
  EXPECT_FALSE(timer.should_trigger(2));
  EXPECT_FALSE(timer.should_trigger(3));
  EXPECT_TRUE(timer.should_trigger(4));
}

TEST(TfSemantics, ASecondsTimerTriggersFirstThenOnceTheTimeHasPassed) {
  StepTimer hourly = StepTimer::every_secs(3600);
  EXPECT_TRUE(hourly.should_trigger(1));
  hourly.update(1);
  EXPECT_FALSE(hourly.should_trigger(1));
  EXPECT_FALSE(hourly.should_trigger(2));

  StepTimer fast = StepTimer::every_secs(0.001);
  fast.update(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_FALSE(fast.should_trigger(1));  // never twice for the same step
  EXPECT_TRUE(fast.should_trigger(2));
}

TEST(TfSemantics, ATimersUpdateReturnsTheStepsAndTimeSinceTheLastOne) {
  StepTimer timer = StepTimer::every_steps(1);
  EXPECT_FALSE(timer.update(1).has_value());
  const auto first = timer.update(5);
  ASSERT_TRUE(first.has_value());
  EXPECT_GE(first->first, 0.0);
  EXPECT_EQ(first->second, 4);
  const auto second = timer.update(7);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->second, 2);
}

// ---- StopAtStepHook ----------------------------------------------------------------------------
// TensorFlow's tests move the global step between runs; here the workload is moved between steps
// (ScriptedWorkload::set_global_step), and each step adds one to it.

// A workload at `global_step` whose data does not end before the steps these tests run.
void endless_from(PluginHarness& h, int64_t global_step) {
  h.workload.script().end_of_data_step = detail::Script::kEndless;
  h.workload.set_global_step(global_step);
}

TEST(TfSemantics, StopAtStepStopsAfterTheStepThatReachesLastStep) {
  PluginHarness h({"stop_at_step"});
  endless_from(h, 5);
  h.add("stopper", "stop_at_step", {{"last_step", "10"}});
  Runtime& rt = h.runtime();
  ASSERT_TRUE(rt.start());
  rt.run();  // 5 -> 6
  EXPECT_FALSE(rt.should_stop());
  h.workload.set_global_step(8);
  rt.run();  // 8 -> 9
  EXPECT_FALSE(rt.should_stop());
  rt.run();  // 9 -> 10
  EXPECT_TRUE(rt.should_stop());
  const JobResult result = rt.close();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.stop_cause, HH_STOP_CAUSE_HOOK);
  EXPECT_EQ(result.global_step, 10);
  EXPECT_THAT(result.reason, HasSubstr("last_step=10, global step 10"));
}

TEST(TfSemantics, StopAtStepStopsWhenTheGlobalStepJumpsPastLastStep) {
  PluginHarness h({"stop_at_step"});
  endless_from(h, 5);
  h.add("stopper", "stop_at_step", {{"last_step", "10"}});
  Runtime& rt = h.runtime();
  ASSERT_TRUE(rt.start());
  rt.run();  // 5 -> 6
  EXPECT_FALSE(rt.should_stop());
  h.workload.set_global_step(11);
  rt.run();  // 11 -> 12: past the limit, not at it
  EXPECT_TRUE(rt.should_stop());
  const JobResult result = rt.close();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.steps_run, 2);
  EXPECT_THAT(result.reason, HasSubstr("last_step=10, global step 12"));
}

TEST(TfSemantics, StopAtStepCountsNumStepsFromTheSessionsGlobalStep) {
  PluginHarness h({"stop_at_step"});
  endless_from(h, 5);
  h.add("stopper", "stop_at_step", {{"num_steps", "10"}});
  Runtime& rt = h.runtime();
  ASSERT_TRUE(rt.start());  // the limit is 5 + 10
  rt.run();                 // 5 -> 6
  EXPECT_FALSE(rt.should_stop());
  h.workload.set_global_step(13);
  rt.run();  // 13 -> 14
  EXPECT_FALSE(rt.should_stop());
  rt.run();  // 14 -> 15
  EXPECT_TRUE(rt.should_stop());
  const JobResult result = rt.close();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.global_step, 15);
  EXPECT_THAT(h.log(), HasSubstr("will stop at global step 15 (num_steps=10 from global step 5)"));
}

TEST(TfSemantics, StopAtStepStopsWhenTheGlobalStepJumpsPastNumSteps) {
  PluginHarness h({"stop_at_step"});
  endless_from(h, 5);
  h.add("stopper", "stop_at_step", {{"num_steps", "10"}});
  Runtime& rt = h.runtime();
  ASSERT_TRUE(rt.start());
  rt.run();  // 5 -> 6
  EXPECT_FALSE(rt.should_stop());
  h.workload.set_global_step(15);
  rt.run();  // 15 -> 16
  EXPECT_TRUE(rt.should_stop());
  EXPECT_EQ(rt.close().global_step, 16);
}

// ---- CheckpointSaverHook -----------------------------------------------------------------------

// The step of the newest checkpoint on disk once every requested one is written (-1: none).
int64_t newest_checkpoint(Runtime& rt) {
  rt.wait_for_checkpoints();
  const auto last = rt.last_checkpoint();
  return last ? last->global_step : -1;
}

// TensorFlow saves in after_create_session, so save_steps=2 saves at 0, 2, 4, and at the end the
// step not saved yet.
TEST(TfSemantics, CheckpointSaverSavesAtStepZeroThenEverySaveSteps) {
  PluginHarness h({"checkpoint_saver"});
  endless_from(h, 0);
  h.add("saver", "checkpoint_saver", {{"save_steps", "2"}});
  Runtime& rt = h.runtime();
  ASSERT_TRUE(rt.start());
  EXPECT_EQ(newest_checkpoint(rt), 0);  // before the first step
  std::vector<int64_t> newest_after_each_step;
  for (int i = 0; i < 5; ++i) {
    rt.run();
    newest_after_each_step.push_back(newest_checkpoint(rt));
  }
  EXPECT_THAT(newest_after_each_step, ElementsAre(0, 2, 2, 4, 4));
  EXPECT_EQ(rt.close().global_step, 5);
  h.finish();
  EXPECT_THAT(saved_steps(h.run_dir() / "checkpoints"), ElementsAre(0, 2, 4, 5));
}

TEST(TfSemantics, CheckpointSaverOnSecondsSavesAtStepZeroAndAtTheEnd) {
  PluginHarness h({"checkpoint_saver"});
  h.workload.script().end_of_data_step = 3;  // two steps, far quicker than the interval
  h.add("saver", "checkpoint_saver", {{"save_secs", "60"}});
  EXPECT_EQ(h.run().outcome, Outcome::completed);
  EXPECT_THAT(saved_steps(h.run_dir() / "checkpoints"), ElementsAre(0, 2));
  ASSERT_TRUE(h.runtime().last_checkpoint().has_value());
  EXPECT_EQ(h.runtime().last_checkpoint()->global_step, 2);
}

// Two steps with save_steps=1: TensorFlow's listener sees three saves (0, 1, 2) and no fourth in
// end, the last step being saved already.
TEST(TfSemantics, CheckpointSaverSavesEachStepOnceAndNotAgainAtTheEnd) {
  PluginHarness h({"checkpoint_saver"});
  h.workload.script().end_of_data_step = 3;
  h.add("saver", "checkpoint_saver", {{"save_steps", "1"}});
  EXPECT_EQ(h.run().global_step, 2);
  EXPECT_THAT(saved_steps(h.run_dir() / "checkpoints"), ElementsAre(0, 1, 2));
  EXPECT_EQ(count_occurrences(h.log(), "wrote checkpoint"), 3);
}

// TensorFlow's Saver keeps max_to_keep=5; [run] keep_checkpoints is 5 unless set.
TEST(TfSemantics, TheJobKeepsTheNewestFiveCheckpointsByDefault) {
  PluginHarness h({"checkpoint_saver"});
  EXPECT_EQ(h.options.keep_checkpoints, 5u);
  h.add("saver", "checkpoint_saver", {{"save_steps", "1"}});
  h.run();
  EXPECT_THAT(saved_steps(h.run_dir() / "checkpoints"), ElementsAre(6, 7, 8, 9, 10));
}

// Departure: TensorFlow's hook adds the graph and a SessionLog CHECKPOINT event to an events file
// in the checkpoint folder; hookhost has no graph, and its log and run record name each checkpoint.
TEST(TfSemantics, CheckpointSaverWritesNoEventsFile) {
  PluginHarness h({"checkpoint_saver"});
  h.add("saver", "checkpoint_saver", {{"save_steps", "5"}});
  h.run();
  h.finish();
  EXPECT_THAT(saved_steps(h.run_dir() / "checkpoints"), ElementsAre(0, 5, 10));
  EXPECT_THAT(event_files(h.run_dir()), IsEmpty());
  EXPECT_THAT(event_files(h.run_dir() / "checkpoints"), IsEmpty());
}

// ---- MonitoredSession: the call order around a session recovery --------------------------------

// An aborted step recreates the session from the newest checkpoint: every hook gets
// after_create_session again with the restored step, then the step is run again; begin is not
// called again and end is not called for the lost session.
TEST(TfSemantics, ARecoveryCallsAfterCreateSessionAgainButNotBeginOrEnd) {
  PluginHarness h({"lifecycle_trace", "checkpoint_saver"});
  h.workload.script().end_of_data_step = 4;
  h.workload.script().faults[3].push_back({StepStatus::aborted, "injected preemption"});
  // The program's recovery: the new session and every hook go back to the newest checkpoint.
  h.options.on_recover = [&h](Runtime& rt) {
    recover_from_newest(h.run_dir() / "checkpoints", h.options.logger, nullptr, 0)(rt);
  };
  h.add("trace", "lifecycle_trace");
  h.add("saver", "checkpoint_saver", {{"save_steps", "1"}});
  const JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::completed);
  EXPECT_EQ(result.global_step, 3);
  h.finish();
  EXPECT_THAT(
      lines_of(h.run_dir() / "trace.jsonl"),
      ElementsAre(
          R"({"instance":"trace","callback":"begin","global_step":null})",
          R"({"instance":"trace","callback":"after_create_session","global_step":0})",
          R"({"instance":"trace","callback":"before_run","global_step":0})",
          R"({"instance":"trace","callback":"after_run","global_step":0,"fetched":{}})",
          R"({"instance":"trace","callback":"before_run","global_step":1})",
          R"({"instance":"trace","callback":"after_run","global_step":1,"fetched":{}})",
          // The aborted attempt: no after_run, then the session restored at step 2.
          R"({"instance":"trace","callback":"before_run","global_step":2})",
          R"({"instance":"trace","callback":"after_create_session","global_step":2})",
          R"({"instance":"trace","callback":"before_run","global_step":2})",
          R"({"instance":"trace","callback":"after_run","global_step":2,"fetched":{}})",
          R"({"instance":"trace","callback":"before_run","global_step":3})",
          R"({"instance":"trace","callback":"end","global_step":3,"outcome":"completed","reason":"end of data: the script has no data for step 4"})"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
