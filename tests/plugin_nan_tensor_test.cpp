// The nan_tensor plugin (TensorFlow's NanTensorHook, plus +-Inf) driven through the real runtime
// around a workload whose loss diverges at a chosen step.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>

#include "plugin_harness.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// The harness's job, except that the step reaching `diverge_at` reports `bad_loss` as its loss.
class DivergingJob {
 public:
  explicit DivergingJob(int64_t diverge_at, float bad_loss = kNaN) {
    harness_.workload.script().values_at.insert_or_assign({"loss", diverge_at}, bad_loss);
  }

  void add(const std::string& instance, const std::multimap<std::string, std::string>& params,
           FailurePolicy policy) {
    harness_.add(instance, "nan_tensor", params, 0, policy);
  }
  JobResult run() { return harness_.run(); }
  std::string log() const { return harness_.log(); }

 private:
  PluginHarness harness_{{"nan_tensor"}};
};

TEST(NanTensor, NanLossFailsTheJobWithTheStep) {
  DivergingJob job(4);
  job.add("nan", {}, FailurePolicy::fail);
  JobResult result = job.run();
  EXPECT_EQ(result.outcome, Outcome::failed);
  EXPECT_THAT(result.reason, AllOf(HasSubstr("hook 'nan'"),
                                   HasSubstr("NaN loss during training at global step 4")));
  EXPECT_EQ(result.steps_run, 4);
  EXPECT_THAT(job.log(), HasSubstr("[nan] [error] Model diverged with loss = NaN."));
}

TEST(NanTensor, PositiveAndNegativeInfinityAreDetectedToo) {
  for (float bad : {kInf, -kInf}) {
    DivergingJob job(6, bad);
    job.add("nan", {}, FailurePolicy::fail);
    JobResult result = job.run();
    const std::string shown = bad > 0 ? "inf" : "-inf";
    EXPECT_EQ(result.outcome, Outcome::failed) << shown;
    EXPECT_THAT(result.reason, AllOf(HasSubstr("NaN loss during training at global step 6"),
                                     HasSubstr("'loss' = " + shown + ")")));
    EXPECT_EQ(result.steps_run, 6) << shown;
    EXPECT_THAT(job.log(), HasSubstr("[nan] [error] Model diverged with loss = " + shown + "."));
  }
}

TEST(NanTensor, WithoutFailOnNanLossItWarnsAndStopsCleanly) {
  DivergingJob job(4);
  job.add("nan", {{"fail_on_nan_loss", "false"}}, FailurePolicy::fail);
  JobResult result = job.run();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.stop_cause, HH_STOP_CAUSE_HOOK);
  EXPECT_THAT(result.reason, AllOf(HasSubstr("NaN loss during training at global step 4"),
                                   HasSubstr("fail_on_nan_loss is false")));
  // The diverged step still completed; the job stops after it.
  EXPECT_EQ(result.steps_run, 4);
  EXPECT_EQ(result.global_step, 4);
  EXPECT_THAT(job.log(), HasSubstr("[nan] [warning] Model diverged with loss = NaN."));
  EXPECT_THAT(job.log(), Not(HasSubstr("[error]")));
}

TEST(NanTensor, UnderTheDefaultPolicyAFailureOnlyDisablesTheHook) {
  // Why the hook is documented to run with on_error = fail.
  DivergingJob job(4);
  job.add("nan", {}, FailurePolicy::disable);
  JobResult result = job.run();
  EXPECT_EQ(result.outcome, Outcome::completed);
  EXPECT_EQ(result.steps_run, 10);
  EXPECT_THAT(job.log(), AllOf(HasSubstr("NaN loss during training at global step 4"),
                               HasSubstr("on_error=disable")));
}

TEST(NanTensor, FiniteLossDoesNothingButIsCheckedEveryStep) {
  PluginHarness h({"nan_tensor"});
  h.add("nan", "nan_tensor", {}, 0, FailurePolicy::fail);
  JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::completed);
  EXPECT_EQ(result.steps_run, 10);
  EXPECT_THAT(h.log(), Not(HasSubstr("diverged")));
  // The SDK leaves what the hook does not override NULL, so the host never calls it.
  const HookReport report = h.runtime().reports().at(0);
  EXPECT_EQ(report.callbacks.at("begin").calls, 0u);
  EXPECT_EQ(report.callbacks.at("end").calls, 0u);
  EXPECT_EQ(report.callbacks.at("after_run").calls, 10u);
  for (std::size_t i = 0; i < 10; ++i) {
    const auto& fetches = h.runs[i].fetched;
    EXPECT_NE(std::find(fetches.begin(), fetches.end(), "loss"), fetches.end()) << i;
  }
}

TEST(NanTensor, WatchesTheConfiguredLossTensor) {
  // The NaN is in 'loss'; a hook watching 'learning_rate' must not react to it.
  DivergingJob job(3);
  job.add("nan_lr", {{"loss_tensor", "learning_rate"}}, FailurePolicy::fail);
  job.add("nan_loss", {{"fail_on_nan_loss", "false"}}, FailurePolicy::fail);
  JobResult result = job.run();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_THAT(result.reason, HasSubstr("global step 3"));
  EXPECT_THAT(job.log(), Not(HasSubstr("[nan_lr] [")));
}

TEST(NanTensor, EmptyLossTensorIsAConfigError) {
  PluginHarness h({"nan_tensor"});
  EXPECT_THAT(h.config_error("nan", "nan_tensor", {{"loss_tensor", ""}}),
              AllOf(HasSubstr("hook 'nan' (plugin 'nan_tensor'"), HasSubstr("'loss_tensor'")));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
