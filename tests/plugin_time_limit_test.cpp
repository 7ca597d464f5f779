// The time_limit plugin driven through the runtime: the stop file, the wall-clock budget counted
// across resumes through the saved state, and its configuration errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "plugin_harness.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The seconds stored under elapsed_secs in a state text.
double saved_elapsed(const std::string& state) {
  const std::string key = "elapsed_secs=";
  EXPECT_THAT(state, StartsWith(key));
  return std::stod(state.substr(key.size()));
}

TEST(TimeLimit, StopFilePresentBeforeTheRunStopsAfterTheFirstStep) {
  PluginHarness h({"time_limit"});
  const fs::path stop_file = h.root() / "STOP";
  write_file(stop_file, "");
  h.add("limit", "time_limit", {{"stop_file", stop_file.string()}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.stop_cause, HH_STOP_CAUSE_HOOK);
  EXPECT_EQ(result.steps_run, 1);
  EXPECT_THAT(result.reason, AllOf(HasSubstr("hook 'limit'"),
                                   HasSubstr("stop file " + stop_file.string() + " appeared")));
}

TEST(TimeLimit, RelativeStopFileIsLookedUpInTheRunDirectory) {
  PluginHarness h({"time_limit"});
  write_file(h.run_dir() / "please-stop", "");
  h.add("limit", "time_limit", {{"stop_file", "please-stop"}});
  JobResult result = h.run();
  EXPECT_EQ(result.steps_run, 1);
  EXPECT_THAT(result.reason,
              HasSubstr("stop file " + (h.run_dir() / "please-stop").string() + " appeared"));
}

TEST(TimeLimit, StopFileAppearingDuringTheRunStopsAfterThatStep) {
  PluginHarness h({"time_limit"});
  const fs::path stop_file = h.root() / "STOP";
  h.add("limit", "time_limit", {{"stop_file", stop_file.string()}});
  Runtime& rt = h.runtime();
  ASSERT_TRUE(rt.start());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(rt.run().ran);
  EXPECT_FALSE(rt.should_stop());
  write_file(stop_file, "");
  ASSERT_TRUE(rt.run().ran);
  EXPECT_TRUE(rt.should_stop());
  JobResult result = rt.close();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.global_step, 4);
}

TEST(TimeLimit, NoStopFileAndBudgetLeftRunsToTheEnd) {
  PluginHarness h({"time_limit"});
  h.add("limit", "time_limit", {{"stop_file", "absent"}, {"max_secs", "3600"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::completed);
  EXPECT_EQ(result.steps_run, 10);
}

TEST(TimeLimit, ExhaustedBudgetStopsAfterTheStep) {
  PluginHarness h({"time_limit"});
  h.add("limit", "time_limit", {{"max_secs", "0.001"}});
  Runtime& rt = h.runtime();
  ASSERT_TRUE(rt.start());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(rt.run().ran);
  EXPECT_TRUE(rt.should_stop());
  JobResult result = rt.close();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.steps_run, 1);
  EXPECT_THAT(result.reason,
              AllOf(HasSubstr("hook 'limit'"), HasSubstr("time limit of 0.001 s reached ("),
                    HasSubstr(" s used)")));
}

TEST(TimeLimit, TimeUsedBeforeAResumeCounts) {
  PluginHarness h({"time_limit"});
  h.add("limit", "time_limit", {{"max_secs", "10"}});
  h.runtime().restore_hook_states({{"limit", "elapsed_secs=1000\n"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.steps_run, 1);
  EXPECT_THAT(result.reason, HasSubstr("time limit of 10 s reached (1000."));
  EXPECT_THAT(h.log(), HasSubstr("[limit] [info] resuming with 1000.000 s already used of the "
                                 "10 s budget"));
}

TEST(TimeLimit, SavesTheTimeUsedSoThatItCarriesOver) {
  PluginHarness h({"time_limit"});
  h.add("limit", "time_limit", {{"max_secs", "3600"}});
  h.runtime().restore_hook_states({{"limit", "elapsed_secs=50\n"}});
  EXPECT_EQ(h.run().outcome, Outcome::completed);
  const double used = saved_elapsed(h.runtime().hook_states().at("limit"));
  EXPECT_GE(used, 50.0);
  EXPECT_LT(used, 3600.0);
}

TEST(TimeLimit, StoresTheTimeUsedAfterEveryStep) {
  PluginHarness h({"time_limit"});
  h.add("limit", "time_limit", {{"stop_file", "absent"}});
  Runtime& rt = h.runtime();
  ASSERT_TRUE(rt.start());
  EXPECT_EQ(rt.hook_states().count("limit"), 0u);
  ASSERT_TRUE(rt.run().ran);
  EXPECT_GE(saved_elapsed(rt.hook_states().at("limit")), 0.0);
}

TEST(TimeLimit, InvalidSavedStateFailsTheHook) {
  PluginHarness h({"time_limit"});
  h.add("limit", "time_limit", {{"max_secs", "10"}});
  h.runtime().restore_hook_states({{"limit", "elapsed_secs=a while\n"}});
  h.run();
  EXPECT_THAT(h.log(),
              AllOf(HasSubstr("hook 'limit' (plugin 'time_limit'"), HasSubstr("failed in begin"),
                    HasSubstr("the saved state holds an invalid elapsed_secs='a while'")));
}

// ---- configuration errors ------------------------------------------------------------------

std::string limit_error(const std::multimap<std::string, std::string>& params) {
  PluginHarness h({"time_limit"});
  return h.config_error("limit", "time_limit", params);
}

TEST(TimeLimit, NeitherMaxSecsNorStopFileIsAConfigError) {
  EXPECT_THAT(limit_error({}), AllOf(HasSubstr("hook 'limit' (plugin 'time_limit'"),
                                     HasSubstr("'max_secs'"), HasSubstr("'stop_file'")));
}

TEST(TimeLimit, MaxSecsMustBePositive) {
  EXPECT_THAT(limit_error({{"max_secs", "0"}}),
              AllOf(HasSubstr("hook 'limit'"), HasSubstr("invalid max_secs=0 (must be > 0)")));
  EXPECT_THAT(limit_error({{"max_secs", "-5"}}), HasSubstr("invalid max_secs=-5"));
}

TEST(TimeLimit, StopFileMustNotBeEmpty) {
  EXPECT_THAT(limit_error({{"stop_file", ""}}),
              AllOf(HasSubstr("hook 'limit'"), HasSubstr("invalid stop_file=''")));
}

TEST(TimeLimit, BothMayBeGiven) {
  EXPECT_EQ(limit_error({{"max_secs", "60"}, {"stop_file", "STOP"}}), "");
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
