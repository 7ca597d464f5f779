// progress_bar driven through the real runtime: progress lines in the log, the live bar on
// stderr, the total from the steps service or a counter without one, and the final line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "plugin_harness.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::Each;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

::testing::Matcher<const std::string&> Matches(const std::string& pattern) {
  return ::testing::Truly(
      [re = std::regex(pattern)](const std::string& s) { return std::regex_match(s, re); });
}

const char* kRate = R"(- \d+\.\d+ steps/s)";

TEST(ProgressBar, LinesShowLabelStepOfTotalPercentageRateAndLoss) {
  PluginHarness h({"progress_bar"});
  h.workload.script().end_of_data_step = 11;  // the workload's own end is the total
  h.workload.script().values["loss"] = loss_of_ten_over_step;
  h.add("progress", "progress_bar",
        {{"mode", "lines"}, {"every_n_secs", "0.000001"}, {"label", "Fitting"}});
  h.run();
  h.finish();
  const std::vector<std::string> lines = info_lines(h.log(), "progress");
  ASSERT_THAT(lines, SizeIs(::testing::Ge(2u)));
  // The first step is always shown.
  EXPECT_THAT(lines[0],
              Matches(std::string(R"(Fitting 1/10 \(10\.0%\) )") + kRate + R"( - loss: 10\.0000)"));
  // Every progress line has the same shape, whichever steps the clock let through.
  std::vector<std::string> progress(lines.begin(), lines.end() - 1);
  EXPECT_THAT(progress, Each(Matches(std::string(R"(Fitting \d+/10 \(\d+\.\d%\) )") + kRate +
                                     R"( - loss: \d+\.\d{4})")));
  EXPECT_EQ(lines.back(), "Fitting completed after 10 steps");
}

TEST(ProgressBar, LinesComeNoMoreOftenThanEveryNSecs) {
  PluginHarness h({"progress_bar"});
  h.workload.script().end_of_data_step = 21;
  h.workload.script().values["loss"] = loss_of_ten_over_step;
  h.add("progress", "progress_bar", {{"mode", "lines"}, {"every_n_secs", "3600"}});
  h.run();
  h.finish();
  // Only the first step's line (an hour never passes here), then the final line.
  EXPECT_THAT(info_lines(h.log(), "progress"),
              ::testing::ElementsAre(Matches(std::string(R"(Training 1/20 \(5\.0%\) )") + kRate +
                                             R"( - loss: 10\.0000)"),
                                     "Training completed after 20 steps"));
}

TEST(ProgressBar, WithoutATotalShowsACounter) {
  TempDir scratch;
  PluginHarness h({"progress_bar"}, {"scripted"});
  // Nobody knows when the job ends.
  h.workload.script().end_of_data_step = detail::Script::kEndless;
  // A resumed job: the counter shows the global step and this run's steps.
  h.workload.set_global_step(100);
  h.workload.script().values["loss"] = loss_of_ten_over_step;
  h.add("progress", "progress_bar", {{"mode", "lines"}});
  h.add("stopper", "scripted",
        {{"trace", (scratch / "scripted.txt").string()}, {"stop_at_iteration", "4"}});
  h.run();
  h.finish();
  const std::vector<std::string> lines = info_lines(h.log(), "progress");
  ASSERT_THAT(lines, SizeIs(2));
  EXPECT_THAT(lines[0], Matches(std::string(R"(Training 101 \[steps: 1\] )") + kRate +
                                R"( - loss: 0\.0990)"));
  EXPECT_EQ(lines[1], "Training stopped after 105 steps: hook 'stopper': asked in after_run");
}

TEST(ProgressBar, FinalLineSaysWhyAStoppedJobEndedShortOfItsTotal) {
  TempDir scratch;
  PluginHarness h({"progress_bar"}, {"scripted"});
  h.workload.script().end_of_data_step = 11;
  h.add("progress", "progress_bar", {{"mode", "lines"}});
  h.add("stopper", "scripted",
        {{"trace", (scratch / "scripted.txt").string()}, {"stop_at_iteration", "2"}});
  h.run();
  h.finish();
  EXPECT_THAT(h.log(), HasSubstr("[progress] [info] Training stopped after 3 of 10 steps: "
                                 "hook 'stopper': asked in after_run\n"));
}

TEST(ProgressBar, FinalLineSaysWhyAFailedJobEnded) {
  PluginHarness h({"progress_bar"});
  h.workload.script().end_of_data_step = 11;
  // The attempt at step 4 fails: the job fails at global step 3.
  h.workload.script().faults[4].push_back({StepStatus::error, "injected fault"});
  h.add("progress", "progress_bar", {{"mode", "lines"}});
  h.run();
  h.finish();
  EXPECT_THAT(h.log(), HasSubstr("[progress] [info] Training failed after 3 of 10 steps: the "
                                 "workload failed at global step 3: injected fault\n"));
}

TEST(ProgressBar, CompletedBeforeTheTotalSaysSo) {
  PluginHarness h({"progress_bar"});
  h.workload.script().end_of_data_step = 11;
  // The data runs out early, at global step 4.
  h.workload.script().faults[5].push_back({StepStatus::end_of_data, "injected fault"});
  h.add("progress", "progress_bar", {{"mode", "lines"}});
  h.run();
  h.finish();
  EXPECT_THAT(h.log(), HasSubstr("[progress] [info] Training completed after 4 of 10 steps: "
                                 "end of data: injected fault\n"));
}

TEST(ProgressBar, BarModeRedrawsOneLineOnStderr) {
  PluginHarness h({"progress_bar"});
  h.workload.script().end_of_data_step = 11;
  h.workload.script().values["loss"] = loss_of_ten_over_step;
  h.add("progress", "progress_bar", {{"mode", "bar"}});
  ::testing::internal::CaptureStderr();
  h.run();
  h.finish();
  const std::string err = ::testing::internal::GetCapturedStderr();
  // Each draw returns to the line start, redraws and clears the rest; the end adds a newline.
  ASSERT_THAT(err, ::testing::StartsWith("\r"));
  ASSERT_THAT(err, ::testing::EndsWith("\x1b[K\n"));
  std::vector<std::string> draws;
  std::istringstream in(err.substr(1, err.size() - 5));
  for (std::string draw; std::getline(in, draw, '\r');) draws.push_back(draw);
  const std::string draw_pattern = R"(Training (\d+)/10 \[[=> ]{30}\] - ETA: [0-9hms]+ )" +
                                   std::string(kRate) + R"( - loss: \d+\.\d{4})";
  for (std::size_t i = 0; i + 1 < draws.size(); ++i)
    EXPECT_THAT(draws[i], Matches(draw_pattern + "\x1b\\[K"));
  // The first step draws at once; the end draws the final state.
  EXPECT_THAT(draws.front(), Matches(R"(Training 1/10 \[==> {27}\] - ETA: [0-9hms]+ )" +
                                     std::string(kRate) + R"( - loss: 10\.0000)" + "\x1b\\[K"));
  EXPECT_THAT(draws.back(), Matches(R"(Training 10/10 \[={30}\] - ETA: 0s )" + std::string(kRate) +
                                    R"( - loss: 1\.0000)"));
  // The final line still goes to the log.
  EXPECT_THAT(info_lines(h.log(), "progress"), Contains("Training completed after 10 steps"));
}

TEST(ProgressBar, ShowLossFalseFetchesNothing) {
  PluginHarness h({"progress_bar"});
  h.workload.script().end_of_data_step = 4;
  h.add("progress", "progress_bar", {{"mode", "lines"}, {"show_loss", "false"}});
  h.run();
  h.finish();
  for (const SessionRun& run : h.runs) EXPECT_THAT(run.fetched, IsEmpty());
  const std::vector<std::string> lines = info_lines(h.log(), "progress");
  ASSERT_FALSE(lines.empty());
  EXPECT_THAT(lines[0], Matches(std::string(R"(Training 1/3 \(33\.3%\) )") + kRate));
  EXPECT_THAT(lines, Each(Not(HasSubstr("loss"))));
}

TEST(ProgressBar, InvalidModeAndIntervalAreConfigurationErrorsNamingTheKey) {
  PluginHarness h({"progress_bar"});
  EXPECT_THAT(h.config_error("progress", "progress_bar", {{"mode", "fancy"}}),
              AllOf(HasSubstr("hook 'progress' (plugin 'progress_bar'"),
                    HasSubstr("'mode' must be auto, bar or lines, got 'fancy'")));
  for (const char* value : {"0", "-1"})
    EXPECT_THAT(h.config_error("progress", "progress_bar", {{"every_n_secs", value}}),
                AllOf(HasSubstr("hook 'progress' (plugin 'progress_bar'"),
                      HasSubstr("'every_n_secs' must be > 0")));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
