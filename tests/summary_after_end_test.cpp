// hh.summary/1 after end: a plugin's own thread that writes and flushes summaries once end has
// returned (and before destroy returns) is served, and what it wrote reaches the events file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hookhost/testing.hpp>
#include <string>

#include "event_file_reader.hpp"
#include "plugin_harness.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::ElementsAre;
using ::testing::FloatEq;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;

TEST(SummaryAfterEnd, APluginThreadWritesAndFlushesAfterEndUntilDestroy) {
  PluginHarness h({}, {"late_summary"});
  h.workload.script().end_of_data_step = 4;
  const fs::path report = h.root() / "report.txt";
  h.add("late", "late_summary", {{"report", report.string()}});
  EXPECT_EQ(h.run().outcome, Outcome::completed);
  h.finish();  // end, then destroy: the plugin's thread writes while destroy waits for it

  EXPECT_THAT(lines_of(read_file(report)),
              ElementsAre("add_scalar=0", "add_session_log=0", "flush=0", "destroyed=1"));
  const std::vector<Event> events = events_in(h.run_dir() / "late");
  EXPECT_THAT(scalars(events, "written_after_end"), ElementsAre(Pair(7, FloatEq(2.5f))));
  bool stop_logged = false;
  for (const Event& event : events)
    if (event.session_log_status == 2 && event.step == 7) stop_logged = true;
  EXPECT_TRUE(stop_logged) << "no SessionLog STOP at step 7";
  EXPECT_THAT(h.log(), Not(HasSubstr("misbehaving")));
}

TEST(SummaryAfterEnd, ASandboxedPluginThreadIsServedTheSameWay) {
  TempDir dir;
  const fs::path report = dir.path() / "report.txt";
  HookTest t(fs::path(HOOKHOST_FIXTURE_DIR) / "late_summary.so");
  t.set("report", report.string()).isolation(Isolation::process).steps(2).keep_run_dir();
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::completed) << run.log_text();
  EXPECT_THAT(lines_of(read_file(report)),
              ElementsAre("add_scalar=0", "add_session_log=0", "flush=0", "destroyed=1"));
  EXPECT_THAT(scalars(events_in(run.run_dir / "late"), "written_after_end"),
              ElementsAre(Pair(7, FloatEq(2.5f))));
  EXPECT_THAT(run.log_text(), Not(HasSubstr("misbehaving")));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
