// The stop_at_step plugin driven through the runtime: where it stops, how num_steps is counted and
// kept across recoveries and resumes, the published limit, and its configuration errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hookhost/ext/steps.h>
#include <string>
#include <vector>

#include "plugin_harness.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(StopAtStep, StopsAfterTheStepThatReachesLastStep) {
  PluginHarness h({"stop_at_step"});
  h.workload.script().end_of_data_step = 101;
  h.add("stopper", "stop_at_step", {{"last_step", "4"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.stop_cause, HH_STOP_CAUSE_HOOK);
  EXPECT_EQ(result.global_step, 4);
  EXPECT_EQ(result.steps_run, 4);
  EXPECT_THAT(result.reason, HasSubstr("reached the step limit (last_step=4, global step 4)"));
}

TEST(StopAtStep, NumStepsCountsFromTheStepAtSessionCreation) {
  PluginHarness h({"stop_at_step"});
  h.workload.set_global_step(20);
  h.workload.script().end_of_data_step = 101;
  h.add("stopper", "stop_at_step", {{"num_steps", "5"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.global_step, 25);
  EXPECT_EQ(result.steps_run, 5);
  EXPECT_THAT(h.log(), HasSubstr("[stopper] [info] will stop at global step 25 (num_steps=5 from "
                                 "global step 20)"));
}

TEST(StopAtStep, ALimitBeyondTheDataLetsTheJobComplete) {
  PluginHarness h({"stop_at_step"});
  h.add("stopper", "stop_at_step", {{"num_steps", "50"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::completed);
  EXPECT_EQ(result.global_step, 10);
}

TEST(StopAtStep, ALimitAlreadyReachedStopsBeforeAnyStep) {
  PluginHarness h({"stop_at_step"});
  h.workload.set_global_step(10);
  h.workload.script().end_of_data_step = 101;
  h.add("stopper", "stop_at_step", {{"last_step", "7"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.steps_run, 0);
  EXPECT_EQ(result.global_step, 10);
  EXPECT_THAT(result.reason, HasSubstr("reached the step limit (last_step=7, global step 10)"));
}

TEST(StopAtStep, NumStepsIsNotRecountedAfterARecovery) {
  PluginHarness h({"stop_at_step"});
  h.workload.script().end_of_data_step = 101;
  // Step 4 is aborted once; the new session comes back at step 3.
  h.workload.script().faults[4] = {{StepStatus::aborted, "injected fault"}};
  h.add("stopper", "stop_at_step", {{"num_steps", "5"}});
  JobResult result = h.run();
  EXPECT_THAT(h.workload.creations(), ElementsAre(1, 2));
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.global_step, 5);  // counted again, it would be 3 + 5 = 8
}

TEST(StopAtStep, NumStepsIsNotRecountedAfterARecoveryThatRollsBack) {
  PluginHarness h({"stop_at_step"});
  h.workload.script().end_of_data_step = 101;
  h.workload.script().faults[7] = {{StepStatus::aborted, "injected fault"}};  // at global step 6
  // As if restored from step 2.
  h.options.on_recover = [&](Runtime&) { h.workload.set_global_step(2); };
  h.add("stopper", "stop_at_step", {{"num_steps", "8"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.global_step, 8);  // counted again, it would be 2 + 8 = 10
  EXPECT_EQ(result.steps_run, 12);   // 6 steps, then 6 more from step 2
}

TEST(StopAtStep, KeepsTheComputedLimitInItsSavedState) {
  PluginHarness h({"stop_at_step"});
  h.workload.set_global_step(3);
  h.add("stopper", "stop_at_step", {{"num_steps", "4"}});
  h.run();
  EXPECT_EQ(h.runtime().hook_states().at("stopper"), "last_step=7\n");
}

TEST(StopAtStep, RestoredLimitWinsOverNumSteps) {
  PluginHarness h({"stop_at_step"});
  h.workload.script().end_of_data_step = 101;
  h.add("stopper", "stop_at_step", {{"num_steps", "3"}});
  h.runtime().restore_hook_states({{"stopper", "last_step=7\n"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.global_step, 7);
  EXPECT_THAT(h.log(), HasSubstr("will stop at global step 7 (limit restored from the saved "
                                 "state; num_steps is not counted again)"));
}

TEST(StopAtStep, ConfiguredLastStepWinsOverARestoredOne) {
  PluginHarness h({"stop_at_step"});
  h.workload.script().end_of_data_step = 101;
  h.add("stopper", "stop_at_step", {{"last_step", "4"}});
  h.runtime().restore_hook_states({{"stopper", "last_step=7\n"}});
  EXPECT_EQ(h.run().global_step, 4);
}

TEST(StopAtStep, InvalidSavedStateFailsTheHook) {
  PluginHarness h({"stop_at_step"});
  h.add("stopper", "stop_at_step", {{"num_steps", "3"}});
  h.runtime().restore_hook_states({{"stopper", "last_step=soon\n"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::completed);  // disabled by the default policy
  EXPECT_THAT(h.log(), AllOf(HasSubstr("hook 'stopper' (plugin 'stop_at_step'"),
                             HasSubstr("failed in begin"),
                             HasSubstr("the saved state holds an invalid last_step='soon'")));
}

int64_t g_published_last_step = -1;
hh_status record_last_step(const hh_host*, int64_t step) {
  g_published_last_step = step;
  return HH_OK;
}
int64_t unknown_last_step(const hh_host*) {
  return -1;
}
const hh_steps_service kRecordingSteps = {HH_STEPS_SERVICE_SIZE_1_0, &record_last_step,
                                          &unknown_last_step, nullptr};

TEST(StopAtStep, PublishesItsLimitThroughTheStepsService) {
  g_published_last_step = -1;
  PluginHarness h({"stop_at_step"});
  h.options.services[HH_SERVICE_STEPS] = &kRecordingSteps;
  h.workload.set_global_step(2);
  h.add("stopper", "stop_at_step", {{"num_steps", "6"}});
  ASSERT_TRUE(h.runtime().start());
  EXPECT_EQ(g_published_last_step, 8);
}

// ---- configuration errors ------------------------------------------------------------------

std::string stop_error(const std::multimap<std::string, std::string>& params) {
  PluginHarness h({"stop_at_step"});
  return h.config_error("stopper", "stop_at_step", params);
}

TEST(StopAtStep, BothNumStepsAndLastStepIsAConfigError) {
  EXPECT_THAT(stop_error({{"num_steps", "3"}, {"last_step", "9"}}),
              AllOf(HasSubstr("hook 'stopper' (plugin 'stop_at_step'"), HasSubstr("'num_steps'"),
                    HasSubstr("'last_step'"), HasSubstr("not both")));
}

TEST(StopAtStep, NeitherNumStepsNorLastStepIsAConfigError) {
  EXPECT_THAT(stop_error({}), AllOf(HasSubstr("hook 'stopper' (plugin 'stop_at_step'"),
                                    HasSubstr("'num_steps'"), HasSubstr("'last_step'")));
}

TEST(StopAtStep, NumStepsMustBePositive) {
  EXPECT_THAT(stop_error({{"num_steps", "0"}}),
              AllOf(HasSubstr("hook 'stopper'"), HasSubstr("invalid num_steps=0 (must be > 0)")));
  EXPECT_THAT(stop_error({{"num_steps", "-2"}}), HasSubstr("invalid num_steps=-2"));
}

TEST(StopAtStep, LastStepMustNotBeNegative) {
  EXPECT_THAT(stop_error({{"last_step", "-1"}}),
              AllOf(HasSubstr("hook 'stopper'"), HasSubstr("invalid last_step=-1 (must be >= 0)")));
  EXPECT_EQ(stop_error({{"last_step", "0"}}), "");
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
