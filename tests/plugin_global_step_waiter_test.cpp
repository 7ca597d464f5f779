// The global_step_waiter plugin driven through the runtime. In one process the global step only
// moves between steps, so a wait can end by the step already being reached, by a stop, or by the
// timeout; all three are covered.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "plugin_harness.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(GlobalStepWaiter, StartsAtOnceWhenTheStepIsAlreadyReached) {
  PluginHarness h({"global_step_waiter"});
  h.workload.set_global_step(5);
  // A bounded wait, so that a regression fails instead of hanging.
  h.add("waiter", "global_step_waiter", {{"wait_until_step", "5"}, {"timeout_secs", "30"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::completed);
  EXPECT_EQ(result.steps_run, 5);
  EXPECT_THAT(h.log(), Not(HasSubstr("Waiting for global step")));
  EXPECT_FALSE(h.runtime().reports()[0].disabled);
}

TEST(GlobalStepWaiter, StartsAtOnceWhenTheSessionIsPastTheStep) {
  PluginHarness h({"global_step_waiter"});
  h.workload.set_global_step(8);
  h.add("waiter", "global_step_waiter", {{"wait_until_step", "3"}, {"timeout_secs", "30"}});
  EXPECT_EQ(h.run().steps_run, 2);
  EXPECT_THAT(h.log(), Not(HasSubstr("Waiting for global step")));
}

TEST(GlobalStepWaiter, ZeroOrNegativeTargetNeverWaits) {
  for (const char* target : {"0", "-3"}) {
    PluginHarness h({"global_step_waiter"});
    h.add("waiter", "global_step_waiter", {{"wait_until_step", target}, {"timeout_secs", "30"}});
    EXPECT_EQ(h.run().steps_run, 10) << target;
    EXPECT_THAT(h.log(), Not(HasSubstr("Waiting for global step"))) << target;
  }
}

TEST(GlobalStepWaiter, TimeoutFailsTheHookNamingTheStepReached) {
  PluginHarness h({"global_step_waiter"});
  h.workload.set_global_step(3);
  h.add("waiter", "global_step_waiter",
        {{"wait_until_step", "100"}, {"poll_secs", "0.01"}, {"timeout_secs", "0.05"}});
  JobResult result = h.run();
  // The default policy disables the hook; the job itself goes on.
  EXPECT_EQ(result.outcome, Outcome::completed);
  EXPECT_EQ(result.steps_run, 7);
  EXPECT_EQ(count_occurrences(h.log(), "Waiting for global step 100 before starting training."), 1);
  EXPECT_THAT(h.log(), AllOf(HasSubstr("hook 'waiter' (plugin 'global_step_waiter'"),
                             HasSubstr("failed in before_run"),
                             HasSubstr("global step 3 did not reach 100 within 0.05 s")));
  EXPECT_TRUE(h.runtime().reports()[0].disabled);
}

TEST(GlobalStepWaiter, TimeoutCanFailTheJob) {
  PluginHarness h({"global_step_waiter"});
  h.add("waiter", "global_step_waiter",
        {{"wait_until_step", "100"}, {"poll_secs", "0.01"}, {"timeout_secs", "0.02"}}, 0,
        FailurePolicy::fail);
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::failed);
  EXPECT_EQ(result.steps_run, 0);
  EXPECT_THAT(result.reason, HasSubstr("global step 0 did not reach 100 within 0.02 s"));
}

TEST(GlobalStepWaiter, AStopRequestedEarlierInTheStepEndsTheWait) {
  PluginHarness h({"global_step_waiter"}, {"scripted"});
  h.add("stopper", "scripted",
        {{"trace", (h.root() / "trace.txt").string()}, {"stop_in_before_at", "0"}}, -1);
  h.add("waiter", "global_step_waiter", {{"wait_until_step", "100"}, {"timeout_secs", "30"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_THAT(result.reason, HasSubstr("asked in before_run"));
  EXPECT_EQ(result.steps_run, 1);
  EXPECT_THAT(h.log(), Not(HasSubstr("did not reach")));
  EXPECT_FALSE(h.runtime().reports()[1].disabled);
}

// ---- configuration errors ------------------------------------------------------------------

std::string waiter_error(const std::multimap<std::string, std::string>& params) {
  PluginHarness h({"global_step_waiter"});
  return h.config_error("waiter", "global_step_waiter", params);
}

TEST(GlobalStepWaiter, WaitUntilStepIsRequired) {
  EXPECT_THAT(waiter_error({}), AllOf(HasSubstr("hook 'waiter' (plugin 'global_step_waiter'"),
                                      HasSubstr("'wait_until_step'"), HasSubstr("missing")));
}

TEST(GlobalStepWaiter, PollSecsMustBePositive) {
  EXPECT_THAT(waiter_error({{"wait_until_step", "5"}, {"poll_secs", "0"}}),
              AllOf(HasSubstr("hook 'waiter'"), HasSubstr("invalid poll_secs=0 (must be > 0)")));
  EXPECT_THAT(waiter_error({{"wait_until_step", "5"}, {"poll_secs", "-1"}}),
              HasSubstr("invalid poll_secs=-1"));
}

TEST(GlobalStepWaiter, TimeoutSecsMustNotBeNegative) {
  EXPECT_THAT(waiter_error({{"wait_until_step", "5"}, {"timeout_secs", "-1"}}),
              AllOf(HasSubstr("hook 'waiter'"), HasSubstr("invalid timeout_secs=-1")));
  EXPECT_EQ(waiter_error({{"wait_until_step", "5"}, {"timeout_secs", "0"}}), "");
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
