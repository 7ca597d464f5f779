// step_counter driven through the real runtime: how often the rate is logged, the summary it
// writes (and shares with summary_saver), the stuck-step warning, and configuration errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <regex>
#include <sstream>
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
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::Gt;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

// A second writer for the same folder would add its own version record.
long version_records(const std::vector<Event>& events) {
  long count = 0;
  for (const Event& event : events) count += event.file_version.empty() ? 0 : 1;
  return count;
}

std::vector<int64_t> steps_of(const std::vector<std::pair<int64_t, float>>& values) {
  std::vector<int64_t> steps;
  for (const auto& value : values) steps.push_back(value.first);
  return steps;
}

// The rates logged by instance `instance`, in order; the whole message must be the rate.
std::vector<double> logged_rates(const std::string& log, const std::string& instance) {
  const std::regex rate_pattern(R"(global_step/sec: ([0-9.]+(e[+-][0-9]+)?))");
  std::vector<double> rates;
  std::smatch match;
  for (const std::string& message : info_lines(log, instance))
    if (std::regex_match(message, match, rate_pattern)) rates.push_back(std::stod(match[1].str()));
  return rates;
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

// The scripted workload seen through a global step that never moves (like a SyncReplicasOptimizer
// worker's): it reads 7 for the `steps` steps the workload runs, then the data ends.
class StuckStepSession : public Session {
 public:
  explicit StuckStepSession(int steps)
      : workload_([steps] {
          detail::Script script;
          script.end_of_data_step = steps + 1;
          return script;
        }()) {}
  void create(int creation) override { workload_.create(creation); }
  int64_t global_step() const override { return 7; }
  std::vector<std::string> fetchable() const override { return workload_.fetchable(); }
  std::vector<std::string> feedable() const override { return workload_.feedable(); }
  StepResult run(const std::vector<std::string>& fetches, const TensorMap& feeds) override {
    return workload_.run(fetches, feeds);
  }

 private:
  ScriptedWorkload workload_;
};

TEST(StepCounter, FirstTriggerOnlySetsTheBaselineThenLogsEveryNSteps) {
  PluginHarness h({"step_counter"});
  h.add("counter", "step_counter", {{"every_n_steps", "2"}});
  EXPECT_EQ(h.run().outcome, Outcome::completed);
  // Triggers at global steps 1 (baseline, silent), 3, 5, 7 and 9 of the 10-step job.
  EXPECT_THAT(logged_rates(h.log(), "counter"), AllOf(SizeIs(4), Each(Gt(0.0))));
}

TEST(StepCounter, DefaultsToEvery100Steps) {
  PluginHarness h({"step_counter"});
  h.workload.script().end_of_data_step = 251;
  h.add("counter", "step_counter");
  h.run();
  // Baseline at step 1, logs at 101 and 201.
  EXPECT_THAT(logged_rates(h.log(), "counter"), SizeIs(2));
}

TEST(StepCounter, EveryNSecsLogsEachStepOnceTheIntervalHasPassed) {
  PluginHarness h({"step_counter"});
  h.workload.script().end_of_data_step = 5;
  h.add("counter", "step_counter", {{"every_n_secs", "0.001"}});
  run_with_pauses(h, std::chrono::milliseconds(5));
  EXPECT_THAT(logged_rates(h.log(), "counter"), SizeIs(3));
}

TEST(StepCounter, EveryNSecsLogsNothingBeforeTheIntervalPasses) {
  PluginHarness h({"step_counter"});
  h.add("counter", "step_counter", {{"every_n_secs", "3600"}});
  h.run();
  EXPECT_THAT(logged_rates(h.log(), "counter"), IsEmpty());
}

TEST(StepCounter, WritesNoSummaryUnlessAsked) {
  PluginHarness h({"step_counter"});
  h.add("counter", "step_counter", {{"every_n_steps", "2"}});
  h.run();
  EXPECT_THAT(event_files(h.run_dir()), IsEmpty());
}

TEST(StepCounter, SummariesWritesTheLoggedRateAtTheLiveStepIntoTheRunDirectory) {
  PluginHarness h({"step_counter"});
  h.add("counter", "step_counter", {{"every_n_steps", "2"}, {"summaries", "true"}});
  h.run();
  const std::vector<std::pair<int64_t, float>> rates =
      scalars(events_in(h.run_dir()), "global_step/sec");
  EXPECT_THAT(steps_of(rates), ElementsAre(3, 5, 7, 9));
  // The summary holds the same rate as the log line (printed with %g: 6 significant digits).
  const std::vector<double> logged = logged_rates(h.log(), "counter");
  ASSERT_THAT(logged, SizeIs(rates.size()));
  for (std::size_t i = 0; i < rates.size(); ++i) {
    EXPECT_GT(rates[i].second, 0.0f);
    EXPECT_NEAR(rates[i].second, logged[i], 1e-5 * logged[i]) << "trigger " << i;
  }
}

TEST(StepCounter, OutputDirWritesTheSummaryThere) {
  PluginHarness h({"step_counter"});
  const fs::path output = h.root() / "rates";
  h.add("counter", "step_counter", {{"every_n_steps", "2"}, {"output_dir", output.string()}});
  h.run();
  EXPECT_THAT(event_files(h.run_dir()), IsEmpty());
  EXPECT_THAT(steps_of(scalars(events_in(output), "global_step/sec")), ElementsAre(3, 5, 7, 9));
}

TEST(StepCounter, SharesOneEventsFileWithSummarySaverInTheRunDirectory) {
  PluginHarness h({"step_counter", "summary_saver"});
  h.add("counter", "step_counter", {{"every_n_steps", "2"}, {"summaries", "true"}});
  h.add("sums", "summary_saver", {{"save_steps", "5"}});
  h.run();
  const std::vector<Event> events = events_in(h.run_dir());  // expects exactly one file
  ASSERT_THAT(events, Not(IsEmpty()));
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_EQ(version_records(events), 1);
  EXPECT_THAT(steps_of(scalars(events, "global_step/sec")), ElementsAre(3, 5, 7, 9));
  EXPECT_THAT(steps_of(scalars(events, "loss")), ElementsAre(1, 6));
}

TEST(StepCounter, SharesOneEventsFileWithSummarySaverInAGivenOutputDir) {
  PluginHarness h({"step_counter", "summary_saver"});
  h.add("counter", "step_counter", {{"every_n_steps", "2"}, {"output_dir", "tb"}});
  // Spelled differently on purpose: one folder, one writer, one file.
  h.add("sums", "summary_saver", {{"save_steps", "5"}, {"output_dir", "tb/"}});
  h.run();
  EXPECT_THAT(event_files(h.run_dir()), IsEmpty());
  const std::vector<Event> events = events_in(h.run_dir() / "tb");
  EXPECT_EQ(version_records(events), 1);
  EXPECT_THAT(scalars(events, "global_step/sec"), SizeIs(4));
  EXPECT_THAT(scalars(events, "loss"), SizeIs(2));
}

TEST(StepCounter, WarnsAtMostFiveTimesWhenTheGlobalStepDoesNotIncrease) {
  PluginHarness h({"step_counter"});
  StuckStepSession stuck(8);
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  sink->set_pattern("[%n] [%l] %v");
  RuntimeOptions options;
  options.run_dir = h.run_dir();
  options.logger = std::make_shared<spdlog::logger>("hookhost", sink);
  Runtime runtime(stuck, options);
  const auto plugin = h.plugin("step_counter");
  runtime.add_hook(plugin, HookSettings{"counter"},
                   resolve_params(plugin->metadata(), "counter", {{"every_n_steps", "1"}}));
  EXPECT_EQ(runtime.run_to_end().steps_run, 8);
  // Steps 2 to 8 each see the step of the previous one (7 times); only the first 5 warn.
  EXPECT_EQ(count_occurrences(log.str(),
                              "[counter] [warning] global step has not increased since the "
                              "last step (it is still 7)"),
            5);
  // Without progress there is no rate to report.
  EXPECT_THAT(logged_rates(log.str(), "counter"), IsEmpty());
}

TEST(StepCounter, DoesNotWarnWhileTheGlobalStepIncreases) {
  PluginHarness h({"step_counter"});
  h.add("counter", "step_counter", {{"every_n_steps", "1"}});
  h.run();
  EXPECT_THAT(h.log(), Not(HasSubstr("has not increased")));
  EXPECT_THAT(logged_rates(h.log(), "counter"), SizeIs(9));
}

// ---- configuration errors name the hook instance and the keys --------------------------------

TEST(StepCounterConfig, BothEveryNStepsAndEveryNSecsIsAnError) {
  PluginHarness h({"step_counter"});
  EXPECT_THAT(
      h.config_error("counter", "step_counter", {{"every_n_steps", "100"}, {"every_n_secs", "5"}}),
      AllOf(HasSubstr("hook 'counter' (plugin 'step_counter'"), HasSubstr("'every_n_steps'"),
            HasSubstr("'every_n_secs'"), HasSubstr("not both")));
}

TEST(StepCounterConfig, EitherOneAloneOrNeitherIsAccepted) {
  PluginHarness h({"step_counter"});
  EXPECT_EQ(h.config_error("steps", "step_counter", {{"every_n_steps", "10"}}), "");
  EXPECT_EQ(h.config_error("secs", "step_counter", {{"every_n_secs", "2.5"}}), "");
  EXPECT_EQ(h.config_error("neither", "step_counter", {}), "");
}

TEST(StepCounterConfig, NonPositiveEveryNStepsIsAnErrorNamingTheKey) {
  PluginHarness h({"step_counter"});
  for (const std::string value : {"0", "-1"}) {
    SCOPED_TRACE("every_n_steps=" + value);
    EXPECT_THAT(h.config_error("counter", "step_counter", {{"every_n_steps", value}}),
                AllOf(HasSubstr("hook 'counter' (plugin 'step_counter'"),
                      HasSubstr("invalid every_n_steps=" + value + " (must be > 0)")));
  }
}

TEST(StepCounterConfig, NonPositiveEveryNSecsIsAnErrorNamingTheKey) {
  PluginHarness h({"step_counter"});
  for (const std::string value : {"0", "-2.5"}) {
    SCOPED_TRACE("every_n_secs=" + value);
    EXPECT_THAT(h.config_error("counter", "step_counter", {{"every_n_secs", value}}),
                AllOf(HasSubstr("hook 'counter' (plugin 'step_counter'"),
                      HasSubstr("invalid every_n_secs=" + value + " (must be > 0)")));
  }
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
