// The early_stopping plugin (Keras/Lightning EarlyStopping) driven through the real runtime. A
// `scripted` fixture hook feeds a constant learning_rate, which the workload returns as fetched,
// to get a monitored value that never improves.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "plugin_harness.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// A job whose learning_rate stays at `lr` on every step; runs up to 50 steps.
class FlatValueJob {
 public:
  explicit FlatValueJob(const std::string& lr = "0.5") {
    h.workload.script().end_of_data_step = 51;
    h.add("feeder", "scripted",
          {{"trace", (h.root() / "trace.txt").string()}, {"feed", "learning_rate=" + lr}});
  }
  PluginHarness h{{"early_stopping"}, {"scripted"}};
};

bool fetched(const std::vector<std::string>& fetches, const std::string& name) {
  return std::find(fetches.begin(), fetches.end(), name) != fetches.end();
}

TEST(EarlyStopping, FallingLossNeverStops) {
  PluginHarness h({"early_stopping"});
  h.add("es", "early_stopping", {{"patience", "0"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::completed);
  EXPECT_EQ(result.steps_run, 10);
}

TEST(EarlyStopping, FlatValueStopsAfterPatienceChecksWithoutImprovement) {
  // The first check sets the best value; the `patience`-th check without improvement after it
  // stops (the first one for patience 0, as for 1): global step max(patience, 1) + 1 when
  // checking every step.
  struct Case {
    int patience;
    int stop_step;
    int checks_without_improvement;
  };
  for (const Case& c : {Case{0, 2, 1}, Case{1, 2, 1}, Case{3, 4, 3}}) {
    FlatValueJob job;
    job.h.add("es", "early_stopping",
              {{"monitor", "learning_rate"}, {"patience", std::to_string(c.patience)}});
    JobResult result = job.h.run();
    EXPECT_EQ(result.outcome, Outcome::stopped) << c.patience;
    EXPECT_EQ(result.stop_cause, HH_STOP_CAUSE_HOOK);
    EXPECT_EQ(result.global_step, c.stop_step) << c.patience;
    EXPECT_THAT(result.reason,
                AllOf(HasSubstr("early stopping: 'learning_rate' did not improve for " +
                                std::to_string(c.checks_without_improvement) + " checks"),
                      HasSubstr("(patience " + std::to_string(c.patience) + ")"),
                      HasSubstr("best value 0.5")));
  }
}

TEST(EarlyStopping, DefaultPatienceIsThree) {
  // Best at step 1, then steps 2, 3 and 4 without improvement: wait 3 stops at step 4.
  FlatValueJob job;
  job.h.add("es", "early_stopping", {{"monitor", "learning_rate"}});
  EXPECT_EQ(job.h.run().global_step, 4);
}

TEST(EarlyStopping, RisingValueStopsInMinModeButNotInMaxMode) {
  {
    // global_step 1 is the best; 2 and 3 do not improve on it: wait 2 stops at step 3.
    PluginHarness h({"early_stopping"});
    h.add("es", "early_stopping", {{"monitor", "global_step"}, {"patience", "2"}});
    JobResult result = h.run();
    EXPECT_EQ(result.outcome, Outcome::stopped);
    EXPECT_EQ(result.global_step, 3);
    EXPECT_THAT(result.reason, HasSubstr("best value 1"));
  }
  {
    PluginHarness h({"early_stopping"});
    h.add("es", "early_stopping", {{"monitor", "global_step"}, {"mode", "max"}, {"patience", "0"}});
    EXPECT_EQ(h.run().outcome, Outcome::completed);
  }
}

TEST(EarlyStopping, MaxModeStopsOnAFallingLoss) {
  // Loss 10 at step 1 is the best; 5 at step 2 is worse: wait 1 = patience stops at step 2.
  PluginHarness h({"early_stopping"});
  h.workload.script().values["loss"] = loss_of_ten_over_step;
  h.add("es", "early_stopping", {{"mode", "max"}, {"patience", "1"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.global_step, 2);
  EXPECT_THAT(result.reason, AllOf(HasSubstr("'loss'"), HasSubstr("best value 10")));
}

TEST(EarlyStopping, MinDeltaIgnoresSmallImprovements) {
  // Loss 10/step: 10, 5, 3.33 improve by more than 1; 2.5 improves on 3.33 by less than 1, so
  // it does not count: wait 1 = patience stops at step 4 with the best still 3.33.
  PluginHarness h({"early_stopping"});
  h.workload.script().values["loss"] = loss_of_ten_over_step;
  h.add("es", "early_stopping", {{"min_delta", "1"}, {"patience", "1"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.global_step, 4);
  EXPECT_THAT(result.reason, HasSubstr("best value 3.33333,"));
}

TEST(EarlyStopping, AnImprovementBeyondMinDeltaResetsThePatienceCount) {
  // 2.5 misses by less than 1 (wait 1); 2 beats 3.33 by 1.33 (best 2, wait 0); 1.67 and 1.43 miss
  // (wait 1, then 2 = patience): stops at step 7 with the best 2.
  PluginHarness h({"early_stopping"});
  h.workload.script().values["loss"] = loss_of_ten_over_step;
  h.add("es", "early_stopping", {{"min_delta", "1"}, {"patience", "2"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.global_step, 7);
  EXPECT_THAT(result.reason, HasSubstr("best value 2,"));
}

TEST(EarlyStopping, AnImprovementMustAlsoBeatTheBaseline) {
  {
    // 0.5 never beats 0.4: not even the first check counts as an improvement, so steps 1, 2
    // and 3 bring wait to the default patience 3.
    FlatValueJob job;
    job.h.add("es", "early_stopping", {{"monitor", "learning_rate"}, {"baseline", "0.4"}});
    JobResult result = job.h.run();
    EXPECT_EQ(result.global_step, 3);
    EXPECT_THAT(result.reason, AllOf(HasSubstr("best value none"), HasSubstr("baseline 0.4")));
  }
  {
    // 0.5 beats 0.6: best at step 1, then wait 3 at step 4.
    FlatValueJob job;
    job.h.add("es", "early_stopping", {{"monitor", "learning_rate"}, {"baseline", "0.6"}});
    EXPECT_EQ(job.h.run().global_step, 4);
  }
}

TEST(EarlyStopping, ChecksAndFetchesOnlyEveryNSteps) {
  FlatValueJob job;
  job.h.add("es", "early_stopping",
            {{"monitor", "learning_rate"}, {"patience", "1"}, {"every_n_steps", "2"}});
  JobResult result = job.h.run();
  // Checks at global steps 2 (best) and 4 (wait 1 = patience).
  EXPECT_EQ(result.global_step, 4);
  const std::vector<SessionRun>& seen = job.h.runs;
  ASSERT_EQ(seen.size(), 4u);
  for (std::size_t i = 0; i < seen.size(); ++i)
    EXPECT_EQ(fetched(seen[i].fetched, "learning_rate"), i % 2 == 1) << "iteration " << i;
  // Its declared cadence (every_n_steps): the host calls it at its first step and the two
  // checking steps only.
  for (const HookReport& report : job.h.runtime().reports()) {
    if (report.instance_name == "es") {
      EXPECT_EQ(report.callbacks.at("before_run").calls, 3u);
      EXPECT_EQ(report.callbacks.at("after_run").calls, 3u);
    }
  }
}

TEST(EarlyStopping, SavesBestWaitAndTheStopAsHookState) {
  FlatValueJob job;
  job.h.add("es", "early_stopping", {{"monitor", "learning_rate"}});
  Runtime& rt = job.h.runtime();
  ASSERT_TRUE(rt.start());
  rt.run();
  rt.run();
  EXPECT_EQ(rt.hook_states().at("es"), "best=0.5\nstopped=0\nwait=1\n");
  while (!rt.should_stop()) rt.run();
  const std::string state = rt.hook_states().at("es");
  EXPECT_THAT(state, AllOf(HasSubstr("best=0.5\n"), HasSubstr("stopped=1\n"), HasSubstr("wait=3\n"),
                           HasSubstr("reason='learning_rate' did not improve")));
}

TEST(EarlyStopping, RestoredStateMakesItStopSooner) {
  FlatValueJob job;
  job.h.add("es", "early_stopping", {{"monitor", "learning_rate"}});
  job.h.runtime().restore_hook_states({{"es", "best=0.5\nwait=2\nstopped=0\n"}});
  JobResult result = job.h.run();
  // 0.5 does not beat the restored best: wait 3 = patience 3 at the first check.
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.global_step, 1);
  EXPECT_THAT(job.h.log(), HasSubstr("[es] [info] restored state: best 0.5, wait 2"));
}

TEST(EarlyStopping, RestoredBestIsKeptWhenTheValueIsWorse) {
  // A best of 0.1 restored from before: 0.5 does not improve on it, so the first check brings
  // wait to patience 1.
  FlatValueJob job;
  job.h.add("es", "early_stopping", {{"monitor", "learning_rate"}, {"patience", "1"}});
  job.h.runtime().restore_hook_states({{"es", "best=0.10000000000000001\nwait=0\nstopped=0\n"}});
  JobResult result = job.h.run();
  EXPECT_EQ(result.global_step, 1);
  EXPECT_THAT(result.reason, HasSubstr("best value 0.1,"));
}

TEST(EarlyStopping, AJobItAlreadyStoppedStopsAgainBeforeAnyStep) {
  FlatValueJob job;
  job.h.add("es", "early_stopping", {{"monitor", "learning_rate"}});
  job.h.runtime().restore_hook_states(
      {{"es", "best=0.5\nwait=3\nstopped=1\nreason='learning_rate' did not improve\n"}});
  JobResult result = job.h.run();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.steps_run, 0);
  EXPECT_THAT(result.reason,
              AllOf(HasSubstr("already stopped"), HasSubstr("'learning_rate' did not improve")));
}

TEST(EarlyStopping, UnreadableStateFailsTheHookInBegin) {
  FlatValueJob job;
  job.h.add("es", "early_stopping", {{"monitor", "learning_rate"}});
  job.h.runtime().restore_hook_states({{"es", "best=banana\n"}});
  JobResult result = job.h.run();
  EXPECT_EQ(result.outcome, Outcome::completed);  // disabled, the job goes on
  EXPECT_THAT(job.h.log(), AllOf(HasSubstr("hook 'es'"), HasSubstr("failed in begin"),
                                 HasSubstr("best='banana'")));
}

// A saved wait that is no count (a huge value, an exponent, a fraction, a sign, NaN) fails begin
// with the key and the value named, instead of being cast to int64_t.
TEST(EarlyStopping, ASavedWaitThatIsNoCountFailsBeginNamingIt) {
  for (const std::string wait :
       {"1e300", "9223372036854775808", "99999999999999999999999", "2.5", "-1", "nan", "inf", ""}) {
    FlatValueJob job;
    job.h.add("es", "early_stopping", {{"monitor", "learning_rate"}});
    job.h.runtime().restore_hook_states({{"es", "best=0.5\nwait=" + wait + "\nstopped=0\n"}});
    JobResult result = job.h.run();
    EXPECT_EQ(result.outcome, Outcome::completed) << "wait=" << wait;
    EXPECT_THAT(job.h.log(),
                AllOf(HasSubstr("hook 'es'"), HasSubstr("failed in begin"),
                      HasSubstr("unreadable wait='" + wait + "'"),
                      HasSubstr("not a count from 0 to 9223372036854775807"), HasSubstr("--fresh")))
        << "wait=" << wait;
    EXPECT_THAT(job.h.log(), Not(HasSubstr("restored state"))) << "wait=" << wait;
  }
}

TEST(EarlyStopping, TheLargestSavedWaitIsStillRead) {
  FlatValueJob job;
  job.h.add("es", "early_stopping", {{"monitor", "learning_rate"}});
  job.h.runtime().restore_hook_states({{"es", "best=0.5\nwait=9223372036854775807\nstopped=0\n"}});
  EXPECT_EQ(job.h.run().outcome, Outcome::stopped);  // the first check does not wrap it
  EXPECT_THAT(job.h.log(), AllOf(HasSubstr("restored state: best 0.5, wait 9223372036854775807"),
                                 HasSubstr("did not improve for 9223372036854775807")));
}

TEST(EarlyStopping, ASavedBestThatIsNotFiniteFailsBegin) {
  FlatValueJob job;
  job.h.add("es", "early_stopping", {{"monitor", "learning_rate"}});
  job.h.runtime().restore_hook_states({{"es", "best=nan\nwait=0\n"}});
  job.h.run();
  EXPECT_THAT(job.h.log(), AllOf(HasSubstr("failed in begin"), HasSubstr("best='nan'")));
}

// ---- validation ----------------------------------------------------------------------------

TEST(EarlyStopping, ModeMustBeMinOrMax) {
  PluginHarness h({"early_stopping"});
  EXPECT_THAT(
      h.config_error("es", "early_stopping", {{"mode", "median"}}),
      AllOf(HasSubstr("hook 'es' (plugin 'early_stopping'"), HasSubstr("invalid mode='median'"),
            HasSubstr("'mode' must be 'min' or 'max'")));
}

TEST(EarlyStopping, NegativePatienceIsInvalid) {
  PluginHarness h({"early_stopping"});
  EXPECT_THAT(h.config_error("es", "early_stopping", {{"patience", "-1"}}),
              AllOf(HasSubstr("hook 'es' (plugin 'early_stopping'"),
                    HasSubstr("invalid patience=-1"), HasSubstr("'patience' must be >= 0")));
  EXPECT_EQ(h.config_error("es0", "early_stopping", {{"patience", "0"}}), "");
}

TEST(EarlyStopping, NonPositiveEveryNStepsIsInvalid) {
  PluginHarness h({"early_stopping"});
  for (const std::string n : {"0", "-2"})
    EXPECT_THAT(
        h.config_error("es" + n, "early_stopping", {{"every_n_steps", n}}),
        AllOf(HasSubstr("hook 'es" + n + "' (plugin 'early_stopping'"),
              HasSubstr("invalid every_n_steps=" + n), HasSubstr("'every_n_steps' must be > 0")));
}

TEST(EarlyStopping, NegativeMinDeltaIsInvalid) {
  PluginHarness h({"early_stopping"});
  EXPECT_THAT(
      h.config_error("es", "early_stopping", {{"min_delta", "-0.5"}}),
      AllOf(HasSubstr("hook 'es'"), HasSubstr("invalid min_delta=-0.5"), HasSubstr("'min_delta'")));
}

TEST(EarlyStopping, NonNumericPatienceIsRejectedByTheHost) {
  PluginHarness h({"early_stopping"});
  EXPECT_THAT(
      h.config_error("es", "early_stopping", {{"patience", "lots"}}),
      AllOf(HasSubstr("hook 'es'"), HasSubstr("'patience'"), Not(HasSubstr("invalid mode"))));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
