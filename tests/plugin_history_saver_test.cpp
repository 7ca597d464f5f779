// history_saver driven through the real runtime: which steps get a row, the columns, continuing
// the same file on resume, when buffered rows reach the file, rows kept in the checkpointed state
// across a recovery and across SIGKILL and resume, and configuration errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "plugin_harness.hpp"
#include "storage/checkpoint.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

// Each row with its wall time replaced by "T", after checking that it has three decimals.
std::vector<std::string> rows_without_time(const fs::path& file) {
  std::vector<std::string> out;
  const std::regex row(R"(^(-?\d+),(\d+\.\d{3}),(.*)$)");
  for (const auto& line : lines_of(file)) {
    std::smatch m;
    if (std::regex_match(line, m, row)) {
      out.push_back(m[1].str() + ",T," + m[3].str());
    } else {
      out.push_back(line);
    }
  }
  return out;
}

// The harness with a loss of 10/step, the loss the rows below are written for.
class HistoryJob : public PluginHarness {
 public:
  explicit HistoryJob(const std::vector<std::string>& builtins) : PluginHarness(builtins) {
    workload.script().values["loss"] = loss_of_ten_over_step;
  }
};

double now_secs() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TEST(HistorySaver, RecordsTheFirstStepAndEveryNthGlobalStep) {
  HistoryJob h({"history_saver"});
  h.workload.script().end_of_data_step = 26;
  h.add("history", "history_saver");
  const double before = now_secs();
  h.run();
  const double after = now_secs();
  h.finish();
  const fs::path file = h.run_dir() / "history.csv";
  EXPECT_THAT(rows_without_time(file),
              ElementsAre("step,wall_time,loss", "1,T,10", "10,T,1", "20,T,0.5"));
  // The wall time is seconds since the epoch, taken while the job ran.
  const std::vector<std::string> lines = lines_of(file);
  ASSERT_THAT(lines, SizeIs(4));
  const double wall_time = std::stod(lines[1].substr(lines[1].find(',') + 1));
  EXPECT_GE(wall_time, std::floor(before * 1000) / 1000);
  EXPECT_LE(wall_time, std::ceil(after * 1000) / 1000);
  // Only the steps that get a row fetch the tensors.
  EXPECT_THAT(h.runs[0].fetched, ElementsAre("loss"));
  EXPECT_THAT(h.runs[1].fetched, IsEmpty());
  EXPECT_THAT(h.runs[9].fetched, ElementsAre("loss"));
}

TEST(HistorySaver, NonScalarTensorsGetMeanAndTotalColumns) {
  HistoryJob h({"history_saver"});
  h.workload.script().end_of_data_step = 7;
  h.add("history", "history_saver",
        {{"every_n_steps", "3"}, {"tensors", "loss,weights,global_step"}});
  h.run();
  h.finish();
  // weights is [1, 2, 3]: mean 2, total 6. loss is an f32 scalar, shown in its shortest form.
  EXPECT_THAT(rows_without_time(h.run_dir() / "history.csv"),
              ElementsAre("step,wall_time,loss,weights_mean,weights_total,global_step",
                          "1,T,10,2,6,1", "3,T,3.3333333,2,6,3", "6,T,1.6666666,2,6,6"));
}

TEST(HistorySaver, ResumedJobContinuesTheSameFileWithoutDuplicatingSteps) {
  TempDir shared;
  const std::string path = (shared / "history.csv").string();
  {
    HistoryJob h({"history_saver"});
    h.workload.script().end_of_data_step = 13;
    h.add("history", "history_saver", {{"path", path}});
    h.run();
  }
  EXPECT_THAT(rows_without_time(path), ElementsAre("step,wall_time,loss", "1,T,10", "10,T,1"));
  {
    // The resumed job restarts from an older checkpoint (step 8) and replays steps 9 to 12.
    HistoryJob h({"history_saver"});
    h.workload.set_global_step(8);
    h.workload.script().end_of_data_step = 26;
    h.add("history", "history_saver", {{"path", path}});
    h.run();
    h.finish();
    EXPECT_THAT(h.log(), HasSubstr("continuing " + path + " after step 10"));
  }
  // One header, and the same rows an uninterrupted job would have left: the replayed steps 9 and
  // 10 (the resumed job's first step, and an every-10 step) are already in the file.
  EXPECT_THAT(rows_without_time(path),
              ElementsAre("step,wall_time,loss", "1,T,10", "10,T,1", "20,T,0.5"));
}

// The rows an uninterrupted job with these parameters leaves, wall times replaced by "T".
std::vector<std::string> uninterrupted_rows(const std::multimap<std::string, std::string>& params,
                                            int64_t last_step) {
  TempDir shared;
  std::multimap<std::string, std::string> with_path = params;
  with_path.emplace("path", (shared / "history.csv").string());
  HistoryJob h({"history_saver"});
  h.workload.script().end_of_data_step = last_step + 1;
  h.add("history", "history_saver", with_path);
  h.run();
  h.finish();
  return rows_without_time(shared / "history.csv");
}

TEST(HistorySaver, RowsWaitInMemoryAndInTheHooksStateUntilEnd) {
  HistoryJob h({"history_saver"});
  h.add("history", "history_saver", {{"every_n_steps", "1"}, {"flush_secs", "3600"}});
  Runtime& runtime = h.runtime();
  ASSERT_TRUE(runtime.start());
  for (int i = 0; i < 4; ++i) runtime.run();
  // Four short rows: far from 4 KiB, and the oldest is far from an hour old.
  const fs::path file = h.run_dir() / "history.csv";
  EXPECT_EQ(read_file(file), "");
  // What the file lacks is what the next checkpoint saves for the hook.
  const std::string state = runtime.hook_states().at("history");
  EXPECT_THAT(lines_of(state), SizeIs(5));
  EXPECT_EQ(lines_of(state)[0], "step,wall_time,loss");
  EXPECT_EQ(lines_of(state)[4].substr(0, 2), "4,");
  runtime.close();
  EXPECT_THAT(rows_without_time(file),
              ElementsAre("step,wall_time,loss", "1,T,10", "2,T,5", "3,T,3.3333333", "4,T,2.5"));
  // Nothing waits any more: the state the final checkpoint would save is empty.
  EXPECT_EQ(runtime.hook_states().at("history"), "");
}

TEST(HistorySaver, FlushSecsZeroAppendsEachRowAtOnce) {
  HistoryJob h({"history_saver"});
  h.add("history", "history_saver", {{"every_n_steps", "1"}, {"flush_secs", "0"}});
  Runtime& runtime = h.runtime();
  ASSERT_TRUE(runtime.start());
  runtime.run();
  runtime.run();
  EXPECT_THAT(rows_without_time(h.run_dir() / "history.csv"),
              ElementsAre("step,wall_time,loss", "1,T,10", "2,T,5"));
  // Nothing waits, so the hook's state holds no rows.
  const auto states = runtime.hook_states();
  EXPECT_TRUE(!states.count("history") || states.at("history").empty());
  runtime.close();
}

TEST(HistorySaver, RowsReachTheFileInChunksWhileTheJobRuns) {
  HistoryJob h({"history_saver"});
  h.workload.script().end_of_data_step = 1001;
  h.add("history", "history_saver", {{"every_n_steps", "1"}, {"flush_secs", "3600"}});
  Runtime& runtime = h.runtime();
  ASSERT_TRUE(runtime.start());
  for (int i = 0; i < 400; ++i) runtime.run();  // about 20 bytes a row: two 4 KiB chunks or so
  const std::vector<std::string> on_disk = lines_of(h.run_dir() / "history.csv");
  const std::vector<std::string> waiting = lines_of(runtime.hook_states().at("history"));
  ASSERT_GT(on_disk.size(), 100u);
  ASSERT_THAT(waiting, Not(IsEmpty()));
  // The file and the state split the rows between them, header first, none twice.
  std::vector<std::string> rows(on_disk.begin() + 1, on_disk.end());
  rows.insert(rows.end(), waiting.begin() + 1, waiting.end());
  ASSERT_THAT(rows, SizeIs(400));
  EXPECT_EQ(on_disk[0], "step,wall_time,loss");
  EXPECT_EQ(waiting[0], "step,wall_time,loss");
  for (std::size_t i = 0; i < rows.size(); ++i)
    ASSERT_EQ(rows[i].substr(0, rows[i].find(',')), std::to_string(i + 1)) << rows[i];
  runtime.close();
  EXPECT_THAT(lines_of(h.run_dir() / "history.csv"), SizeIs(401));
}

TEST(HistorySaver, AFailedJobStillWritesEveryRecordedRow) {
  HistoryJob h({"history_saver"});
  h.workload.script().faults[8] = {{StepStatus::error, "injected fault"}};  // at global step 7
  h.add("history", "history_saver", {{"every_n_steps", "2"}, {"flush_secs", "3600"}});
  EXPECT_EQ(h.run().outcome, Outcome::failed);
  EXPECT_THAT(rows_without_time(h.run_dir() / "history.csv"),
              ElementsAre("step,wall_time,loss", "1,T,10", "2,T,5", "4,T,2.5", "6,T,1.6666666"));
}

// A recovery puts every hook's state back to the restored checkpoint's; the rows recorded since
// then, still in memory, must be what the state holds again, or a later checkpoint would lose them.
TEST(HistorySaver, ARecoveryKeepsEveryRecordedRowInTheState) {
  HistoryJob h({"history_saver", "checkpoint_saver"});
  h.workload.script().faults[6] = {{StepStatus::aborted, "injected fault"}};  // at global step 5
  h.workload.script().end_of_data_step = 9;
  h.options.on_recover = [&](Runtime& runtime) {
    const auto restored = restore_latest_checkpoint(h.run_dir() / "checkpoints");
    ASSERT_TRUE(restored && !restored->file.empty());
    runtime.restore_hook_states(restored->checkpoint.hook_states);
    h.workload.set_global_step(restored->checkpoint.global_step);
  };
  h.add("history", "history_saver", {{"every_n_steps", "1"}, {"flush_secs", "3600"}});
  h.add("checkpoints", "checkpoint_saver", {{"save_steps", "3"}}, 100);
  Runtime& runtime = h.runtime();
  ASSERT_TRUE(runtime.start());
  for (int i = 0; i < 5; ++i) runtime.run();  // rows 1 to 5; the newest checkpoint is at step 3
  runtime.run();  // fails at step 5, goes back to step 3, runs step 4 again (no row: it has one)
  ASSERT_EQ(h.workload.global_step(), 4);
  std::vector<std::string> steps;
  for (const auto& line : lines_of(runtime.hook_states().at("history")))
    steps.push_back(line.substr(0, line.find(',')));
  EXPECT_THAT(steps, ElementsAre("step", "1", "2", "3", "4", "5"));
  while (!runtime.should_stop()) runtime.run();
  runtime.close();
  h.finish();
  EXPECT_THAT(rows_without_time(h.run_dir() / "history.csv"),
              ElementsAre("step,wall_time,loss", "1,T,10", "2,T,5", "3,T,3.3333333", "4,T,2.5",
                          "5,T,2", "6,T,1.6666666", "7,T,1.4285715", "8,T,1.25"));
}

// Killed after the checkpoint at step 10 with its rows still in memory, then resumed from that
// checkpoint: the file ends with the rows of a job that was never interrupted.
TEST(HistorySaver, AKilledJobResumedFromItsCheckpointEndsWithTheRowsOfAnUninterruptedOne) {
  const std::multimap<std::string, std::string> params = {{"every_n_steps", "5"}};
  const std::vector<std::string> reference = uninterrupted_rows(params, 25);
  ASSERT_THAT(reference, ElementsAre("step,wall_time,loss", "1,T,10", "5,T,2", "10,T,1",
                                     "15,T,0.6666667", "20,T,0.5", "25,T,0.4"));
  TempDir shared;
  const fs::path path = shared / "history.csv";
  std::multimap<std::string, std::string> with_path = params;
  with_path.emplace("path", path.string());
  HistoryJob killed({"history_saver", "checkpoint_saver"});
  killed.workload.script().end_of_data_step = 101;
  killed.add("history", "history_saver", with_path);
  killed.add("checkpoints", "checkpoint_saver", {{"save_steps", "10"}}, 100);
  // The job dies mid-run after 12 steps, once the step-10 checkpoint is on disk: nothing
  // buffered is written.
  const int status = killed.run_and_die_after_checkpoint(12, 10);
  ASSERT_NE(status, -1);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  // Whatever reached the file is whole rows, in order, a beginning of the uninterrupted history.
  const std::string left = read_file(path);
  EXPECT_TRUE(left.empty() || left.back() == '\n');
  const std::vector<std::string> left_rows = rows_without_time(path);
  ASSERT_LE(left_rows.size(), reference.size());
  EXPECT_THAT(left_rows, ElementsAreArray(reference.begin(), reference.begin() + left_rows.size()));

  const auto restored = restore_latest_checkpoint(killed.run_dir() / "checkpoints");
  ASSERT_TRUE(restored && !restored->file.empty());
  ASSERT_EQ(restored->checkpoint.global_step, 10);
  // The rows up to step 10 that had not reached the file travel in the checkpoint.
  const std::string saved = restored->checkpoint.hook_states.at("history").bytes;
  for (const std::string row : {"\n1,", "\n5,", "\n10,"}) {
    if (left.find(row) == std::string::npos) {
      EXPECT_THAT(saved, HasSubstr(row));
    }
  }
  {
    HistoryJob resumed({"history_saver"});
    resumed.workload.set_global_step(10);
    resumed.workload.script().end_of_data_step = 26;
    resumed.runtime().restore_hook_states(restored->checkpoint.hook_states);
    resumed.add("history", "history_saver", with_path);
    EXPECT_EQ(resumed.run().outcome, Outcome::completed);
    resumed.finish();
  }
  EXPECT_EQ(rows_without_time(path), reference);
}

TEST(HistorySaver, APartlyWrittenLastRowIsRemovedBeforeTheJobContinues) {
  TempDir shared;
  const fs::path file = shared / "history.csv";
  write_file(file, "step,wall_time,loss\n1,1700000000.000,10\n10,17000");
  HistoryJob h({"history_saver"});
  h.workload.set_global_step(8);
  h.workload.script().end_of_data_step = 13;
  h.add("history", "history_saver", {{"path", file.string()}});
  h.run();
  h.finish();
  EXPECT_THAT(h.log(), HasSubstr("removed the partly written last row of " + file.string()));
  EXPECT_THAT(rows_without_time(file), ElementsAre("step,wall_time,loss", "1,T,10", "10,T,1"));
}

TEST(HistorySaver, ExistingFileWithOtherColumnsIsAConfigurationError) {
  TempDir shared;
  const fs::path file = shared / "history.csv";
  write_file(file, "step,wall_time,accuracy\n1,1700000000.000,0.5\n");
  HistoryJob h({"history_saver"});
  const std::string error = h.config_error("history", "history_saver", {{"path", file.string()}});
  EXPECT_THAT(error,
              AllOf(HasSubstr("hook 'history' (plugin 'history_saver'"), HasSubstr(file.string()),
                    HasSubstr("'step,wall_time,accuracy'"), HasSubstr("'step,wall_time,loss'")));
  // The file is left as it was.
  EXPECT_EQ(read_file(file), "step,wall_time,accuracy\n1,1700000000.000,0.5\n");
}

TEST(HistorySaver, ExistingScalarColumnThatTurnsOutNonScalarFailsTheHookNamingBothHeaders) {
  TempDir shared;
  const fs::path file = shared / "history.csv";
  write_file(file, "step,wall_time,weights\n1,1700000000.000,2\n");
  HistoryJob h({"history_saver"});
  h.workload.script().end_of_data_step = 4;
  h.add("history", "history_saver",
        {{"path", file.string()}, {"tensors", "weights"}, {"every_n_steps", "2"}});
  h.run();
  h.finish();
  EXPECT_THAT(h.log(), AllOf(HasSubstr("hook 'history'"), HasSubstr(file.string()),
                             HasSubstr("'step,wall_time,weights'"),
                             HasSubstr("'step,wall_time,weights_mean,weights_total'")));
  EXPECT_EQ(read_file(file), "step,wall_time,weights\n1,1700000000.000,2\n");
}

TEST(HistorySaver, FlushSecsMustNotBeNegative) {
  HistoryJob h({"history_saver"});
  EXPECT_THAT(h.config_error("history", "history_saver", {{"flush_secs", "-1"}}),
              AllOf(HasSubstr("hook 'history' (plugin 'history_saver'"),
                    HasSubstr("'flush_secs' must be >= 0")));
}

TEST(HistorySaver, EveryNStepsMustBePositive) {
  HistoryJob h({"history_saver"});
  for (const char* value : {"0", "-3"}) {
    EXPECT_THAT(h.config_error("history", "history_saver", {{"every_n_steps", value}}),
                AllOf(HasSubstr("hook 'history' (plugin 'history_saver'"),
                      HasSubstr("'every_n_steps' must be > 0, got " + std::string(value))));
  }
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
