// The logging_tensor plugin (TensorFlow's LoggingTensorHook) driven through the real runtime.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "plugin_harness.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::ContainsRegex;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;
using ::testing::Not;
using ::testing::SizeIs;

bool fetched(const std::vector<std::string>& fetches, const std::string& name) {
  return std::find(fetches.begin(), fetches.end(), name) != fetches.end();
}

TEST(LoggingTensor, LogsOnEveryNthLocalIterationStartingWithTheFirst) {
  PluginHarness h({"logging_tensor"});
  h.workload.script().values["loss"] = loss_of_ten_over_step;
  h.add("log", "logging_tensor", {{"tensors", "loss,global_step"}, {"every_n_iter", "3"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::completed);
  EXPECT_EQ(result.steps_run, 10);
  // Iterations 0, 3, 6, 9 log the values after those steps: global steps 1, 4, 7, 10.
  std::vector<std::string> lines = info_lines(h.log(), "log");
  ASSERT_THAT(lines, SizeIs(4));
  EXPECT_EQ(lines[0], "loss = 10, global_step = 1");
  EXPECT_THAT(lines[1], MatchesRegex("loss = 2\\.5, global_step = 4 \\([0-9]+\\.[0-9]{3} sec\\)"));
  EXPECT_THAT(lines[2],
              MatchesRegex("loss = 1\\.42857, global_step = 7 \\([0-9]+\\.[0-9]{3} sec\\)"));
  EXPECT_THAT(lines[3], MatchesRegex("loss = 1, global_step = 10 \\([0-9]+\\.[0-9]{3} sec\\)"));
}

TEST(LoggingTensor, FetchesOnlyOnTheIterationsItLogs) {
  PluginHarness h({"logging_tensor"});
  h.add("log", "logging_tensor", {{"tensors", "loss"}, {"every_n_iter", "3"}});
  h.run();
  ASSERT_GE(h.runs.size(), 10u);
  for (std::size_t i = 0; i < 10; ++i)
    EXPECT_EQ(fetched(h.runs[i].fetched, "loss"), i % 3 == 0) << "iteration " << i;
}

TEST(LoggingTensor, NonScalarTensorsPrintAsLists) {
  PluginHarness h({"logging_tensor"});
  h.add("log", "logging_tensor", {{"tensors", "weights,learning_rate"}, {"every_n_iter", "100"}});
  h.run();
  EXPECT_THAT(info_lines(h.log(), "log"), ElementsAre("weights = [1, 2, 3], learning_rate = 0.1"));
}

TEST(LoggingTensor, FormatReplacesPlaceholdersWithValues) {
  PluginHarness h({"logging_tensor"});
  h.workload.script().values["loss"] = loss_of_ten_over_step;
  h.add("log", "logging_tensor",
        {{"tensors", "loss,global_step,weights"},
         {"every_n_iter", "5"},
         {"format", "{{step}} {global_step}: loss={loss} w={weights}"}});
  h.run();
  // Exactly the template, with no elapsed-time suffix (like a TensorFlow formatter).
  EXPECT_THAT(info_lines(h.log(), "log"),
              ElementsAre("{step} 1: loss=10 w=[1, 2, 3]", "{step} 6: loss=1.66667 w=[1, 2, 3]"));
}

TEST(LoggingTensor, FormatMayOnlyNameLoggedTensors) {
  PluginHarness h({"logging_tensor"});
  EXPECT_THAT(h.config_error("log", "logging_tensor",
                             {{"tensors", "loss"}, {"every_n_iter", "1"}, {"format", "{lr}"}}),
              AllOf(HasSubstr("hook 'log'"), HasSubstr("'format'"), HasSubstr("{lr}"),
                    HasSubstr("'tensors'")));
  EXPECT_THAT(h.config_error("log2", "logging_tensor",
                             {{"tensors", "loss"}, {"every_n_iter", "1"}, {"format", "{loss"}}),
              AllOf(HasSubstr("hook 'log2'"), HasSubstr("'format'"), HasSubstr("'{'")));
}

TEST(LoggingTensor, AtEndAloneLogsTheLastValuesOnceWithTheOutcome) {
  PluginHarness h({"logging_tensor"});
  h.workload.script().values["loss"] = loss_of_ten_over_step;
  h.add("log", "logging_tensor", {{"tensors", "loss,global_step"}, {"at_end", "true"}});
  h.run();
  EXPECT_THAT(info_lines(h.log(), "log"),
              ElementsAre("loss = 1, global_step = 10 [at end: completed: end of data: the "
                          "script has no data for step 11]"));
  // The values at the end come from the last step, so every step fetches them.
  for (std::size_t i = 0; i < 10; ++i) EXPECT_TRUE(fetched(h.runs[i].fetched, "loss"));
}

TEST(LoggingTensor, AtEndWithAFrequencyAddsTheEndLineAndItsElapsedTime) {
  PluginHarness h({"logging_tensor"}, {"scripted"});
  h.add("log", "logging_tensor",
        {{"tensors", "global_step"}, {"every_n_iter", "5"}, {"at_end", "true"}});
  h.add("stopper", "scripted",
        {{"trace", (h.root() / "trace.txt").string()}, {"stop_at_iteration", "6"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  std::vector<std::string> lines = info_lines(h.log(), "log");
  ASSERT_THAT(lines, SizeIs(3));
  EXPECT_EQ(lines[0], "global_step = 1");
  EXPECT_THAT(lines[1], MatchesRegex("global_step = 6 \\([0-9.]+ sec\\)"));
  EXPECT_THAT(lines[2],
              MatchesRegex("global_step = 7 \\([0-9.]+ sec\\) \\[at end: stopped: hook 'stopper': "
                           "asked in after_run\\]"));
}

TEST(LoggingTensor, AtEndWithoutAnyStepSaysNoValuesWereSeen) {
  PluginHarness h({"logging_tensor"});
  h.workload.script().end_of_data_step = 1;
  h.add("log", "logging_tensor", {{"tensors", "loss"}, {"at_end", "true"}});
  h.run();
  EXPECT_THAT(info_lines(h.log(), "log"),
              ElementsAre(AllOf(HasSubstr("no values"), HasSubstr("[at end: completed"))));
}

TEST(LoggingTensor, EverySecsLogsTheFirstIterationAndAgainOnceTheIntervalPassed) {
  PluginHarness h({"logging_tensor"});
  h.add("log", "logging_tensor", {{"tensors", "global_step"}, {"every_n_secs", "0.005"}});
  Runtime& rt = h.runtime();
  ASSERT_TRUE(rt.start());
  rt.run();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  rt.run();
  rt.close();
  std::vector<std::string> lines = info_lines(h.log(), "log");
  ASSERT_THAT(lines, SizeIs(2));
  EXPECT_EQ(lines[0], "global_step = 1");
  EXPECT_THAT(lines[1], MatchesRegex("global_step = 2 \\([0-9.]+ sec\\)"));
}

TEST(LoggingTensor, LongEverySecsLogsOnlyTheFirstIteration) {
  PluginHarness h({"logging_tensor"});
  h.add("log", "logging_tensor", {{"tensors", "global_step"}, {"every_n_secs", "3600"}});
  h.run();
  EXPECT_THAT(info_lines(h.log(), "log"), ElementsAre("global_step = 1"));
}

// ---- validation (reference section 2.2) ----------------------------------------------------

TEST(LoggingTensor, BothFrequenciesAreAConfigErrorNamingBothKeys) {
  PluginHarness h({"logging_tensor"});
  EXPECT_THAT(h.config_error("log", "logging_tensor",
                             {{"tensors", "loss"}, {"every_n_iter", "10"}, {"every_n_secs", "5"}}),
              AllOf(HasSubstr("hook 'log' (plugin 'logging_tensor'"), HasSubstr("'every_n_iter'"),
                    HasSubstr("'every_n_secs'"), HasSubstr("got both")));
}

TEST(LoggingTensor, NeitherFrequencyNorAtEndIsAConfigErrorNamingTheKeys) {
  PluginHarness h({"logging_tensor"});
  EXPECT_THAT(h.config_error("log", "logging_tensor", {{"tensors", "loss"}}),
              AllOf(HasSubstr("hook 'log' (plugin 'logging_tensor'"), HasSubstr("'at_end'"),
                    HasSubstr("'every_n_iter'"), HasSubstr("'every_n_secs'")));
  EXPECT_THAT(h.config_error("log2", "logging_tensor", {{"tensors", "loss"}, {"at_end", "false"}}),
              AllOf(HasSubstr("hook 'log2'"), HasSubstr("'at_end'")));
}

TEST(LoggingTensor, NonPositiveEveryNIterIsInvalid) {
  PluginHarness h({"logging_tensor"});
  EXPECT_THAT(h.config_error("log", "logging_tensor", {{"tensors", "loss"}, {"every_n_iter", "0"}}),
              AllOf(HasSubstr("hook 'log'"), HasSubstr("invalid every_n_iter=0")));
  EXPECT_THAT(
      h.config_error("log2", "logging_tensor", {{"tensors", "loss"}, {"every_n_iter", "-3"}}),
      AllOf(HasSubstr("hook 'log2'"), HasSubstr("invalid every_n_iter=-3")));
}

TEST(LoggingTensor, NonPositiveEveryNSecsIsInvalid) {
  PluginHarness h({"logging_tensor"});
  EXPECT_THAT(h.config_error("log", "logging_tensor", {{"tensors", "loss"}, {"every_n_secs", "0"}}),
              AllOf(HasSubstr("hook 'log'"), HasSubstr("invalid every_n_secs=0")));
}

TEST(LoggingTensor, TensorsAreRequired) {
  PluginHarness h({"logging_tensor"});
  EXPECT_THAT(h.config_error("log", "logging_tensor", {{"every_n_iter", "1"}}),
              AllOf(HasSubstr("hook 'log'"), HasSubstr("'tensors'")));
}

TEST(LoggingTensor, AcceptedCombinations) {
  PluginHarness h({"logging_tensor"});
  EXPECT_EQ(h.config_error("a", "logging_tensor", {{"tensors", "loss"}, {"at_end", "true"}}), "");
  EXPECT_EQ(h.config_error("b", "logging_tensor",
                           {{"tensors", "loss"}, {"at_end", "true"}, {"every_n_secs", "1.5"}}),
            "");
  EXPECT_EQ(h.config_error("c", "logging_tensor", {{"tensors", "loss"}, {"every_n_iter", "1"}}),
            "");
}

TEST(LoggingTensor, UnknownTensorFailsTheHookNotTheJob) {
  PluginHarness h({"logging_tensor"});
  h.add("log", "logging_tensor", {{"tensors", "accuracy"}, {"every_n_iter", "1"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::completed);
  EXPECT_THAT(h.log(), AllOf(HasSubstr("hook 'log'"), HasSubstr("accuracy")));
  EXPECT_THAT(info_lines(h.log(), "log"), IsEmpty());
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
