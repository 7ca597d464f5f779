// history_saver driven through the real runtime: which steps get a row, the columns, continuing
// the same file on resume, rows surviving SIGKILL, and configuration errors.
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
#include <vector>

#include "plugin_harness.hpp"

namespace hookhost::testing {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
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

double now_secs() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TEST(HistorySaver, RecordsTheFirstStepAndEveryNthGlobalStep) {
  PluginHarness h({"history_saver"});
  h.session.end_at = 25;
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
  EXPECT_THAT(h.session.fetches_seen[0], ElementsAre("loss"));
  EXPECT_THAT(h.session.fetches_seen[1], IsEmpty());
  EXPECT_THAT(h.session.fetches_seen[9], ElementsAre("loss"));
}

TEST(HistorySaver, NonScalarTensorsGetMeanAndTotalColumns) {
  PluginHarness h({"history_saver"});
  h.session.end_at = 6;
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
    PluginHarness h({"history_saver"});
    h.session.end_at = 12;
    h.add("history", "history_saver", {{"path", path}});
    h.run();
  }
  EXPECT_THAT(rows_without_time(path), ElementsAre("step,wall_time,loss", "1,T,10", "10,T,1"));
  {
    // The resumed job restarts from an older checkpoint (step 8) and replays steps 9 to 12.
    PluginHarness h({"history_saver"});
    h.session.step = 8;
    h.session.end_at = 25;
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

TEST(HistorySaver, RecordedRowsSurviveSigkill) {
  TempDir shared;
  const std::string path = (shared / "history.csv").string();
  PluginHarness h({"history_saver"});
  h.session.end_at = 100;
  h.add("history", "history_saver", {{"path", path}, {"every_n_steps", "5"}});
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The job dies mid-run: no end(), no destructor, no flush of anything buffered.
    try {
      if (!h.runtime().start()) ::_exit(2);
      for (int i = 0; i < 12; ++i) h.runtime().run();
    } catch (...) {
      ::_exit(3);
    }
    ::raise(SIGKILL);
    ::_exit(4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_THAT(rows_without_time(path),
              ElementsAre("step,wall_time,loss", "1,T,10", "5,T,2", "10,T,1"));
}

TEST(HistorySaver, ExistingFileWithOtherColumnsIsAConfigurationError) {
  TempDir shared;
  const fs::path file = shared / "history.csv";
  write_file(file, "step,wall_time,accuracy\n1,1700000000.000,0.5\n");
  PluginHarness h({"history_saver"});
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
  PluginHarness h({"history_saver"});
  h.session.end_at = 3;
  h.add("history", "history_saver",
        {{"path", file.string()}, {"tensors", "weights"}, {"every_n_steps", "2"}});
  h.run();
  h.finish();
  EXPECT_THAT(h.log(), AllOf(HasSubstr("hook 'history'"), HasSubstr(file.string()),
                             HasSubstr("'step,wall_time,weights'"),
                             HasSubstr("'step,wall_time,weights_mean,weights_total'")));
  EXPECT_EQ(read_file(file), "step,wall_time,weights\n1,1700000000.000,2\n");
}

TEST(HistorySaver, EveryNStepsMustBePositive) {
  PluginHarness h({"history_saver"});
  for (const char* value : {"0", "-3"}) {
    EXPECT_THAT(h.config_error("history", "history_saver", {{"every_n_steps", value}}),
                AllOf(HasSubstr("hook 'history' (plugin 'history_saver'"),
                      HasSubstr("'every_n_steps' must be > 0, got " + std::string(value))));
  }
}

}  // namespace
}  // namespace hookhost::testing
