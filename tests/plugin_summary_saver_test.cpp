// summary_saver driven through the real runtime: which steps get summaries, the SessionLog START,
// tags and values read back from the events file, output_dir, summaries on disk at a checkpoint
// and after a kill, and configuration errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "event_file_reader.hpp"
#include "plugin_harness.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::FloatEq;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::SizeIs;

// The harness with a loss of 10/step, the loss the scalars below are written for.
class SummaryJob : public PluginHarness {
 public:
  explicit SummaryJob(const std::vector<std::string>& builtins) : PluginHarness(builtins) {
    workload.script().values["loss"] = loss_of_ten_over_step;
  }
};

std::vector<int64_t> session_start_steps(const std::vector<Event>& events) {
  std::vector<int64_t> steps;
  for (const Event& event : events)
    if (event.session_log_status == 1) steps.push_back(event.step);
  return steps;
}

// Drives the job step by step, sleeping after each step (for the seconds-based timer).
void run_with_pauses(PluginHarness& h, std::chrono::milliseconds pause) {
  Runtime& runtime = h.runtime();
  ASSERT_TRUE(runtime.start());
  while (!runtime.should_stop()) {
    runtime.run();
    std::this_thread::sleep_for(pause);
  }
  runtime.close();
}

TEST(SummarySaver, WritesAtTheFirstStepAndThenEveryNGlobalSteps) {
  SummaryJob h({"summary_saver"});
  h.workload.script().end_of_data_step = 21;
  h.add("sums", "summary_saver", {{"save_steps", "8"}});
  EXPECT_EQ(h.run().outcome, Outcome::completed);
  EXPECT_THAT(scalars(events_in(h.run_dir()), "loss"),
              ElementsAre(Pair(1, FloatEq(10.0f)), Pair(9, FloatEq(10.0f / 9)),
                          Pair(17, FloatEq(10.0f / 17))));
  // After each write it asks to be called next at the step that writes (hh.steps/1 skip_until):
  // the host makes its calls at those three steps of the 21 only.
  const auto reports = h.runtime().reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].callbacks.at("before_run").calls, 3u);
  EXPECT_EQ(reports[0].callbacks.at("after_run").calls, 3u);
}

TEST(SummarySaver, FetchesTheTensorsOnlyForTheStepsItWrites) {
  SummaryJob h({"summary_saver"});
  h.workload.script().end_of_data_step = 21;
  h.add("sums", "summary_saver", {{"save_steps", "8"}});
  h.run();
  std::vector<std::size_t> runs_fetching_loss;
  for (std::size_t i = 0; i < h.runs.size(); ++i)
    for (const auto& name : h.runs[i].fetched)
      if (name == "loss") runs_fetching_loss.push_back(i);
  // Runs 0, 8 and 16 produce global steps 1, 9 and 17.
  EXPECT_THAT(runs_fetching_loss, ElementsAre(0u, 8u, 16u));
}

TEST(SummarySaver, FileStartsWithTheVersionThenASessionStartAtTheFirstStep) {
  SummaryJob h({"summary_saver"});
  h.add("sums", "summary_saver", {{"save_steps", "5"}});
  h.run();
  const std::vector<Event> events = events_in(h.run_dir());
  ASSERT_THAT(events, SizeIs(4));  // version, START, loss at 1, loss at 6
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_EQ(events[1].session_log_status, 1);
  EXPECT_EQ(events[1].step, 1);
  EXPECT_THAT(events[1].scalars, IsEmpty());
  EXPECT_THAT(session_start_steps(events), ElementsAre(1));
  EXPECT_THAT(scalars(events, "loss"),
              ElementsAre(Pair(1, FloatEq(10.0f)), Pair(6, FloatEq(10.0f / 6))));
}

TEST(SummarySaver, StepsAreGlobalStepsWhenTheSessionStartsFromARestoredStep) {
  SummaryJob h({"summary_saver"});
  h.workload.script().step_after_create = 30;
  h.workload.script().end_of_data_step = 41;
  h.add("sums", "summary_saver", {{"save_steps", "4"}});
  h.run();
  const std::vector<Event> events = events_in(h.run_dir());
  EXPECT_THAT(session_start_steps(events), ElementsAre(31));
  EXPECT_THAT(scalars(events, "loss"),
              ElementsAre(Pair(31, FloatEq(10.0f / 31)), Pair(35, FloatEq(10.0f / 35)),
                          Pair(39, FloatEq(10.0f / 39))));
  EXPECT_EQ(h.runtime().reports().at(0).callbacks.at("after_run").calls, 3u);
}

TEST(SummarySaver, WritesEveryTensorTaggedWithItsNameAndNonScalarsAsTheirMean) {
  SummaryJob h({"summary_saver"});
  h.workload.script().end_of_data_step = 7;
  h.add("sums", "summary_saver",
        {{"save_steps", "5"}, {"tensors", "loss,learning_rate,weights,global_step"}});
  h.run();
  const std::vector<Event> events = events_in(h.run_dir());
  EXPECT_THAT(scalars(events, "loss"),
              ElementsAre(Pair(1, FloatEq(10.0f)), Pair(6, FloatEq(10.0f / 6))));
  EXPECT_THAT(scalars(events, "learning_rate"),
              ElementsAre(Pair(1, FloatEq(0.1f)), Pair(6, FloatEq(0.1f))));
  // weights is the vector [1, 2, 3].
  EXPECT_THAT(scalars(events, "weights"),
              ElementsAre(Pair(1, FloatEq(2.0f)), Pair(6, FloatEq(2.0f))));
  EXPECT_THAT(scalars(events, "global_step"),
              ElementsAre(Pair(1, FloatEq(1.0f)), Pair(6, FloatEq(6.0f))));
  // Within a step, the tensors appear in the configured order.
  std::vector<std::string> tags_at_step_1;
  for (const Event& event : events)
    if (event.step == 1)
      for (const auto& scalar : event.scalars) tags_at_step_1.push_back(scalar.first);
  EXPECT_THAT(tags_at_step_1, ElementsAre("loss", "learning_rate", "weights", "global_step"));
}

TEST(SummarySaver, WritesIntoOutputDirInsteadOfTheRunDirectory) {
  SummaryJob h({"summary_saver"});
  const fs::path output = h.root() / "tensorboard";
  h.add("sums", "summary_saver", {{"save_steps", "5"}, {"output_dir", output.string()}});
  h.run();
  EXPECT_THAT(event_files(h.run_dir()), IsEmpty());
  EXPECT_THAT(scalars(events_in(output), "loss"), SizeIs(2));
}

TEST(SummarySaver, RelativeOutputDirIsInsideTheRunDirectory) {
  SummaryJob h({"summary_saver"});
  h.add("sums", "summary_saver", {{"save_steps", "5"}, {"output_dir", "tb/train"}});
  h.run();
  EXPECT_THAT(event_files(h.run_dir()), IsEmpty());
  EXPECT_THAT(scalars(events_in(h.run_dir() / "tb/train"), "loss"), SizeIs(2));
}

TEST(SummarySaver, SaveSecsWritesEveryStepOnceTheIntervalHasPassed) {
  SummaryJob h({"summary_saver"});
  h.workload.script().end_of_data_step = 4;
  h.add("sums", "summary_saver", {{"save_secs", "0.001"}});
  run_with_pauses(h, std::chrono::milliseconds(5));
  EXPECT_THAT(
      scalars(events_in(h.run_dir()), "loss"),
      ElementsAre(Pair(1, FloatEq(10.0f)), Pair(2, FloatEq(5.0f)), Pair(3, FloatEq(10.0f / 3))));
}

TEST(SummarySaver, SaveSecsWritesOnlyTheFirstStepBeforeTheIntervalPasses) {
  SummaryJob h({"summary_saver"});
  h.add("sums", "summary_saver", {{"save_secs", "3600"}});
  h.run();
  const std::vector<Event> events = events_in(h.run_dir());
  EXPECT_THAT(session_start_steps(events), ElementsAre(1));
  EXPECT_THAT(scalars(events, "loss"), ElementsAre(Pair(1, FloatEq(10.0f))));
}

// The events of the whole records at the start of `file`. A record the host's writer thread is
// writing at that moment (or was writing when the process was killed) ends the list; every record
// before it must be whole, with both checksums right.
std::vector<Event> events_before_any_torn_tail(const fs::path& file) {
  const std::string bytes = read_file(file);
  std::vector<Event> events;
  std::size_t at = 0;
  while (bytes.size() - at >= 12) {
    const uint64_t length = read_le(bytes, at, 8);
    if (bytes.size() - at - 12 < length + 4) break;
    const std::string_view data = std::string_view(bytes).substr(at + 12, length);
    EXPECT_EQ(read_le(bytes, at + 8, 4), masked_crc32c(std::string_view(bytes).substr(at, 8)));
    EXPECT_EQ(read_le(bytes, at + 12 + length, 4), masked_crc32c(data));
    events.push_back(decode_event(data));
    at += 12 + length + 4;
  }
  return events;
}

std::vector<int64_t> loss_steps(const std::vector<Event>& events) {
  std::vector<int64_t> steps;
  for (const auto& [step, value] : scalars(events, "loss")) steps.push_back(step);
  return steps;
}

// The hook does not flush: the host puts its records on disk before every checkpoint, so a
// resumed job, which never replays the steps before its checkpoint, finds them there.
TEST(SummarySaver, SummariesWrittenBeforeACheckpointAreOnDiskOnceItIs) {
  SummaryJob h({"summary_saver", "checkpoint_saver"});
  h.workload.script().end_of_data_step = 101;
  h.add("sums", "summary_saver", {{"save_steps", "1"}});
  h.add("checkpoints", "checkpoint_saver", {{"save_steps", "5"}}, 100);
  Runtime& runtime = h.runtime();
  ASSERT_TRUE(runtime.start());
  for (int i = 0; i < 7; ++i) runtime.run();
  while (!runtime.last_checkpoint() || runtime.last_checkpoint()->global_step < 5)
    std::this_thread::yield();  // the checkpoint of step 5 is on disk
  const std::vector<fs::path> files = event_files(h.run_dir());
  ASSERT_THAT(files, SizeIs(1));
  const std::vector<int64_t> steps = loss_steps(events_before_any_torn_tail(files[0]));
  ASSERT_GE(steps.size(), 5u);
  EXPECT_THAT(std::vector<int64_t>(steps.begin(), steps.begin() + 5), ElementsAre(1, 2, 3, 4, 5));
  runtime.close();
}

TEST(SummarySaver, AKilledJobKeepsEverySummaryWrittenBeforeItsLastCheckpoint) {
  SummaryJob h({"summary_saver", "checkpoint_saver"});
  h.workload.script().end_of_data_step = 101;
  h.add("sums", "summary_saver", {{"save_steps", "1"}});
  h.add("checkpoints", "checkpoint_saver", {{"save_steps", "10"}}, 100);
  // The job dies mid-run after 13 steps, once the step-10 checkpoint is on disk.
  const int status = h.run_and_die_after_checkpoint(13, 10);
  ASSERT_NE(status, -1);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
  const std::vector<fs::path> files = event_files(h.run_dir());
  ASSERT_THAT(files, SizeIs(1));
  // Steps 11 to 13 may be lost (they were still in memory): a resumed job runs them again.
  const std::vector<int64_t> steps = loss_steps(events_before_any_torn_tail(files[0]));
  ASSERT_GE(steps.size(), 10u);
  EXPECT_THAT(std::vector<int64_t>(steps.begin(), steps.begin() + 10),
              ElementsAre(1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
}

TEST(SummarySaver, TensorTheWorkloadDoesNotProvideDisablesTheHookNamingIt) {
  SummaryJob h({"summary_saver"});
  h.add("sums", "summary_saver", {{"save_steps", "2"}, {"tensors", "loss,accuracy"}});
  const JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::completed);  // on_error=disable: the job goes on
  EXPECT_THAT(h.log(), HasSubstr("'accuracy', which the workload does not provide"));
}

// ---- configuration errors name the hook instance and the keys --------------------------------

TEST(SummarySaverConfig, BothSaveStepsAndSaveSecsIsAnError) {
  SummaryJob h({"summary_saver"});
  EXPECT_THAT(h.config_error("sums", "summary_saver", {{"save_steps", "8"}, {"save_secs", "10"}}),
              AllOf(HasSubstr("hook 'sums' (plugin 'summary_saver'"), HasSubstr("'save_steps'"),
                    HasSubstr("'save_secs'"), HasSubstr("not both")));
}

TEST(SummarySaverConfig, NeitherSaveStepsNorSaveSecsIsAnError) {
  SummaryJob h({"summary_saver"});
  EXPECT_THAT(h.config_error("sums", "summary_saver", {{"output_dir", "tb"}}),
              AllOf(HasSubstr("hook 'sums' (plugin 'summary_saver'"),
                    HasSubstr("give one of 'save_steps' or 'save_secs'")));
}

TEST(SummarySaverConfig, NonPositiveSaveStepsIsAnErrorNamingTheKey) {
  SummaryJob h({"summary_saver"});
  for (const std::string value : {"0", "-3"}) {
    SCOPED_TRACE("save_steps=" + value);
    EXPECT_THAT(h.config_error("sums", "summary_saver", {{"save_steps", value}}),
                AllOf(HasSubstr("hook 'sums' (plugin 'summary_saver'"),
                      HasSubstr("invalid save_steps=" + value + " (must be > 0)")));
  }
}

TEST(SummarySaverConfig, NonPositiveSaveSecsIsAnErrorNamingTheKey) {
  SummaryJob h({"summary_saver"});
  for (const std::string value : {"0", "-1.5"}) {
    SCOPED_TRACE("save_secs=" + value);
    EXPECT_THAT(h.config_error("sums", "summary_saver", {{"save_secs", value}}),
                AllOf(HasSubstr("hook 'sums' (plugin 'summary_saver'"),
                      HasSubstr("invalid save_secs=" + value + " (must be > 0)")));
  }
}

TEST(SummarySaverConfig, EmptyTensorListIsAnError) {
  SummaryJob h({"summary_saver"});
  EXPECT_THAT(h.config_error("sums", "summary_saver", {{"save_steps", "8"}, {"tensors", ""}}),
              AllOf(HasSubstr("hook 'sums' (plugin 'summary_saver'"),
                    HasSubstr("'tensors' must name at least one tensor")));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
