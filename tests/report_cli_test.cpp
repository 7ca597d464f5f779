// `hookhost run` writes RUN_DIR/report.html and run-record.jsonl; `hookhost report` regenerates
// the page and refuses what is not a run directory. The real program, real plugins, real files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "process.hpp"
#include "report/run_record.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kJob = R"(
[run]
run_dir = run
[workload]
name = linreg
epochs = 100
[hook.stop]
plugin = stop_at_step
last_step = 250
[hook.summaries]
plugin = summary_saver
save_steps = 10
tensors = loss
[hook.checkpoints]
plugin = checkpoint_saver
save_steps = 100
)";

TEST(ReportCli, RunWritesTheRecordAndTheReportAndReportRegeneratesIt) {
  TempDir dir;
  write_file(dir / "job.ini", kJob);
  const ProcessResult first = run_hookhost({"run", "--config", "job.ini"}, dir.path());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const fs::path run = dir / "run";
  const fs::path report = run / "report.html";
  // The report's line comes right after the outputs line.
  EXPECT_THAT(first.out,
              HasSubstr("  outputs: " + run.string() + "\n  report: " + report.string() + "\n"));
  ASSERT_TRUE(fs::exists(report));
  EXPECT_FALSE(fs::exists(run / "report.html.tmp"));

  const RunRecord record = read_run_record(run / kRunRecordFile);
  ASSERT_EQ(record.starts.size(), 1u);
  EXPECT_FALSE(record.starts[0].resume);
  EXPECT_THAT(record.starts[0].configuration,
              AllOf(HasSubstr("[hook.stop] plugin = stop_at_step"), HasSubstr("last_step = 250")));
  ASSERT_EQ(record.starts[0].plugins.size(), 3u);
  for (const auto& plugin : record.starts[0].plugins) EXPECT_EQ(plugin.sha256.size(), 64u);
  ASSERT_EQ(record.costs.size(), 1u);
  EXPECT_EQ(record.costs[0].outcome, "stopped");
  EXPECT_EQ(record.costs[0].global_step, 250);
  std::vector<std::string> kinds;
  for (const auto& e : record.events) kinds.push_back(e.kind);
  EXPECT_THAT(kinds, ::testing::Contains("checkpoint"));
  EXPECT_THAT(kinds, ::testing::Contains("stop"));
  EXPECT_EQ(kinds.back(), "end");

  const std::string html = read_file(report);
  EXPECT_THAT(html, AllOf(HasSubstr("<td>checkpoint</td>"), HasSubstr("model.ckpt-250"),
                          HasSubstr("<td>stop</td>"), HasSubstr("checkpoints · end"),
                          HasSubstr("<td>summaries</td>"), HasSubstr("<h3>loss</h3>"),
                          HasSubstr("data-points=\"25\""), HasSubstr("25 points, all shown"),
                          HasSubstr(record.starts[0].plugins[0].sha256)));

  // A second run resumes: its start line says so, at the checkpoint's step.
  const ProcessResult second =
      run_hookhost({"run", "--config", "job.ini", "--set", "hook.stop.last_step=260"}, dir.path());
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const RunRecord resumed = read_run_record(run / kRunRecordFile);
  ASSERT_EQ(resumed.starts.size(), 2u);
  EXPECT_TRUE(resumed.starts[1].resume);
  EXPECT_EQ(resumed.starts[1].global_step, 250);
  EXPECT_EQ(resumed.costs.size(), 2u);
  EXPECT_THAT(read_file(report), HasSubstr("resumed from the checkpoint at global step 250"));

  // `hookhost report` writes it again, and elsewhere on request.
  fs::remove(report);
  const ProcessResult again = run_hookhost({"report", "run"}, dir.path());
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("report: run/report.html"));
  EXPECT_TRUE(fs::exists(report));
  const ProcessResult elsewhere =
      run_hookhost({"report", "run", "--output", "copy.html"}, dir.path());
  EXPECT_EQ(elsewhere.exit_code, 0) << elsewhere.err;
  EXPECT_EQ(read_file(dir / "copy.html"), read_file(report));
}

TEST(ReportCli, WhatIsNotARunDirectoryIsAUsageErrorThatSaysWhatToDo) {
  TempDir dir;
  const ProcessResult missing = run_hookhost({"report", "/nonexistent"}, dir.path());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, AllOf(HasSubstr("/nonexistent"), HasSubstr("not a directory"),
                                 HasSubstr("run directory")));
  fs::create_directory(dir / "empty");
  const ProcessResult empty = run_hookhost({"report", "empty"}, dir.path());
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_THAT(empty.err, AllOf(HasSubstr("empty/run-record.jsonl"), HasSubstr("hookhost run")));
  EXPECT_FALSE(fs::exists(dir / "empty" / "report.html"));
  EXPECT_EQ(run_hookhost({"report"}, dir.path()).exit_code, 2);
  EXPECT_EQ(run_hookhost({"report", "a", "b"}, dir.path()).exit_code, 2);
  EXPECT_EQ(run_hookhost({"report", "--bogus"}, dir.path()).exit_code, 2);
  const ProcessResult help = run_hookhost({"report", "--help"}, dir.path());
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, AllOf(HasSubstr("hookhost report RUN_DIR"), HasSubstr("--output"),
                              HasSubstr("run-record.jsonl"), HasSubstr("Exit status")));
  EXPECT_THAT(run_hookhost({"--help"}, dir.path()).out, HasSubstr("hookhost report RUN_DIR"));
}

// A device in the record's place (here /dev/zero, which never ends) is refused, not read.
TEST(ReportCli, ARunRecordThatIsNoRegularFileIsRefusedNotRead) {
  TempDir dir;
  fs::create_directory(dir / "run");
  fs::create_symlink("/dev/zero", dir / "run" / "run-record.jsonl");
  const ProcessResult report = run_hookhost({"report", "run"}, dir.path());
  EXPECT_NE(report.exit_code, 0);
  EXPECT_THAT(report.err,
              AllOf(HasSubstr("run/run-record.jsonl"), HasSubstr("not a regular file")));
  EXPECT_FALSE(fs::exists(dir / "run" / "report.html"));
}

// A page `hookhost report` cannot write is exit status 1 naming the file; a report `hookhost run`
// cannot write is a warning, and the job still succeeds (operations.md).
TEST(ReportCli, AnUnwritablePageIsExit1ButOnlyAWarningForTheJob) {
  TempDir dir;
  write_file(dir / "job.ini", kJob);
  const fs::path run = dir / "run";
  fs::create_directories(run / "report.html");  // a folder where the page goes
  const ProcessResult job = run_hookhost({"run", "--config", "job.ini"}, dir.path());
  EXPECT_EQ(job.exit_code, 0) << job.err;
  EXPECT_THAT(job.err, HasSubstr("warning: no run report"));
  EXPECT_THAT(job.out + job.err, HasSubstr((run / "report.html").string()));
  EXPECT_TRUE(fs::exists(run / kRunRecordFile));

  const fs::path nowhere = dir / "no" / "such" / "folder" / "page.html";
  const ProcessResult report =
      run_hookhost({"report", run.string(), "--output", nowhere.string()}, dir.path());
  EXPECT_EQ(report.exit_code, 1) << report.out << report.err;
  EXPECT_THAT(report.err, HasSubstr(nowhere.string()));
  EXPECT_FALSE(fs::exists(nowhere));
}

TEST(ReportCli, CheckWritesNoRecordAndNoReport) {
  TempDir dir;
  write_file(dir / "job.ini", kJob);
  const ProcessResult check = run_hookhost({"run", "--check", "--config", "job.ini"}, dir.path());
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_THAT(check.out, Not(HasSubstr("report:")));
  EXPECT_FALSE(fs::exists(dir / "run"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
