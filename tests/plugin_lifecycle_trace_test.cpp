// lifecycle_trace driven through the real runtime: the exact JSON lines it appends for each call,
// shared files, fetched values, how the job ended, and JSON escaping.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plugin_harness.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

TEST(LifecycleTrace, InstancesSharingTheDefaultFileInterleaveInCallOrder) {
  PluginHarness h({"lifecycle_trace"});
  h.workload.script().end_of_data_step = 3;
  h.workload.script().values["loss"] = loss_of_ten_over_step;
  h.add("a", "lifecycle_trace", {{"fetch", "loss"}});
  h.add("b", "lifecycle_trace");
  EXPECT_EQ(h.run().outcome, Outcome::completed);
  h.finish();
  EXPECT_THAT(
      lines_of(h.run_dir() / "trace.jsonl"),
      ElementsAre(
          R"({"instance":"a","callback":"begin","global_step":null})",
          R"({"instance":"b","callback":"begin","global_step":null})",
          R"({"instance":"a","callback":"after_create_session","global_step":0})",
          R"({"instance":"b","callback":"after_create_session","global_step":0})",
          R"({"instance":"a","callback":"before_run","global_step":0})",
          R"({"instance":"b","callback":"before_run","global_step":0})",
          R"({"instance":"a","callback":"after_run","global_step":0,"fetched":{"loss":10}})",
          R"({"instance":"b","callback":"after_run","global_step":0,"fetched":{}})",
          R"({"instance":"a","callback":"before_run","global_step":1})",
          R"({"instance":"b","callback":"before_run","global_step":1})",
          R"({"instance":"a","callback":"after_run","global_step":1,"fetched":{"loss":5}})",
          R"({"instance":"b","callback":"after_run","global_step":1,"fetched":{}})",
          // The third step meets the end of the data: before_run, but no after_run.
          R"({"instance":"a","callback":"before_run","global_step":2})",
          R"({"instance":"b","callback":"before_run","global_step":2})",
          R"({"instance":"a","callback":"end","global_step":2,"outcome":"completed","reason":"end of data: the script has no data for step 3"})",
          R"({"instance":"b","callback":"end","global_step":2,"outcome":"completed","reason":"end of data: the script has no data for step 3"})"));
}

TEST(LifecycleTrace, AfterRunShowsEveryFetchedValueInRequestOrder) {
  PluginHarness h({"lifecycle_trace"});
  h.workload.script().end_of_data_step = 4;
  h.workload.script().values["loss"] = loss_of_ten_over_step;
  h.add("t", "lifecycle_trace",
        {{"path", "traces/values.jsonl"}, {"fetch", "weights,loss,global_step,learning_rate"}});
  h.run();
  h.finish();
  // A relative path lives in the run directory; folders are created.
  const std::vector<std::string> lines = lines_of(h.run_dir() / "traces" / "values.jsonl");
  ASSERT_THAT(lines, SizeIs(10));
  EXPECT_EQ(
      lines[3],
      R"({"instance":"t","callback":"after_run","global_step":0,"fetched":{"weights":[1,2,3],"loss":10,"global_step":1,"learning_rate":0.1}})");
  // f32 values in their shortest exact form: 10/3 as a float, not as the nearest double.
  EXPECT_EQ(
      lines[7],
      R"({"instance":"t","callback":"after_run","global_step":2,"fetched":{"weights":[1,2,3],"loss":3.3333333,"global_step":3,"learning_rate":0.1}})");
}

TEST(LifecycleTrace, EndReportsAStopRequestedByAnotherHook) {
  TempDir scratch;
  PluginHarness h({"lifecycle_trace"}, {"scripted"});
  h.add("trace", "lifecycle_trace");
  h.add("stopper", "scripted",
        {{"trace", (scratch / "scripted.txt").string()}, {"stop_at_iteration", "2"}});
  EXPECT_EQ(h.run().outcome, Outcome::stopped);
  h.finish();
  const std::vector<std::string> lines = lines_of(h.run_dir() / "trace.jsonl");
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[lines.size() - 2],
            R"({"instance":"trace","callback":"after_run","global_step":2,"fetched":{}})");
  EXPECT_EQ(
      lines.back(),
      R"({"instance":"trace","callback":"end","global_step":3,"outcome":"stopped","reason":"hook 'stopper': asked in after_run"})");
}

TEST(LifecycleTrace, EndReportsAFailedJobAndTheFailedStepHasNoAfterRun) {
  PluginHarness h({"lifecycle_trace"});
  // The attempt at step 2 fails: the job fails at global step 1.
  h.workload.script().faults[2].push_back({StepStatus::error, "injected fault"});
  h.add("trace", "lifecycle_trace");
  EXPECT_EQ(h.run().outcome, Outcome::failed);
  h.finish();
  EXPECT_THAT(
      lines_of(h.run_dir() / "trace.jsonl"),
      ElementsAre(
          R"({"instance":"trace","callback":"begin","global_step":null})",
          R"({"instance":"trace","callback":"after_create_session","global_step":0})",
          R"({"instance":"trace","callback":"before_run","global_step":0})",
          R"({"instance":"trace","callback":"after_run","global_step":0,"fetched":{}})",
          R"({"instance":"trace","callback":"before_run","global_step":1})",
          R"({"instance":"trace","callback":"end","global_step":1,"outcome":"failed","reason":"the workload failed at global step 1: injected fault"})"));
}

TEST(LifecycleTrace, EscapesQuotesBackslashesControlCharactersAndInvalidUtf8) {
  TempDir scratch;
  PluginHarness h({"lifecycle_trace"}, {"scripted"});
  h.workload.script().end_of_data_step = 6;
  // Instance names are free text in the runtime API; the host quotes the stopper's in its reason.
  h.add("tab\there \"quoted\" back\\slash \x01 caf\xc3\xa9 bad\xff", "lifecycle_trace");
  h.add("say \"stop\"", "scripted",
        {{"trace", (scratch / "scripted.txt").string()}, {"stop_at_iteration", "0"}});
  h.run();
  h.finish();
  const std::vector<std::string> lines = lines_of(h.run_dir() / "trace.jsonl");
  ASSERT_THAT(lines, SizeIs(5));
  const std::string instance =
      R"("instance":"tab\there \"quoted\" back\\slash \u0001 café bad\ufffd")";
  EXPECT_EQ(lines[0], "{" + instance + R"(,"callback":"begin","global_step":null})");
  EXPECT_EQ(
      lines[4],
      "{" + instance +
          R"(,"callback":"end","global_step":1,"outcome":"stopped","reason":"hook 'say \"stop\"': asked in after_run"})");
}

TEST(LifecycleTrace, AFetchTheWorkloadCannotServeDisablesTheHookAndItsEndSaysWhy) {
  PluginHarness h({"lifecycle_trace"});
  h.add("trace", "lifecycle_trace", {{"fetch", "loss,accuracy"}});
  EXPECT_EQ(h.run().outcome, Outcome::completed);  // the other hooks and the job go on
  h.finish();
  const std::vector<std::string> lines = lines_of(h.run_dir() / "trace.jsonl");
  ASSERT_THAT(lines, SizeIs(4));
  EXPECT_EQ(lines[2], R"({"instance":"trace","callback":"before_run","global_step":0})");
  EXPECT_THAT(lines[3],
              AllOf(HasSubstr(R"("callback":"end","global_step":10,"outcome":"failed")"),
                    HasSubstr("this hook was disabled: before_run failed: before_run asked to "
                              "fetch 'accuracy', which the workload does not provide")));
}

TEST(LifecycleTrace, UnwritablePathIsAConfigurationErrorNamingTheInstanceAndKey) {
  PluginHarness h({"lifecycle_trace"});
  write_file(h.root() / "a_file", "not a folder");
  const std::string error = h.config_error(
      "trace", "lifecycle_trace", {{"path", (h.root() / "a_file" / "trace.jsonl").string()}});
  EXPECT_THAT(error, AllOf(HasSubstr("hook 'trace' (plugin 'lifecycle_trace'"),
                           HasSubstr("parameter 'path'"), HasSubstr("a_file/trace.jsonl")));
  EXPECT_THAT(h.config_error("fine", "lifecycle_trace", {}), IsEmpty());
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
