// Unit tests of my_hook: the built plugin file, driven through scripted lifecycles by hookhost's
// test harness, which runs it in hookhost's real runtime around a workload it scripts.
#include <gtest/gtest.h>

#include <hookhost/testing.hpp>
#include <string>
#include <vector>

using hookhost::Outcome;
using hookhost::testing::HookTest;
using Lines = std::vector<std::string>;

// The loss the scripted workload returns: 10 / step (10, 5, 3.33, 2.5, 2, ...).
double falling_loss(int64_t step) {
  return 10.0 / static_cast<double>(step);
}

TEST(MyHook, FetchesTheTensorAndLogsItEveryNSteps) {
  HookTest hook(MY_HOOK_PLUGIN_FILE);
  hook.set("log_every", "5").steps(10).value("loss", falling_loss);
  const auto run = hook.run();
  EXPECT_EQ(run.outcome, Outcome::completed) << run.log_text();
  EXPECT_EQ(run.fetched(3), Lines{"loss"});
  EXPECT_EQ(run.log_lines("info"),
            (Lines{"loss = 2 at step 5 (best 2)", "loss = 1 at step 10 (best 1)"}));
}

TEST(MyHook, StopsTheJobAfterTheFirstStepBelowStopBelow) {
  HookTest hook(MY_HOOK_PLUGIN_FILE);
  hook.set("stop_below", "1.5").steps(100).value("loss", falling_loss);
  const auto run = hook.run();
  // 10/6 = 1.67 is not below 1.5; 10/7 = 1.43 is.
  EXPECT_EQ(run.outcome, Outcome::stopped) << run.log_text();
  EXPECT_EQ(run.global_step, 7);
  EXPECT_TRUE(run.stopped_by_hook);
  EXPECT_EQ(run.hook_stop_reason, "loss 1.42857 fell below stop_below 1.5");
}

// The same hook in a sandbox process of its own (isolation = process), as an operator may run it:
// it behaves the same, confined to its run folder.
TEST(MyHook, StopsTheJobTheSameWayWhenSandboxed) {
  HookTest hook(MY_HOOK_PLUGIN_FILE);
  hook.isolation(hookhost::Isolation::process);
  hook.set("stop_below", "1.5").steps(100).value("loss", falling_loss);
  const auto run = hook.run();
  EXPECT_EQ(run.outcome, Outcome::stopped) << run.log_text();
  EXPECT_EQ(run.global_step, 7);
  EXPECT_EQ(run.hook_stop_reason, "loss 1.42857 fell below stop_below 1.5");
}

TEST(MyHook, KeepsItsBestValueWhenTheJobResumes) {
  HookTest first(MY_HOOK_PLUGIN_FILE);
  first.steps(4).value("loss", falling_loss);
  const auto stopped = first.run();
  EXPECT_EQ(stopped.state_bytes(), "2.5");

  // The resumed job sees a worse loss: the best stays the one saved before.
  HookTest resumed(MY_HOOK_PLUGIN_FILE);
  resumed.set("log_every", "2").resume_from(stopped).steps(6).value("loss", 4.0);
  const auto run = resumed.run();
  EXPECT_EQ(run.log_lines("info"), (Lines{"loss = 4 at step 6 (best 2.5)"})) << run.log_text();
}

TEST(MyHook, RefusesLogEveryBelowOne) {
  HookTest hook(MY_HOOK_PLUGIN_FILE);
  hook.set("log_every", "0");
  EXPECT_NE(hook.configuration_error().find("'log_every' must be at least 1"), std::string::npos);
}
