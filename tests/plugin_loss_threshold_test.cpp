// The loss_threshold plugin (the lifecycle article's example hook) driven through the runtime.
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

TEST(LossThreshold, StopsAfterTheFirstStepBelowTheThreshold) {
  PluginHarness h({"loss_threshold"});
  h.workload.script().end_of_data_step = 51;
  h.workload.script().values["loss"] = loss_of_ten_over_step;
  h.add("threshold", "loss_threshold", {{"threshold", "1.0"}});
  JobResult result = h.run();
  // The loss is 10/step: 10/10 = 1 is not below 1, 10/11 = 0.909091 is.
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.stop_cause, HH_STOP_CAUSE_HOOK);
  EXPECT_EQ(result.reason, "hook 'threshold': loss 0.909091 fell below threshold 1");
  EXPECT_EQ(result.global_step, 11);
  EXPECT_EQ(result.steps_run, 11);
  EXPECT_THAT(h.log(), HasSubstr("[threshold] [info] loss 0.909091 fell below threshold 1 at "
                                 "global step 11"));
}

TEST(LossThreshold, NeverTriggersWithATinyThreshold) {
  PluginHarness h({"loss_threshold"});
  h.add("threshold", "loss_threshold", {{"threshold", "0.001"}});
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::completed);
  EXPECT_EQ(result.steps_run, 10);
  EXPECT_THAT(h.log(), ::testing::Not(HasSubstr("fell below")));
  // It still checked every step.
  for (std::size_t i = 0; i < 10; ++i) {
    const auto& fetches = h.runs[i].fetched;
    EXPECT_NE(std::find(fetches.begin(), fetches.end(), "loss"), fetches.end()) << i;
  }
}

TEST(LossThreshold, ComparesTheConfiguredTensor) {
  PluginHarness h({"loss_threshold"});
  h.add("threshold", "loss_threshold", {{"threshold", "0.2"}, {"loss_tensor", "learning_rate"}});
  JobResult result = h.run();
  // learning_rate is 0.1 from the first step on.
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.reason, "hook 'threshold': learning_rate 0.1 fell below threshold 0.2");
  EXPECT_EQ(result.global_step, 1);
}

TEST(LossThreshold, ThresholdIsRequired) {
  PluginHarness h({"loss_threshold"});
  EXPECT_THAT(h.config_error("threshold", "loss_threshold", {}),
              AllOf(HasSubstr("hook 'threshold' (plugin 'loss_threshold')"),
                    HasSubstr("'threshold'"), HasSubstr("missing")));
}

TEST(LossThreshold, NonFiniteThresholdIsAConfigError) {
  PluginHarness h({"loss_threshold"});
  EXPECT_THAT(h.config_error("threshold", "loss_threshold", {{"threshold", "nan"}}),
              AllOf(HasSubstr("hook 'threshold' (plugin 'loss_threshold'"),
                    HasSubstr("invalid threshold=nan")));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
