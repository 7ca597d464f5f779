// The installed hook test harness, <hookhost/testing.hpp>, driving real built plugins: each
// scripting feature and each observation, asserted on what the built-in plugins and the fixtures
// are known to do; and the harness run under it, which `hookhost check` shares.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <hookhost/testing.hpp>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "hookhost/host/loader.hpp"
#include "hookhost/host/params.hpp"
#include "plugins/elf_note.hpp"
#include "plugins/trust.hpp"
#include "process.hpp"
#include "testing/harness_run.hpp"

namespace {
namespace HOOKHOST_TEST_FILE {

namespace fs = std::filesystem;
using hookhost::Callback;
using hookhost::ConfigError;
using hookhost::FailurePolicy;
using hookhost::Isolation;
using hookhost::Outcome;
using hookhost::StepStatus;
using hookhost::testing::HookTest;
using hookhost::testing::RunResult;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;
using Names = std::vector<std::string>;

fs::path builtin(const std::string& name) {
  return fs::path(HOOKHOST_BUILTIN_DIR) / (name + ".so");
}
fs::path fixture(const std::string& name) {
  return fs::path(HOOKHOST_FIXTURE_DIR) / (name + ".so");
}

// A file for the fixtures' trace parameter, removed with the test.
class TraceFile {
 public:
  TraceFile() : dir_(), path_(dir_.path() / "trace.txt") {}
  std::string path() const { return path_.string(); }
  std::vector<std::string> lines() const {
    return hookhost::testing::lines_of(hookhost::testing::read_file(path_));
  }

 private:
  hookhost::testing::TempDir dir_;
  fs::path path_;
};

// --- Lifecycle and stops. ---

TEST(HookTestLifecycle, RecordsEveryCallbackInOrder) {
  TraceFile trace;
  HookTest t(fixture("scripted"));
  t.set("trace", trace.path()).steps(2);
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::completed) << run.log_text();
  // The attempt at step 3 gets its before_run; the workload then has no data, so no after_run.
  EXPECT_EQ(run.trace(), (Names{"begin", "after_create_session", "before_run@1", "after_run@1",
                                "before_run@2", "after_run@2", "before_run@3", "end"}));
  EXPECT_EQ(run.global_step, 2);
  EXPECT_EQ(run.steps_run, 2);
  EXPECT_EQ(run.reason, "end of data: the script has no data for step 3");
  // What the hook was told, as it saw it.
  EXPECT_EQ(run.calls[1].creation, 1u);
  EXPECT_EQ(run.calls.back().outcome, HH_OUTCOME_COMPLETED);
  EXPECT_EQ(run.calls.back().reason, run.reason);
  EXPECT_THAT(
      trace.lines(),
      ElementsAre(StartsWith("scripted begin"), StartsWith("scripted after_create_session gs=0"),
                  StartsWith("scripted before_run gs=0"), StartsWith("scripted after_run gs=0"),
                  StartsWith("scripted before_run gs=1"), StartsWith("scripted after_run gs=1"),
                  StartsWith("scripted before_run gs=2"),
                  StartsWith("scripted end outcome=completed"), "scripted destroy"));
}

TEST(HookTestLifecycle, OnlyImplementedCallbacksAreCalled) {
  HookTest t(builtin("stop_at_step"));
  t.set("num_steps", "3").steps(10);
  const RunResult run = t.run();
  // stop_at_step has no before_run and no end.
  EXPECT_EQ(run.trace(),
            (Names{"begin", "after_create_session", "after_run@1", "after_run@2", "after_run@3"}));
}

TEST(HookTestLifecycle, StopAtStepStopsAtTheRightStepWithItsReason) {
  HookTest t(builtin("stop_at_step"));
  t.set("num_steps", "4").steps(100);
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::stopped) << run.log_text();
  EXPECT_EQ(run.stop_cause, HH_STOP_CAUSE_HOOK);
  EXPECT_EQ(run.global_step, 4);
  EXPECT_TRUE(run.stopped_by_hook);
  EXPECT_EQ(run.hook_stop_reason, "reached the step limit (last_step=4, global step 4)");
  EXPECT_EQ(run.reason, "hook 'stop_at_step': reached the step limit (last_step=4, global step 4)");
  EXPECT_EQ(run.log_lines("info"),
            Names{"will stop at global step 4 (num_steps=4 from global step 0)"});
}

TEST(HookTestLifecycle, AStatusStopIsTheHooksToo) {
  TraceFile trace;
  HookTest t(fixture("scripted"));
  t.set("trace", trace.path()).set("stop_at_iteration", "1").steps(10);
  const RunResult run = t.run();
  EXPECT_EQ(run.global_step, 2);
  EXPECT_TRUE(run.stopped_by_hook);
  EXPECT_EQ(run.hook_stop_reason, "asked in after_run");
}

TEST(HookTestLifecycle, AStopRequestedByTheProgramEndsTheJobAfterThatStep) {
  TraceFile trace;
  HookTest t(fixture("scripted"));
  t.set("trace", trace.path()).steps(10).stop_requested_at(3, "the operator asked");
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::stopped);
  EXPECT_EQ(run.stop_cause, HH_STOP_CAUSE_HOST);
  EXPECT_EQ(run.reason, "the operator asked");
  EXPECT_EQ(run.global_step, 3);
  EXPECT_FALSE(run.stopped_by_hook);
  EXPECT_THAT(run.hook_stop_reason, IsEmpty());
  ASSERT_EQ(run.trace(),
            (Names{"begin", "after_create_session", "before_run@1", "after_run@1", "before_run@2",
                   "after_run@2", "before_run@3", "after_run@3", "end"}));
  EXPECT_FALSE(run.calls[5].stop_requested);  // after_run@2
  EXPECT_FALSE(run.calls[6].stop_requested);  // before_run@3: asked while the step ran
  EXPECT_TRUE(run.calls[7].stop_requested);   // after_run@3
}

TEST(HookTestLifecycle, ASignalIsAStopCauseToo) {
  HookTest t(builtin("stop_at_step"));
  t.set("num_steps", "50").stop_requested_at(2, "received SIGINT", HH_STOP_CAUSE_SIGNAL);
  const RunResult run = t.run();
  EXPECT_EQ(run.stop_cause, HH_STOP_CAUSE_SIGNAL);
  EXPECT_EQ(run.global_step, 2);
}

TEST(HookTestLifecycle, EndOfDataAtAStep) {
  HookTest t(builtin("stop_at_step"));
  t.set("num_steps", "50").end_of_data_at(4);
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::completed);
  EXPECT_EQ(run.global_step, 3);
  EXPECT_EQ(run.session_runs.back().step, 4);
  EXPECT_EQ(run.session_runs.back().status, StepStatus::end_of_data);
  // steps(n) is the same as end_of_data_at(n + 1); ten steps without either.
  EXPECT_EQ(t.steps(6).run().global_step, 6);
  EXPECT_EQ(HookTest(builtin("stop_at_step")).set("num_steps", "50").run().global_step, 10);
}

TEST(HookTestLifecycle, AWorkloadErrorFailsTheJobAndTheHookIsTold) {
  TraceFile trace;
  HookTest t(fixture("scripted"));
  t.set("trace", trace.path()).workload_error_at(2);
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::failed);
  EXPECT_EQ(run.reason, "the workload failed at global step 1: scripted workload error at step 2");
  EXPECT_EQ(run.calls.back().callback, Callback::end);
  EXPECT_EQ(run.calls.back().outcome, HH_OUTCOME_FAILED);
  EXPECT_FALSE(run.failure.has_value());  // the workload failed, not the hook
}

// --- Recovery. ---

TEST(HookTestRecovery, ARecoveryCallsAfterCreateSessionAgain) {
  TraceFile trace;
  HookTest t(fixture("scripted"));
  t.set("trace", trace.path()).steps(3).recoverable_error_at(2);
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::completed) << run.log_text();
  // The failed attempt had its before_run; it never reached after_run.
  EXPECT_EQ(run.trace(),
            (Names{"begin", "after_create_session", "before_run@1", "after_run@1", "before_run@2",
                   "after_create_session", "before_run@2", "after_run@2", "before_run@3",
                   "after_run@3", "before_run@4", "end"}));
  EXPECT_EQ(run.calls[5].creation, 2u);
  EXPECT_EQ(run.calls[5].step, 1);
  ASSERT_EQ(run.session_runs.size(), 5u);  // 1, 2 (aborted), 2, 3, end of data
  EXPECT_EQ(run.session_runs[1].step, 2);
  EXPECT_EQ(run.session_runs[1].status, StepStatus::aborted);
  EXPECT_EQ(run.session_runs[2].status, StepStatus::ok);
  EXPECT_THAT(run.log_text(), HasSubstr("recoverable error at global step 1: scripted "
                                        "recoverable error at step 2"));
}

TEST(HookTestRecovery, LikeTheProgramItContinuesFromTheNewestCheckpoint) {
  HookTest t(builtin("checkpoint_saver"));
  t.set("save_steps", "3").steps(6).recoverable_error_at(5);
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::completed) << run.log_text();
  std::vector<int64_t> steps;
  for (const auto& s : run.session_runs) steps.push_back(s.step);
  // The checkpoint of step 3 is restored: steps 4 and 5 run again.
  EXPECT_THAT(steps, ElementsAre(1, 2, 3, 4, 5, 4, 5, 6, 7));
  EXPECT_THAT(run.log_text(), HasSubstr("recovery: restored " +
                                        (run.run_dir / "checkpoints" / "model.ckpt-3").string() +
                                        " at global step 3"));
}

TEST(HookTestRecovery, TooManyRecoveriesFailTheJob) {
  HookTest t(builtin("stop_at_step"));
  t.set("num_steps", "50");
  for (int i = 0; i < 4; ++i) t.recoverable_error_at(2);
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::failed);
  EXPECT_THAT(run.reason, HasSubstr("4 times in a row (max_recoveries=3)"));
}

// --- Values, fetches and feeds. ---

TEST(HookTestValues, LoggingTensorLogsTheScriptedValues) {
  HookTest t(builtin("logging_tensor"));
  t.set("tensors", "loss").set("every_n_iter", "2").set("format", "loss={loss}").steps(5);
  t.value("loss", [](int64_t step) { return 0.5 * static_cast<double>(step); });
  const RunResult run = t.run();
  // Iterations 0, 2 and 4 are steps 1, 3 and 5.
  EXPECT_EQ(run.log_lines("info"), (Names{"loss=0.5", "loss=1.5", "loss=2.5"})) << run.log_text();
  EXPECT_EQ(run.fetched(1), Names{"loss"});
  EXPECT_THAT(run.fetched(2), IsEmpty());
  EXPECT_EQ(run.session_runs[0].returned.at("loss").dtype(), HH_DTYPE_F64);
}

TEST(HookTestValues, EachKindOfValueReachesTheHook) {
  HookTest t(builtin("logging_tensor"));
  t.set("tensors", "f32,f64,i64,vec,text").set("every_n_iter", "1");
  t.set("format", "{f32} {f64} {i64} {vec} {text}").steps(1);
  t.value("f32", 0.25f).value("f64", 2.5).value("i64", int64_t{7});
  t.value("vec", {1.0f, 2.0f}).value("text", "hello");
  const RunResult run = t.run();
  EXPECT_EQ(run.log_lines("info"), Names{"0.25 2.5 7 [1, 2] hello"}) << run.log_text();
  const auto& values = run.session_runs[0].returned;
  EXPECT_EQ(values.at("f32").dtype(), HH_DTYPE_F32);
  EXPECT_EQ(values.at("f64").dtype(), HH_DTYPE_F64);
  EXPECT_EQ(values.at("i64").dtype(), HH_DTYPE_I64);
  EXPECT_EQ(values.at("vec").shape(), std::vector<int64_t>{2});
}

TEST(HookTestValues, NamesNotScriptedHaveDefaultsAndOneStepCanDiffer) {
  HookTest t(builtin("logging_tensor"));
  t.set("tensors", "loss,global_step,learning_rate,weights,bias").set("every_n_iter", "1");
  t.set("format", "{loss} {global_step} {learning_rate} {weights} {bias}").steps(3);
  t.value_at("loss", 2, 9.0f);
  const RunResult run = t.run();
  EXPECT_EQ(run.log_lines("info"),
            (Names{"1 1 0.1 [1, 2, 3] 0", "9 2 0.1 [1, 2, 3] 0", "0.333333 3 0.1 [1, 2, 3] 0"}))
      << run.log_text();
}

TEST(HookTestValues, WhatTheHookFedIsRecordedPerStep) {
  TraceFile trace;
  HookTest t(fixture("scripted"));
  t.set("trace", trace.path()).set("feed", "learning_rate=0.05,extra=2");
  t.set("fetch", "learning_rate").feedable("extra").steps(2);
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::completed) << run.log_text();
  const hookhost::TensorMap fed = run.fed(2);
  ASSERT_EQ(fed.size(), 2u);
  EXPECT_FLOAT_EQ(static_cast<float>(fed.at("learning_rate").as_double()), 0.05f);
  EXPECT_FLOAT_EQ(static_cast<float>(fed.at("extra").as_double()), 2.0f);
  EXPECT_EQ(run.fetched(2), Names{"learning_rate"});
  // A fetch of a fed tensor returns what was fed.
  EXPECT_FLOAT_EQ(static_cast<float>(run.session_runs[1].returned.at("learning_rate").as_double()),
                  0.05f);
  EXPECT_EQ(run.session_runs[2].status, StepStatus::end_of_data);
  EXPECT_EQ(run.fed(3).size(), 2u);    // the attempt at step 3 had its feeds too
  EXPECT_THAT(run.fed(4), IsEmpty());  // never tried
}

TEST(HookTestValues, AFetchTheWorkloadDoesNotProvideFailsTheHook) {
  TraceFile trace;
  HookTest t(fixture("scripted"));
  t.set("trace", trace.path()).set("fetch", "nope").steps(3);
  const RunResult run = t.run();
  ASSERT_TRUE(run.failure.has_value());
  EXPECT_EQ(run.failure->callback, Callback::before_run);
  EXPECT_THAT(run.failure->message, HasSubstr("'nope'"));
  EXPECT_TRUE(run.disabled);
  EXPECT_EQ(run.trace(), (Names{"begin", "after_create_session", "before_run@1", "end"}));
  EXPECT_THAT(run.fetched(1), IsEmpty());  // the refused fetch never reached the workload
}

// --- Failures and policies. ---

TEST(HookTestFailures, NanTensorFailsTheJobUnderOnErrorFail) {
  HookTest t(builtin("nan_tensor"));
  t.on_error(FailurePolicy::fail).steps(10);
  t.value_at("loss", 3, std::numeric_limits<float>::quiet_NaN());
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::failed);
  EXPECT_EQ(run.global_step, 3);
  ASSERT_TRUE(run.failure.has_value());
  EXPECT_EQ(run.failure->callback, Callback::after_run);
  EXPECT_EQ(run.failure->message, "NaN loss during training at global step 3 ('loss' = NaN)");
  EXPECT_TRUE(run.disabled);
  EXPECT_EQ(run.log_lines("error"), Names{"Model diverged with loss = NaN."});
  const auto& failed_call = run.calls.back();  // nan_tensor has no end()
  EXPECT_EQ(failed_call.name(), "after_run@3");
  EXPECT_EQ(failed_call.status, HH_ERROR);
  EXPECT_EQ(failed_call.message, run.failure->message);
}

TEST(HookTestFailures, NanTensorStopsCleanlyWhenAskedTo) {
  HookTest t(builtin("nan_tensor"));
  t.set("fail_on_nan_loss", "false").steps(10);
  t.value("loss", [](int64_t step) { return step == 4 ? INFINITY : 1.0f; });
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::stopped);
  EXPECT_EQ(run.global_step, 4);
  EXPECT_TRUE(run.stopped_by_hook);
  EXPECT_EQ(run.hook_stop_reason,
            "NaN loss during training at global step 4 ('loss' = inf); stopping because "
            "fail_on_nan_loss is false");
  EXPECT_EQ(run.log_lines("warn"), Names{"Model diverged with loss = inf."});
  EXPECT_FALSE(run.failure.has_value());
}

TEST(HookTestFailures, EachPolicyDoesWhatItSays) {
  const auto run_with = [](FailurePolicy policy) {
    HookTest t(builtin("nan_tensor"));
    t.on_error(policy).steps(6);
    t.value_at("loss", 2, NAN).value_at("loss", 4, NAN);
    return t.run();
  };
  const RunResult disabled = run_with(FailurePolicy::disable);  // the default
  EXPECT_EQ(disabled.outcome, Outcome::completed);
  EXPECT_TRUE(disabled.disabled);
  // No call after the failure (nan_tensor has no end()).
  EXPECT_EQ(disabled.trace(),
            (Names{"before_run@1", "after_run@1", "before_run@2", "after_run@2"}));

  const RunResult kept = run_with(FailurePolicy::keep_going);
  EXPECT_EQ(kept.outcome, Outcome::completed);
  EXPECT_FALSE(kept.disabled);
  EXPECT_EQ(kept.report.callbacks.at("after_run").failures, 2u);
  EXPECT_EQ(kept.failure->message, "NaN loss during training at global step 2 ('loss' = NaN)");

  const RunResult stopped = run_with(FailurePolicy::stop);
  EXPECT_EQ(stopped.outcome, Outcome::stopped);
  EXPECT_EQ(stopped.stop_cause, HH_STOP_CAUSE_HOOK);
  EXPECT_EQ(stopped.global_step, 2);
  EXPECT_FALSE(stopped.stopped_by_hook);  // its policy stopped the job, it did not ask
}

TEST(HookTestFailures, AFailureInBeginLeavesOnlyEnd) {
  TraceFile trace;
  HookTest t(fixture("scripted"));
  t.set("trace", trace.path()).set("fail_in", "begin").set("fail_mode", "fatal");
  const RunResult run = t.run();
  EXPECT_EQ(run.trace(), (Names{"begin", "end"}));
  EXPECT_EQ(run.calls[0].status, HH_ERROR_FATAL);
  EXPECT_EQ(run.calls[0].message, "scripted failure in begin");
  ASSERT_TRUE(run.failure.has_value());
  EXPECT_EQ(run.failure->callback, Callback::begin);
  EXPECT_EQ(run.calls[1].reason, "this hook was disabled: begin failed: scripted failure in begin");
}

TEST(HookTestFailures, APluginInCIsDrivenTheSameWay) {
  TraceFile trace;
  HookTest t(fixture("c_recorder"));
  t.set("trace", trace.path()).set("fetch", "loss").set("fail_in", "after_run").steps(3);
  const RunResult run = t.run();
  EXPECT_EQ(t.instance_name(), "c_recorder");
  EXPECT_EQ(run.fetched(1), Names{"loss"});
  EXPECT_EQ(run.calls[3].name(), "after_run@1");
  EXPECT_EQ(run.calls[3].status, HH_ERROR);
  EXPECT_EQ(run.calls[3].message, "c_recorder failing in after_run as configured");
  EXPECT_TRUE(run.disabled);
}

// --- State and checkpoints. ---

TEST(HookTestState, AStateRoundTripsIntoAResumedJob) {
  TraceFile trace;
  HookTest first(fixture("scripted"));
  first.set("trace", trace.path()).steps(3);
  const RunResult before = first.run();
  ASSERT_TRUE(before.saved_state.has_value());
  EXPECT_EQ(before.state_bytes(), "after_runs=3");
  EXPECT_EQ(before.saved_state->plugin_id, "scripted");

  HookTest resumed(fixture("scripted"));
  resumed.set("trace", trace.path()).resume_from(before).steps(5);
  const RunResult after = resumed.run();
  EXPECT_EQ(after.trace().front(), "begin");
  EXPECT_EQ(after.calls[1].step, 3);  // after_create_session at the resumed step
  EXPECT_EQ(after.trace()[2], "before_run@4");
  EXPECT_EQ(after.state_bytes(), "after_runs=5");
  EXPECT_THAT(trace.lines(), ::testing::Contains("scripted begin state=after_runs=3 live=3"));
}

TEST(HookTestState, StopAtStepKeepsItsLimitAcrossAResume) {
  HookTest t(builtin("stop_at_step"));
  t.set("num_steps", "3").steps(20);
  const RunResult first = t.run();
  EXPECT_EQ(first.global_step, 3);
  // Resumed at its limit, it stops before another step runs: the limit came from its state.
  const RunResult resumed = t.resume_from(first).run();
  EXPECT_EQ(resumed.outcome, Outcome::stopped);
  EXPECT_EQ(resumed.global_step, 3);
  EXPECT_EQ(resumed.steps_run, 0);
  EXPECT_THAT(resumed.log_lines("info"),
              ::testing::Contains("will stop at global step 3 (limit restored from the saved "
                                  "state; num_steps is not counted again)"));
}

TEST(HookTestState, RawBytesCanBeRestored) {
  TraceFile trace;
  HookTest t(fixture("scripted"));
  t.set("trace", trace.path()).restore_state(std::string("after_runs=10")).steps(2);
  EXPECT_EQ(t.run().state_bytes(), "after_runs=12");
}

TEST(HookTestState, AStateOfAnotherBuildIsGivenOnlyWithResumeStateAnyBuild) {
  // A state tagged with another build of the plugin (another file's SHA-256) than the one loaded.
  const hookhost::SavedHookState other{
      "scripted", 1, "after_runs=10",
      hookhost::sha256_of_file(fs::path(HOOKHOST_FIXTURE_DIR) / "rebuilt" / "scripted.so")};
  TraceFile trace;
  HookTest t(fixture("scripted"));
  t.set("trace", trace.path()).restore_state(other).steps(2);
  const RunResult refused = t.run();
  EXPECT_EQ(refused.state_bytes(), "after_runs=2");
  EXPECT_EQ(refused.saved_state->plugin_build, hookhost::sha256_of_file(fixture("scripted")));
  EXPECT_THAT(refused.log_text(),
              AllOf(HasSubstr("[warn] hook 'scripted' (plugin 'scripted') starts without the "
                              "state the checkpoint holds for it: another build of the plugin "
                              "saved it"),
                    HasSubstr("resume_state = any_build")));
  t.set("resume_state", "any_build");
  const RunResult adopted = t.run();
  EXPECT_EQ(adopted.state_bytes(), "after_runs=12");
  EXPECT_THAT(adopted.log_text(),
              AllOf(Not(HasSubstr("starts without the state")),
                    HasSubstr("resumes the state another build of the plugin saved")));
}

TEST(HookTestState, CheckpointsTheHookRequestedAreListed) {
  HookTest t(builtin("checkpoint_saver"));
  t.set("save_steps", "2").steps(5);
  const RunResult run = t.run();
  std::vector<int64_t> steps;
  for (const auto& c : run.checkpoints) {
    steps.push_back(c.global_step);
    EXPECT_TRUE(c.written);
    EXPECT_TRUE(fs::exists(c.file)) << c.file;
  }
  EXPECT_THAT(steps, ElementsAre(0, 2, 4, 5));
  EXPECT_EQ(run.checkpoints[1].requested_by,
            "hook 'checkpoint_saver': checkpoint_saver at global "
            "step 2");
  EXPECT_EQ(run.checkpoints[1].file, run.run_dir / "checkpoints" / "model.ckpt-2");
}

TEST(HookTestState, AFailedJobWritesNoCheckpoint) {
  HookTest t(builtin("checkpoint_saver"));
  t.set("save_steps", "100").workload_error_at(3);
  const RunResult run = t.run();
  ASSERT_EQ(run.checkpoints.size(), 2u) << run.log_text();
  EXPECT_TRUE(run.checkpoints[0].written);   // at session creation
  EXPECT_FALSE(run.checkpoints[1].written);  // the final save, refused
  EXPECT_THAT(run.checkpoints[1].requested_by, StartsWith("hook 'checkpoint_saver'"));
}

// --- Configuration. ---

TEST(HookTestConfiguration, ABadParameterThrowsNamingTheKey) {
  HookTest t(builtin("loss_threshold"));
  t.set("threshold", "abc");
  EXPECT_THROW(t.run(), ConfigError);
  EXPECT_THAT(t.configuration_error(),
              StartsWith("--set hook.loss_threshold.threshold=abc: [hook.loss_threshold] "
                         "threshold: "));
  t.set("threshold", "nan");
  EXPECT_THAT(t.configuration_error(), HasSubstr("must be a finite number (not NaN or infinite)"));
  HookTest unknown(builtin("loss_threshold"));
  unknown.set("threshold", "1").set("treshold", "2");
  EXPECT_THAT(unknown.configuration_error(), HasSubstr("treshold"));
  EXPECT_THAT(HookTest(builtin("loss_threshold")).configuration_error(), HasSubstr("'threshold'"));
  EXPECT_EQ(HookTest(builtin("loss_threshold")).set("threshold", "1").configuration_error(), "");
}

TEST(HookTestConfiguration, ARefusalInCreatePointsAtTheKeyItNames) {
  HookTest t(builtin("stop_at_step"));
  t.set("num_steps", "-3");
  EXPECT_THAT(t.configuration_error(),
              StartsWith("--set hook.stop_at_step.num_steps=-3: [hook.stop_at_step] num_steps: "
                         "hook 'stop_at_step' (plugin 'stop_at_step', " +
                         builtin("stop_at_step").string() + "): "));
  EXPECT_THAT(t.configuration_error(), HasSubstr("invalid num_steps=-3 (must be > 0)"));
}

// The harness's messages are the program's, word for word.
TEST(HookTestConfiguration, MessagesAreTheProgramsOwn) {
  hookhost::testing::TempDir cwd;
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"threshold", "abc"}, {"threshold", "1e999"}, {"treshold", "1"}}) {
    HookTest t(builtin("loss_threshold"));
    t.set(key, value);
    const std::string harness = t.configuration_error();
    ASSERT_FALSE(harness.empty());
    const auto program =
        hookhost::testing::run_hookhost({"run", "--plugin-dir", builtin("x").parent_path().string(),
                                         "--set", "hook.loss_threshold." + key + "=" + value},
                                        cwd.path());
    EXPECT_EQ(program.exit_code, 2);
    EXPECT_THAT(program.err, HasSubstr("configuration error: " + harness + "\n")) << program.err;
  }
  HookTest refused(builtin("stop_at_step"));
  refused.set("num_steps", "1").set("last_step", "2");
  const auto program = hookhost::testing::run_hookhost(
      {"run", "--plugin-dir", builtin("x").parent_path().string(), "--set",
       "hook.stop_at_step.num_steps=1", "--set", "hook.stop_at_step.last_step=2"},
      cwd.path());
  EXPECT_THAT(program.err, HasSubstr("configuration error: " + refused.configuration_error()));
}

TEST(HookTestConfiguration, HookKeysATestOfOneHookCannotApplyAreRefused) {
  HookTest t(builtin("stop_at_step"));
  EXPECT_THROW(t.set("order", "1"), std::invalid_argument);
  EXPECT_THROW(t.log_level("loud"), std::invalid_argument);
  // A test runs one process: a rank selection would be silently ignored, so it is refused alike.
  try {
    t.set("ranks", "1");
    ADD_FAILURE() << "set(\"ranks\", ...) was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "HookTest::set(\"ranks\", ...): 'ranks' is a [hook] key a test of one hook does "
                 "not apply");
  }
  EXPECT_THROW(HookTest(fixture("no_note")), hookhost::LoadError);
}

// The host's keys that shape the calls are read as the program reads them: a step filter skips
// the other steps' calls, and mode = observe runs them behind the step, off the test's thread.
TEST(HookTestConfiguration, StepFiltersAndObserverKeysAreTheProgramsOwn) {
  {
    TraceFile trace;
    HookTest t(fixture("scripted"));
    t.set("trace", trace.path()).set("every_n_steps", "3").steps(7);
    const RunResult run = t.run();
    EXPECT_EQ(run.outcome, Outcome::completed) << run.log_text();
    EXPECT_EQ(run.trace(),
              (Names{"begin", "after_create_session", "before_run@1", "after_run@1", "before_run@4",
                     "after_run@4", "before_run@7", "after_run@7", "end"}));
  }
  {
    TraceFile trace;
    HookTest t(fixture("scripted"));
    t.set("trace", trace.path()).set("mode", "observe").set("queue", "2");
    t.set("trace_thread", "true").steps(5);
    const RunResult run = t.run();
    EXPECT_EQ(run.outcome, Outcome::completed) << run.log_text();
    const std::vector<std::string> after_runs =
        hookhost::testing::starting_with(trace.lines(), "scripted after_run");
    ASSERT_EQ(after_runs.size(), 5u);
    for (const auto& line : after_runs) EXPECT_THAT(line, HasSubstr("begin_thread=0"));
  }
  HookTest t(fixture("scripted"));
  t.set("trace", "unused.txt").set("queue", "2");
  try {
    t.run();
    ADD_FAILURE() << "queue without mode = observe was accepted";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("--set hook.scripted.queue=2"),
                                HasSubstr("applies to observers only")));
  }
}

TEST(HookTestConfiguration, TheLogLevelIsWhatTheHookSees) {
  HookTest t(builtin("stop_at_step"));
  t.set("num_steps", "2").log_level("warn");
  EXPECT_THAT(t.run().log, IsEmpty());
  EXPECT_EQ(t.log_level("info").run().log.size(), 1u);
}

// --- Isolation and the run directory. ---

TEST(HookTestIsolation, AHookInARunnerProcessIsObservedTheSameWay) {
  HookTest t(builtin("stop_at_step"));
  t.set("num_steps", "3").isolation(Isolation::process).steps(10);
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::stopped) << run.log_text();
  EXPECT_EQ(run.trace(),
            (Names{"begin", "after_create_session", "after_run@1", "after_run@2", "after_run@3"}));
  EXPECT_EQ(run.hook_stop_reason, "reached the step limit (last_step=3, global step 3)");
  EXPECT_EQ(run.log_lines("info"),
            Names{"will stop at global step 3 (num_steps=3 from global step 0)"});
  EXPECT_EQ(run.state_bytes(), HookTest(t).isolation(Isolation::in_process).run().state_bytes());
}

TEST(HookTestRunDir, TheRunDirectoryLivesAsLongAsTheRun) {
  fs::path dir;
  {
    HookTest t(builtin("history_saver"));
    t.set("every_n_steps", "1").set("flush_secs", "0").steps(3);
    const RunResult run = t.run();
    dir = run.run_dir;
    const auto rows = hookhost::testing::lines_of(run.run_dir / "history.csv");
    ASSERT_EQ(rows.size(), 4u) << run.log_text();
    EXPECT_EQ(rows[0], "step,wall_time,loss");
    EXPECT_THAT(rows[3], StartsWith("3,"));
  }
  EXPECT_FALSE(fs::exists(dir));
  {
    HookTest t(builtin("history_saver"));
    dir = t.keep_run_dir().steps(1).run().run_dir;
  }
  EXPECT_TRUE(fs::exists(dir / "history.csv"));
  fs::remove_all(dir);
}

// --- The harness run that HookTest and `hookhost check` share (testing/harness_run.hpp). ---

// The scripted fixture, loaded into this process and tracing into the run directory, with 10
// steps of data.
hookhost::testing::HarnessSpec scripted_spec(const fs::path& run_dir,
                                             std::multimap<std::string, std::string> params) {
  params.emplace("trace", (run_dir / "trace.txt").string());
  hookhost::DiscoveredPlugin found;
  found.file = fixture("scripted");
  found.metadata = *hookhost::read_plugin_note(found.file).metadata;
  hookhost::testing::HarnessSpec spec;
  spec.script.end_of_data_step = 11;
  spec.options.run_dir = run_dir;
  spec.hook.plugin = hookhost::load_plugin(found);
  spec.hook.settings.instance_name = "scripted";
  spec.hook.params = hookhost::resolve_params(found.metadata, "scripted", params);
  return spec;
}

TEST(HarnessRun, TheObserverSeesEveryStepAndAStopItAsksEndsTheJobAfterThatStep) {
  hookhost::testing::TempDir dir;
  hookhost::testing::HarnessSpec spec = scripted_spec(dir.path(), {});
  std::vector<int64_t> seen;
  spec.after_step = [&](int64_t steps_run, hookhost::Runtime& runtime,
                        const hookhost::testing::CallLog& calls) {
    seen.push_back(steps_run);
    EXPECT_FALSE(calls.calls.empty());
    if (steps_run == 3) runtime.request_stop(HH_STOP_CAUSE_HOST, "enough");
  };
  const hookhost::testing::HarnessOutcome out = hookhost::testing::run_harness(spec);
  ASSERT_TRUE(out.created);
  EXPECT_FALSE(out.create_error);
  EXPECT_EQ(out.result.outcome, Outcome::stopped);
  EXPECT_EQ(out.result.global_step, 3);
  EXPECT_THAT(seen, ElementsAre(1, 2, 3));
  ASSERT_FALSE(out.calls.calls.empty());
  EXPECT_EQ(out.calls.calls.front().call.callback, Callback::begin);
  EXPECT_EQ(out.calls.calls.back().call.callback, Callback::end);
  EXPECT_FALSE(out.calls.destroy_error);
  EXPECT_EQ(out.reports.size(), 1u);
}

TEST(HarnessRun, ARefusedCreateIsTheOutcomesCreateErrorAndNothingRuns) {
  hookhost::testing::TempDir dir;
  hookhost::testing::HarnessSpec spec = scripted_spec(dir.path(), {{"create_fail", "true"}});
  int steps = 0;
  spec.after_step = [&](int64_t, hookhost::Runtime&, const hookhost::testing::CallLog&) {
    ++steps;
  };
  const hookhost::testing::HarnessOutcome out = hookhost::testing::run_harness(spec);
  EXPECT_FALSE(out.created);
  ASSERT_TRUE(out.create_error);
  EXPECT_THAT(out.create_error->what(), HasSubstr("scripted"));
  EXPECT_EQ(steps, 0);
  EXPECT_THAT(out.calls.calls, IsEmpty());
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
