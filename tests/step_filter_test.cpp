// every_n_steps, at_steps and first_n in a [hook.NAME] section: the host calls before_run and
// after_run on the steps they select only, in process and sandboxed; a plugin that declares a
// parameter of that name keeps it; bad values stop the job before it starts, naming file, line
// and key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::Not;

class StepFilterJob : public ::testing::Test {
 protected:
  // linreg for 5 epochs (20 steps, global steps 0..19) with a lifecycle trace filtered by `keys`.
  ProcessResult run(const std::string& keys, const std::string& run_keys = "",
                    const std::vector<std::string>& more = {}) {
    write_file(dir_ / "job.ini", "[run]\nrun_dir = run\n" + run_keys +
                                     "\n[workload]\nname = linreg\nepochs = 5\n\n"
                                     "[hook.trace]\nplugin = lifecycle_trace\n" +
                                     keys + "\n");
    std::vector<std::string> args{"run", "--config", (dir_ / "job.ini").string(), "--fresh"};
    args.insert(args.end(), more.begin(), more.end());
    ProcessResult r = run_hookhost(args, dir_.path());
    r.out += r.err;
    return r;
  }
  fs::path trace_file() const {
    const fs::path own = dir_ / "run" / "hooks" / "trace" / "trace.jsonl";  // confined
    return fs::exists(own) ? own : dir_ / "run" / "trace.jsonl";
  }
  // The global steps of the trace's `callback` lines.
  std::vector<int> steps_of(const std::string& callback) const {
    const std::string text = read_file(trace_file());
    const std::regex line("\"callback\":\"" + callback + "\",\"global_step\":(\\d+)");
    std::vector<int> steps;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), line);
         it != std::sregex_iterator(); ++it)
      steps.push_back(std::stoi((*it)[1]));
    return steps;
  }
  size_t lines_of_callback(const std::string& callback) const {
    const std::string text = read_file(trace_file());
    size_t n = 0;
    for (size_t at = 0;
         (at = text.find("\"callback\":\"" + callback + "\"", at)) != std::string::npos; ++at)
      ++n;
    return n;
  }

  TempDir dir_;
};

TEST_F(StepFilterJob, WithoutAFilterEveryStepIsCalled) {
  const ProcessResult r = run("");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(steps_of("after_run").size(), 20u);
  EXPECT_EQ(steps_of("before_run").size(), 21u);  // the 21st finds the end of the data
}

TEST_F(StepFilterJob, EveryNStepsCallsTheMultiplesOfN) {
  const ProcessResult r = run("every_n_steps = 3");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // Global steps 0..19 ran; step 20's before_run finds the end of the data (not a multiple).
  EXPECT_THAT(steps_of("before_run"), ElementsAre(0, 3, 6, 9, 12, 15, 18));
  EXPECT_THAT(steps_of("after_run"), ElementsAre(0, 3, 6, 9, 12, 15, 18));
  // The other callbacks are never filtered.
  EXPECT_EQ(lines_of_callback("begin"), 1u);
  EXPECT_EQ(lines_of_callback("after_create_session"), 1u);
  EXPECT_EQ(lines_of_callback("end"), 1u);
  // The effective configuration says it.
  EXPECT_THAT(r.out, HasSubstr("call_timeout_ms = 0, every_n_steps = 3"));
}

// The last step's before_run is called when it is selected, even though the data ends there.
TEST_F(StepFilterJob, EveryNStepsAtTheLastBeforeRun) {
  const ProcessResult r = run("every_n_steps = 5");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(steps_of("before_run"), ElementsAre(0, 5, 10, 15, 20));
  EXPECT_THAT(steps_of("after_run"), ElementsAre(0, 5, 10, 15));
}

TEST_F(StepFilterJob, AtStepsCallsTheListedStepsInAnyOrderOnce) {
  const ProcessResult r = run("at_steps = 19, 2,7 , 7, 0, 400");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(steps_of("after_run"), ElementsAre(0, 2, 7, 19));
  EXPECT_THAT(r.out, HasSubstr("at_steps = 0,2,7,19,400"));
}

TEST_F(StepFilterJob, FirstNCallsTheFirstStepsOfTheRun) {
  const ProcessResult r = run("first_n = 2");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(steps_of("after_run"), ElementsAre(0, 1));
}

TEST_F(StepFilterJob, FiltersCombineAsAnd) {
  const ProcessResult r = run("every_n_steps = 2\nfirst_n = 7");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(steps_of("after_run"), ElementsAre(0, 2, 4, 6));
}

// The largest every_n_steps: only global step 0 is a multiple.
TEST_F(StepFilterJob, TheLargestEveryNStepsCallsStepZeroOnly) {
  const ProcessResult r = run("every_n_steps = 4611686018427387904");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(steps_of("after_run"), ElementsAre(0));
}

// A sandboxed hook: the skipped steps cost no round trip (the runner never sees them).
TEST_F(StepFilterJob, ASandboxedHookIsFilteredTheSame) {
  const ProcessResult r = run("isolation = process\nevery_n_steps = 4");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(fs::exists(dir_ / "run" / "hooks" / "trace" / "trace.jsonl")) << r.out;
  EXPECT_THAT(steps_of("after_run"), ElementsAre(0, 4, 8, 12, 16));
  // The summary counts the calls made, not the steps.
  EXPECT_TRUE(std::regex_search(r.out, std::regex("before_run\\s+6\\s"))) << r.out;
}

// Through --set, like any hook key.
TEST_F(StepFilterJob, ASetArgumentFilters) {
  const ProcessResult r = run("", "", {"--set", "hook.trace.at_steps=3"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(steps_of("after_run"), ElementsAre(3));
}

// history_saver declares every_n_steps: the parameter stays its own (it writes a row every N
// steps and at the first), and as its declared cadence the host calls it on those steps only:
// global steps 0 (its first), 6, 13 and 20 (the step that found the end of the data, before_run
// only), whose next global step is a multiple of 7.
TEST_F(StepFilterJob, APluginThatDeclaresTheKeyKeepsIt) {
  write_file(dir_ / "job.ini",
             "[run]\nrun_dir = run\n\n[workload]\nname = linreg\nepochs = 5\n\n"
             "[hook.history]\nplugin = history_saver\nevery_n_steps = 7\n");
  ProcessResult r =
      run_hookhost({"run", "--config", (dir_ / "job.ini").string(), "--fresh"}, dir_.path());
  r.out += r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out,
              AllOf(HasSubstr("every_n_steps = 7"), HasSubstr("declared cadence every 7 steps")));
  EXPECT_TRUE(std::regex_search(r.out, std::regex("before_run\\s+4\\s"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("after_run\\s+3\\s"))) << r.out;
  std::vector<std::string> steps;
  for (const auto& line : lines_of(dir_ / "run" / "history.csv"))
    steps.push_back(line.substr(0, line.find(',')));
  EXPECT_THAT(steps, ElementsAre("step", "1", "7", "14"));
}

// The cadence comes from the plugin's note: describe shows it, and a plugin without one is
// called every step.
TEST_F(StepFilterJob, DescribeShowsADeclaredCadence) {
  const ProcessResult history = run_hookhost({"plugins", "describe", "history_saver"}, dir_.path());
  ASSERT_EQ(history.exit_code, 0) << history.err;
  EXPECT_THAT(history.out, HasSubstr("cadence: the first step and each step after which the "
                                     "global step is a multiple of its parameter every_n_steps"));
  const ProcessResult counter = run_hookhost({"plugins", "describe", "step_counter"}, dir_.path());
  ASSERT_EQ(counter.exit_code, 0) << counter.err;
  EXPECT_THAT(counter.out, HasSubstr("cadence: every step"));
}

struct BadValue {
  const char* key_line;
  const char* message;
};

const BadValue kBadValues[] = {
    {"every_n_steps = 0", "job.ini:10: [hook.trace] every_n_steps: expected an integer from 1 to"},
    {"every_n_steps = -3", "expected an integer from 1 to 4611686018427387904"},
    {"every_n_steps = 4611686018427387905", "got '4611686018427387905'"},
    {"every_n_steps = 2x", "got '2x'"},
    {"every_n_steps = ", "got ''"},
    {"first_n = 0", "job.ini:10: [hook.trace] first_n: expected an integer from 1 to"},
    {"at_steps = 1,,2",
     "job.ini:10: [hook.trace] at_steps: expected a comma-separated list of "
     "global steps (integers >= 0); '' is not one"},
    {"at_steps = 1,-2", "'-2' is not one"},
    {"at_steps = ", "'' is not one"},
};

TEST_F(StepFilterJob, BadValuesStopTheJobNamingFileLineAndKey) {
  for (const BadValue& bad : kBadValues) {
    SCOPED_TRACE(bad.key_line);
    const ProcessResult r = run(bad.key_line);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_THAT(r.out, HasSubstr(bad.message));
    EXPECT_FALSE(fs::exists(trace_file()));
  }
}

TEST_F(StepFilterJob, TooManyAtStepsAreRefused) {
  std::string steps;
  // Appended in two steps: GCC 12 -O3 warns falsely (-Wstringop-overflow) on const char* + string.
  for (int i = 0; i <= 100000; ++i) {
    if (i) steps += ',';
    steps += std::to_string(i);
  }
  const ProcessResult r = run("at_steps = " + steps);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("lists more than 100000 steps; use every_n_steps"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
