// The lifecycle runtime driven with real plugin files (a C++ SDK fixture and a pure C fixture)
// loaded from a temporary folder, around a scripted workload.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <hookhost/host/discovery.hpp>
#include <hookhost/host/loader.hpp>
#include <hookhost/host/runtime.hpp>

#include "test_support.hpp"
#include "testing/scripted_workload.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class RuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::path plugins = dir_ / "plugins";
    fs::create_directory(plugins);
    copy_plugin(fixture_plugin("scripted"), plugins);
    copy_plugin(fixture_plugin("c_recorder"), plugins);
    DiscoveryResult found = discover_plugins({plugins});
    ASSERT_NE(found.find("scripted"), nullptr);
    ASSERT_NE(found.find("c_recorder"), nullptr);
    scripted_ = load_plugin(*found.find("scripted"));
    c_recorder_ = load_plugin(*found.find("c_recorder"));
    session_.script().end_of_data_step = 4;  // steps 1..3
    make_runtime();
  }

  // A fresh workload with data for steps 1..last_step, and its record cleared.
  void reset_session(int64_t last_step) {
    runs_.clear();
    session_ = ScriptedWorkload(detail::Script{}, &runs_);
    session_.script().end_of_data_step = last_step + 1;
  }

  void make_runtime(int max_recoveries = 3, uint32_t time_every_n_steps = 64) {
    rt_.reset();
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_);
    RuntimeOptions options;
    options.time_every_n_steps = time_every_n_steps;
    options.run_dir = dir_.path();
    options.recovery_backoff = std::chrono::milliseconds(1);
    options.max_recoveries = max_recoveries;
    options.logger = std::make_shared<spdlog::logger>("hookhost", sink);
    options.on_recover = [this](Runtime&) { ++recoveries_; };
    rt_ = std::make_unique<Runtime>(session_, options);
  }

  void add(const std::string& name, std::multimap<std::string, std::string> params = {},
           int order = 0, FailurePolicy policy = FailurePolicy::disable,
           std::shared_ptr<const LoadedPlugin> plugin = nullptr) {
    if (!plugin) plugin = scripted_;
    params.emplace("trace", trace_.string());
    rt_->add_hook(plugin, HookSettings{name, order, policy},
                  resolve_params(plugin->metadata(), name, params));
  }

  // Trace lines, optionally only those of one instance (without the instance prefix).
  std::vector<std::string> trace(const std::string& instance = {}) const {
    std::vector<std::string> out;
    for (const auto& line : lines_of(trace_)) {
      if (instance.empty()) {
        out.push_back(line);
      } else if (line.rfind(instance + " ", 0) == 0) {
        out.push_back(line.substr(instance.size() + 1));
      }
    }
    return out;
  }

  long count_calls(const std::string& instance, const std::string& callback) const {
    std::vector<std::string> all = calls(instance);
    return std::count(all.begin(), all.end(), callback);
  }

  // Only the callback names of an instance's trace.
  std::vector<std::string> calls(const std::string& instance) const {
    std::vector<std::string> out;
    for (const auto& line : trace(instance)) out.push_back(line.substr(0, line.find(' ')));
    return out;
  }

  TempDir dir_;
  fs::path trace_ = dir_ / "trace.txt";
  std::ostringstream log_;
  std::vector<SessionRun> runs_;  // one per run() call of session_, failed attempts included
  ScriptedWorkload session_{detail::Script{}, &runs_};
  std::shared_ptr<const LoadedPlugin> scripted_;
  std::shared_ptr<const LoadedPlugin> c_recorder_;
  int recoveries_ = 0;
  std::unique_ptr<Runtime> rt_;
};

// ---- lifecycle order ------------------------------------------------------------------------

// An embedder's step filter: before_run and after_run on the selected steps only, whatever order
// its list comes in; the other hooks and callbacks are untouched.
TEST_F(RuntimeTest, AStepFilterSkipsBothPerStepCallsOfTheStepsItDoesNotSelect) {
  add("all");
  HookSettings settings{"some"};
  settings.step_filter.at_steps = {3, 1, 1};  // steps run at global steps 0, 1, 2; 3 ends the data
  std::multimap<std::string, std::string> params{{"trace", trace_.string()}};
  rt_->add_hook(scripted_, settings, resolve_params(scripted_->metadata(), "some", params));
  const JobResult result = rt_->run_to_end();
  EXPECT_EQ(result.steps_run, 3);
  EXPECT_EQ(count_calls("all", "before_run"), 4);
  EXPECT_EQ(count_calls("all", "after_run"), 3);
  EXPECT_THAT(calls("some"), ElementsAre("begin", "after_create_session", "before_run", "after_run",
                                         "before_run", "end"));
}

TEST_F(RuntimeTest, CallsEveryHookInLifecycleOrder) {
  add("a");
  add("b");
  JobResult result = rt_->run_to_end();
  EXPECT_EQ(result.outcome, Outcome::completed);
  EXPECT_EQ(result.steps_run, 3);
  std::vector<std::string> order;
  for (const auto& line : trace()) order.push_back(line.substr(0, line.find(' ', 2)));
  EXPECT_THAT(order,
              ElementsAre("a begin", "b begin", "a after_create_session", "b after_create_session",
                          "a before_run", "b before_run", "a after_run", "b after_run",
                          "a before_run", "b before_run", "a after_run", "b after_run",
                          "a before_run", "b before_run", "a after_run", "b after_run",
                          // the fourth step hits end of data: no after_run for it
                          "a before_run", "b before_run", "a end", "b end"));
  EXPECT_THAT(trace("a").back(), AllOf(HasSubstr("outcome=completed"), HasSubstr("end of data")));
}

TEST_F(RuntimeTest, PureCPluginIsDrivenLikeAnyOther) {
  add("c", {{"fetch", "loss"}}, 0, FailurePolicy::disable, c_recorder_);
  EXPECT_EQ(rt_->run_to_end().outcome, Outcome::completed);
  EXPECT_THAT(calls("c"),
              ElementsAre("begin", "after_create_session", "before_run", "after_run", "before_run",
                          "after_run", "before_run", "after_run", "before_run", "end"));
  // The loss is 1/step.
  EXPECT_THAT(trace("c")[3], ::testing::EndsWith("values=loss:1"));
  EXPECT_THAT(trace("c")[7], ::testing::EndsWith("values=loss:0.333333"));
}

TEST_F(RuntimeTest, ExplicitOrderWinsAndTiesKeepConfigurationOrder) {
  add("late", {}, 5);
  add("first", {}, -1);
  add("late_too", {}, 5);
  add("middle", {}, 0);
  ASSERT_TRUE(rt_->start());
  EXPECT_THAT(rt_->hook_order(), ElementsAre("first", "middle", "late", "late_too"));
  EXPECT_THAT(log_.str(),
              HasSubstr("hook order: first (order -1), middle (order 0), late (order 5)"));
  std::vector<std::string> begins;
  for (const auto& line : trace())
    if (line.find(" begin ") != std::string::npos) begins.push_back(line.substr(0, line.find(' ')));
  EXPECT_THAT(begins, ElementsAre("first", "middle", "late", "late_too"));
}

TEST_F(RuntimeTest, RunBeforeStartAndAfterStopIsAnError) {
  add("a", {{"stop_at_iteration", "0"}});
  EXPECT_THROW(rt_->run(), std::logic_error);
  ASSERT_TRUE(rt_->start());
  EXPECT_TRUE(rt_->run().ran);
  EXPECT_TRUE(rt_->should_stop());
  EXPECT_THROW(rt_->run(), std::logic_error);
}

TEST_F(RuntimeTest, EndIsDeliveredExactlyOnceEvenIfCloseIsCalledTwice) {
  add("a");
  ASSERT_TRUE(rt_->start());
  rt_->run();
  rt_->close();
  rt_->close();
  rt_.reset();
  EXPECT_EQ(count_calls("a", "end"), 1);
  EXPECT_THAT(calls("a").back(), "destroy");
  EXPECT_THAT(trace("a").end()[-2],
              AllOf(HasSubstr("outcome=stopped"), HasSubstr("closed by the host")));
}

TEST_F(RuntimeTest, DestroyIsCalledExactlyOnceWhateverStateTheHookIsIn) {
  // Never started: destroyed without begin or end.
  add("unstarted");
  rt_.reset();
  EXPECT_THAT(calls("unstarted"), ElementsAre("destroy"));

  // A hook whose begin failed, one disabled mid-run, and a healthy one, with close() left to the
  // destructor.
  make_runtime();
  add("bad_begin", {{"fail_in", "begin"}});
  add("bad_step", {{"fail_in", "after_run"}, {"fail_at_iteration", "1"}});
  add("healthy");
  ASSERT_TRUE(rt_->start());
  rt_->run();
  rt_->run();
  rt_.reset();
  EXPECT_THAT(calls("bad_begin"), ElementsAre("begin", "end", "destroy"));
  EXPECT_THAT(calls("bad_step"),
              ElementsAre("begin", "after_create_session", "before_run", "after_run", "before_run",
                          "after_run", "end", "destroy"));
  EXPECT_EQ(count_calls("healthy", "destroy"), 1);
  EXPECT_EQ(calls("healthy").back(), "destroy");
}

// ---- fetches, feeds, values ---------------------------------------------------------------

TEST_F(RuntimeTest, EachHookReceivesExactlyWhatItFetched) {
  add("losses", {{"fetch", "loss"}});
  add("steps", {{"fetch", "global_step,learning_rate"}});
  add("nothing");
  rt_->run_to_end();
  EXPECT_THAT(trace("losses")[3], ::testing::EndsWith("values=loss:1"));  // the loss is 1/step
  EXPECT_THAT(trace("steps")[3], HasSubstr("values=global_step:1,learning_rate:0.1"));
  EXPECT_THAT(trace("nothing")[3], HasSubstr("values="));
  EXPECT_THAT(trace("nothing")[3], ::testing::EndsWith("values="));
  // Fetches are merged into one session call, each name once.
  EXPECT_THAT(runs_[0].fetched, ElementsAre("loss", "global_step", "learning_rate"));
}

TEST_F(RuntimeTest, ContextCarriesTheStaleStepAndTheHostTheLiveOne) {
  add("a");
  rt_->run_to_end();
  EXPECT_THAT(trace("a")[2], HasSubstr("before_run gs=0 live=0 it=0"));
  EXPECT_THAT(trace("a")[3], HasSubstr("after_run gs=0 live=1 it=0"));
  EXPECT_THAT(trace("a")[5], HasSubstr("after_run gs=1 live=2 it=1"));
}

TEST_F(RuntimeTest, HookFeedReachesTheSession) {
  add("lr", {{"feed", "learning_rate=0.5"}});
  add("reader", {{"fetch", "learning_rate"}});
  rt_->run_to_end();
  ASSERT_FALSE(runs_.empty());
  EXPECT_DOUBLE_EQ(runs_[0].fed.at("learning_rate").as_double(), 0.5);
  EXPECT_THAT(trace("reader")[3], HasSubstr("values=learning_rate:0.5"));
}

TEST_F(RuntimeTest, FeedConflictBetweenHooksNamesBothAndDisablesTheSecond) {
  add("one", {{"feed", "learning_rate=0.5"}});
  add("two", {{"feed", "learning_rate=0.7"}});
  JobResult result = rt_->run_to_end();
  EXPECT_EQ(result.outcome, Outcome::completed);
  EXPECT_THAT(log_.str(), AllOf(HasSubstr("feed conflict: hook 'two' and hook 'one' both feed "
                                          "'learning_rate'")));
  EXPECT_DOUBLE_EQ(runs_[0].fed.at("learning_rate").as_double(), 0.5);
  EXPECT_THAT(calls("two"), ElementsAre("begin", "after_create_session", "before_run", "end"));
  EXPECT_THAT(trace("two").back(), AllOf(HasSubstr("outcome=failed"), HasSubstr("feed conflict")));
  EXPECT_EQ(count_calls("one", "after_run"), 3);
}

TEST_F(RuntimeTest, FeedConflictWithTheCallerNamesTheCaller) {
  add("lr", {{"feed", "learning_rate=0.5"}});
  ASSERT_TRUE(rt_->start());
  TensorMap feeds;
  feeds.emplace("learning_rate", Tensor::scalar_f32(0.25f));
  rt_->run({"loss"}, feeds);
  EXPECT_THAT(log_.str(),
              HasSubstr("feed conflict: hook 'lr' and the caller both feed 'learning_rate'"));
  EXPECT_DOUBLE_EQ(runs_[0].fed.at("learning_rate").as_double(), 0.25);
}

TEST_F(RuntimeTest, UnknownFetchFailsOnlyThatHookAndListsWhatExists) {
  add("typo", {{"fetch", "los"}});
  add("fine", {{"fetch", "loss"}});
  EXPECT_EQ(rt_->run_to_end().outcome, Outcome::completed);
  EXPECT_THAT(log_.str(),
              AllOf(HasSubstr("hook 'typo'"), HasSubstr("fetch 'los'"),
                    HasSubstr("it provides: bias, global_step, learning_rate, loss, weights")));
  EXPECT_EQ(count_calls("fine", "after_run"), 3);
}

TEST_F(RuntimeTest, CallerGetsOnlyItsOwnFetches) {
  add("a", {{"fetch", "global_step"}});
  ASSERT_TRUE(rt_->start());
  RunOutput out = rt_->run({"loss"});
  ASSERT_TRUE(out.ran);
  EXPECT_EQ(out.values.size(), 1u);
  EXPECT_FLOAT_EQ(static_cast<float>(out.values.at("loss").as_double()), 1.0f);  // 1/step
  EXPECT_THROW(rt_->run({"nope"}), std::invalid_argument);
}

// ---- stopping ---------------------------------------------------------------------------------

TEST_F(RuntimeTest, StopRequestedInAfterRunTakesEffectAfterTheStep) {
  add("stopper", {{"stop_at_iteration", "1"}});
  add("other");
  JobResult result = rt_->run_to_end();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.stop_cause, HH_STOP_CAUSE_HOOK);
  EXPECT_EQ(result.steps_run, 2);
  EXPECT_THAT(result.reason, HasSubstr("hook 'stopper': asked in after_run"));
  // The hook after the stopper still got after_run for the stopping step, and saw the request.
  EXPECT_THAT(trace("other")[5], HasSubstr("after_run gs=1 live=2 it=1 stop=1"));
  EXPECT_THAT(trace("other").back(), AllOf(HasSubstr("outcome=stopped"), HasSubstr("cause=1")));
}

TEST_F(RuntimeTest, StopRequestedInBeforeRunStillRunsTheStep) {
  add("stopper", {{"stop_in_before_at", "0"}});
  add("other");
  JobResult result = rt_->run_to_end();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.steps_run, 1);
  EXPECT_THAT(calls("other"),
              ElementsAre("begin", "after_create_session", "before_run", "after_run", "end"));
}

TEST_F(RuntimeTest, HostRequestStopCarriesCauseToEveryHook) {
  add("a");
  ASSERT_TRUE(rt_->start());
  rt_->run();
  rt_->request_stop(HH_STOP_CAUSE_SIGNAL, "SIGTERM received");
  EXPECT_TRUE(rt_->should_stop());
  JobResult result = rt_->close();
  EXPECT_EQ(result.stop_cause, HH_STOP_CAUSE_SIGNAL);
  EXPECT_THAT(trace("a").back(), AllOf(HasSubstr("cause=3"), HasSubstr("SIGTERM received")));
}

// ---- workload errors and recovery ------------------------------------------------------------

TEST_F(RuntimeTest, RecoverableErrorRecreatesSessionAndRetriesTheStep) {
  session_.script().faults[2] = {{StepStatus::aborted, "injected fault"}};  // at global step 1
  add("a");
  JobResult result = rt_->run_to_end();
  EXPECT_EQ(result.outcome, Outcome::completed);
  EXPECT_EQ(result.steps_run, 3);
  EXPECT_THAT(session_.creations(), ElementsAre(1, 2));
  EXPECT_EQ(recoveries_, 1);
  EXPECT_THAT(calls("a"), ElementsAre("begin", "after_create_session", "before_run", "after_run",
                                      "before_run",  // the aborted attempt: no after_run
                                      "after_create_session", "before_run", "after_run",
                                      "before_run", "after_run", "before_run", "end"));
  EXPECT_THAT(trace("a")[5], HasSubstr("creation=2"));
}

TEST_F(RuntimeTest, RecoveryIsBoundedAndThenTheJobFails) {
  const detail::ScriptedFault unavailable{StepStatus::unavailable, "injected fault"};
  session_.script().faults[1] = {unavailable, unavailable, unavailable};  // the first step
  make_runtime(/*max_recoveries=*/2);
  add("a");
  JobResult result = rt_->run_to_end();
  EXPECT_EQ(result.outcome, Outcome::failed);
  EXPECT_THAT(result.reason, AllOf(HasSubstr("3 times in a row"), HasSubstr("max_recoveries=2")));
  EXPECT_THAT(session_.creations(), ElementsAre(1, 2, 3));
  EXPECT_THAT(trace("a").back(), HasSubstr("outcome=failed"));
}

TEST_F(RuntimeTest, WorkloadErrorFailsTheJobWithoutAfterRunButWithEnd) {
  session_.script().faults[3] = {{StepStatus::error, "injected fault"}};  // at global step 2
  add("a");
  JobResult result = rt_->run_to_end();
  EXPECT_EQ(result.outcome, Outcome::failed);
  EXPECT_THAT(result.reason, HasSubstr("the workload failed at global step 2: injected fault"));
  EXPECT_EQ(count_calls("a", "after_run"), 2);
  EXPECT_THAT(trace("a").back(), AllOf(HasSubstr("outcome=failed"), HasSubstr("injected fault")));
}

// ---- failure containment ----------------------------------------------------------------------

class FailurePolicyTest : public RuntimeTest,
                          public ::testing::WithParamInterface<std::tuple<const char*, bool>> {};

// Every callback, a throwing C++ hook and an error-returning C hook, under each policy.
TEST_P(FailurePolicyTest, PolicyDecidesWhatHappensAndOthersKeepTheirCalls) {
  const auto [callback, throws] = GetParam();
  const bool in_end = std::string(callback) == "end";
  for (FailurePolicy policy : {FailurePolicy::keep_going, FailurePolicy::disable,
                               FailurePolicy::stop, FailurePolicy::fail}) {
    SCOPED_TRACE(std::string(callback) + (throws ? " throws" : " returns an error") +
                 ", on_error=" + policy_name(policy));
    rt_.reset();  // the previous runtime's hooks trace their destroy first
    fs::remove(trace_);
    reset_session(3);
    make_runtime();
    add("bad", {{"fail_in", callback}}, 0, policy, throws ? scripted_ : c_recorder_);
    add("good");
    JobResult result = rt_->run_to_end();
    // A failure in end() cannot stop the job any more, but under `fail` it fails it, once every
    // hook had its end().
    Outcome expected = policy == FailurePolicy::fail         ? Outcome::failed
                       : in_end                              ? Outcome::completed
                       : policy == FailurePolicy::keep_going ? Outcome::completed
                       : policy == FailurePolicy::disable    ? Outcome::completed
                                                             : Outcome::stopped;
    EXPECT_EQ(result.outcome, expected) << result.reason;

    std::vector<std::string> bad = calls("bad");
    auto failed_at = std::find(bad.begin(), bad.end(), callback);
    ASSERT_NE(failed_at, bad.end());
    if (policy == FailurePolicy::keep_going) {
      // `continue`: the failing hook keeps every call, as the other one does.
      EXPECT_EQ(bad, calls("good"));
      EXPECT_EQ(rt_->reports().at(0).disabled, false);
    } else if (!in_end) {
      // The failing hook got nothing after its failure but one end(failed).
      EXPECT_THAT(std::vector<std::string>(failed_at + 1, bad.end()), ElementsAre("end"));
      EXPECT_THAT(trace("bad").back(),
                  AllOf(HasSubstr("outcome=failed"), HasSubstr(std::string(callback) + " failed")));
    }
    EXPECT_EQ(std::count(bad.begin(), bad.end(), "end"), 1);

    // The other hook got every call the job made. (A job that fails in begin never begins the
    // hooks after the failing one; they are only destroyed.)
    std::vector<std::string> good = calls("good");
    if (std::string(callback) == "begin" && policy == FailurePolicy::fail) {
      EXPECT_TRUE(good.empty());
      continue;
    }
    EXPECT_EQ(good.front(), "begin");
    EXPECT_EQ(good.back(), "end");
    EXPECT_EQ(std::count(good.begin(), good.end(), "end"), 1);
    if (expected == Outcome::completed) {
      EXPECT_EQ(std::count(good.begin(), good.end(), "after_run"), 3);
    }
    EXPECT_THAT(log_.str(),
                AllOf(HasSubstr("hook 'bad'"), HasSubstr("failed in " + std::string(callback))));
    EXPECT_THAT(log_.str(), HasSubstr(throws ? "scripted.so" : "c_recorder.so"));
    EXPECT_THAT(log_.str(), HasSubstr(throws ? "scripted failure in" : "c_recorder failing in"));
  }
}

INSTANTIATE_TEST_SUITE_P(AllCallbacks, FailurePolicyTest,
                         ::testing::Combine(::testing::Values("begin", "after_create_session",
                                                              "before_run", "after_run", "end"),
                                            ::testing::Bool()));

TEST_F(RuntimeTest, FailureMessagesNameTheStepOfTheCallOnce) {
  session_.script().end_of_data_step = 4;
  add("late", {{"fail_in", "end"}}, 0, FailurePolicy::fail, c_recorder_);
  add("early", {{"fail_in", "after_run"}}, 0, FailurePolicy::disable, c_recorder_);
  EXPECT_EQ(rt_->run_to_end().outcome, Outcome::failed);
  const std::string log = log_.str();
  // after_run names the step that ran (its context's step, as the trace does); end the final one.
  EXPECT_THAT(log, HasSubstr("hook 'early' (plugin 'c_recorder'"));
  EXPECT_THAT(log, HasSubstr("failed in after_run at global step 0: c_recorder failing in"));
  EXPECT_THAT(log, HasSubstr("failed in end at global step 3: c_recorder failing in end"));
  size_t count = 0;
  for (size_t at = log.find("failing in end"); at != std::string::npos;
       at = log.find("failing in end", at + 1))
    ++count;
  EXPECT_EQ(count, 1u) << log;
}

TEST_F(RuntimeTest, FatalErrorDisablesTheHookEvenUnderContinue) {
  session_.script().end_of_data_step = 4;
  add("bad", {{"fail_in", "after_run"}, {"fatal", "true"}}, 0, FailurePolicy::keep_going,
      c_recorder_);
  add("good");
  EXPECT_EQ(rt_->run_to_end().outcome, Outcome::completed);
  const std::vector<std::string> bad = calls("bad"), good = calls("good");
  EXPECT_EQ(std::count(bad.begin(), bad.end(), "after_run"), 1);
  EXPECT_EQ(std::count(good.begin(), good.end(), "after_run"), 3);
  EXPECT_TRUE(rt_->reports().at(0).disabled);
  EXPECT_THAT(log_.str(), HasSubstr(" [fatal error; on_error=continue: a fatal error disables "
                                    "the hook anyway, the job continues]\n"));
}

TEST_F(RuntimeTest, EveryPolicyEndsTheFailureLineWithOneBracketSayingWhatHappens) {
  const std::vector<std::pair<FailurePolicy, std::string>> expected = {
      {FailurePolicy::keep_going, " [on_error=continue: the hook keeps getting calls]\n"},
      {FailurePolicy::disable, " [on_error=disable: the hook is disabled, the job continues]\n"},
      {FailurePolicy::stop,
       " [on_error=stop: the hook is disabled, the job stops after this step]\n"},
      {FailurePolicy::fail, " [on_error=fail: the job fails]\n"}};
  for (const auto& [policy, tail] : expected) {
    log_.str("");
    reset_session(2);
    make_runtime();
    add("bad", {{"fail_in", "after_run"}}, 0, policy, c_recorder_);
    rt_->run_to_end();
    const std::string log = log_.str();
    const auto at = log.find("failed in after_run at global step 0: ");
    ASSERT_NE(at, std::string::npos) << log;
    const std::string line = log.substr(at, log.find('\n', at) + 1 - at);
    EXPECT_TRUE(line.size() > tail.size() && line.ends_with(tail)) << line;
  }
}

TEST_F(RuntimeTest, HookDisabledInBeforeRunContributesNothingToTheStep) {
  add("feeder", {{"feed", "learning_rate=0.9"}, {"fail_in", "before_run"}});
  rt_->run_to_end();
  for (const SessionRun& run : runs_) EXPECT_EQ(run.fed.count("learning_rate"), 0u);
}

TEST_F(RuntimeTest, FatalStatusAndNonStandardExceptionsDisableTheHook) {
  add("fatal", {{"fail_in", "after_run"}, {"fail_mode", "fatal"}});
  add("weird", {{"fail_in", "after_run"}, {"fail_mode", "int"}});
  add("c_fatal", {{"fail_in", "before_run"}, {"fatal", "true"}}, 0, FailurePolicy::disable,
      c_recorder_);
  EXPECT_EQ(rt_->run_to_end().outcome, Outcome::completed);
  auto reports = rt_->reports();
  ASSERT_EQ(reports.size(), 3u);
  for (const auto& r : reports) EXPECT_TRUE(r.disabled) << r.instance_name;
  EXPECT_THAT(reports[1].failure, HasSubstr("unknown exception"));
}

TEST_F(RuntimeTest, CreateFailureIsAConfigErrorNamingInstanceAndPlugin) {
  try {
    add("broken", {{"create_fail", "true"}});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("hook 'broken'"), HasSubstr("plugin 'scripted'"),
                                HasSubstr("scripted.so"), HasSubstr("create_fail=true")));
  }
}

TEST_F(RuntimeTest, DuplicateInstanceNamesAreRejected) {
  add("same");
  EXPECT_THROW(add("same"), ConfigError);
}

TEST_F(RuntimeTest, AddingAfterStartIsRefusedBeforeThePluginCreatesAnInstance) {
  add("a");
  ASSERT_TRUE(rt_->start());
  EXPECT_THROW(add("late", {{"trace_create", "true"}}), std::logic_error);
  rt_.reset();
  EXPECT_TRUE(calls("late").empty()) << "the refused hook was created";
}

// ---- accounting and state ---------------------------------------------------------------------

TEST_F(RuntimeTest, AccountingCountsEveryCall) {
  add("a");
  rt_->run_to_end();
  auto reports = rt_->reports();
  ASSERT_EQ(reports.size(), 1u);
  const auto& cb = reports[0].callbacks;
  EXPECT_EQ(cb.at("begin").calls, 1u);
  EXPECT_EQ(cb.at("after_create_session").calls, 1u);
  EXPECT_EQ(cb.at("before_run").calls, 4u);
  EXPECT_EQ(cb.at("after_run").calls, 3u);
  EXPECT_EQ(cb.at("end").calls, 1u);
  EXPECT_GE(cb.at("after_run").total.count(), cb.at("after_run").max.count());
  EXPECT_THAT(reports[0].plugin_file, HasSubstr("scripted.so"));
}

// Per-step callbacks are timed on one step in time_every_n_steps (the first, then every n-th);
// the others on every call. Every call is counted either way.
TEST_F(RuntimeTest, AccountingTimesOneStepInN) {
  for (uint32_t every : {1u, 2u, 64u}) {
    SCOPED_TRACE("time_every_n_steps = " + std::to_string(every));
    rt_.reset();
    reset_session(3);  // steps 1..3 complete, the fourth attempt ends the data
    make_runtime(3, every);
    add("a");
    add("b", {}, 0, FailurePolicy::disable, c_recorder_);
    rt_->run_to_end();
    for (const HookReport& report : rt_->reports()) {
      const auto& cb = report.callbacks;
      EXPECT_EQ(cb.at("before_run").calls, 4u);
      EXPECT_EQ(cb.at("after_run").calls, 3u);
      // Steps 1 and 3 of every 2nd, step 1 of every 64th; the fourth attempt is a step too.
      EXPECT_EQ(cb.at("before_run").timed_calls, every == 1 ? 4u : 2u - (every == 64));
      EXPECT_EQ(cb.at("after_run").timed_calls, every == 1 ? 3u : 2u - (every == 64));
      EXPECT_EQ(cb.at("begin").timed_calls, 1u);
      EXPECT_EQ(cb.at("end").timed_calls, 1u);
      EXPECT_GE(cb.at("before_run").total.count(), cb.at("before_run").max.count());
      EXPECT_EQ(cb.at("after_run").estimated_total().count(),
                cb.at("after_run").mean().count() * 3);
    }
  }
}

TEST_F(RuntimeTest, HookStateIsStoredAndRestoredByInstanceName) {
  add("a");
  rt_->run_to_end();
  auto states = rt_->hook_states();
  ASSERT_EQ(states.count("a"), 1u);
  EXPECT_EQ(states.at("a"), "after_runs=3");

  rt_.reset();
  fs::remove(trace_);
  reset_session(1);
  make_runtime();
  add("a");
  rt_->restore_hook_states({{"a", "after_runs=3"}, {"gone", "x"}});
  rt_->run_to_end();
  EXPECT_THAT(trace("a")[0], HasSubstr("begin state=after_runs=3"));
  EXPECT_THAT(log_.str(), HasSubstr("state for hook 'gone', which is not configured"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;

// The scripted workload, calling back into the runtime driving it from inside step 3. It wraps
// the workload rather than deriving from it: no script can start a step.
class ReentrantSession : public Session {
 public:
  Runtime* runtime = nullptr;

  explicit ReentrantSession(detail::Script script) : workload_(std::move(script)) {}
  void create(int creation) override { workload_.create(creation); }
  int64_t global_step() const override { return workload_.global_step(); }
  std::vector<std::string> fetchable() const override { return workload_.fetchable(); }
  std::vector<std::string> feedable() const override { return workload_.feedable(); }
  StepResult run(const std::vector<std::string>& fetches, const TensorMap& feeds) override {
    if (runtime && workload_.global_step() == 2) runtime->run();  // a step inside a step
    return workload_.run(fetches, feeds);
  }
  std::string save_state() const override { return workload_.save_state(); }
  void restore_state(std::string_view bytes) override { workload_.restore_state(bytes); }
  std::optional<int64_t> last_step() const override { return workload_.last_step(); }

 private:
  ScriptedWorkload workload_;
};

TEST(RuntimeReentry, AStepStartedFromInsideAStepIsRefusedAndFailsTheJob) {
  detail::Script script;
  script.end_of_data_step = 6;  // steps 1..5
  ReentrantSession session(script);
  RuntimeOptions options;
  options.logger = std::make_shared<spdlog::logger>("reentry");
  Runtime rt(session, options);
  session.runtime = &rt;
  const JobResult result = rt.run_to_end();
  EXPECT_EQ(result.outcome, Outcome::failed);
  EXPECT_THAT(result.reason, AllOf(HasSubstr("run() called from inside the runtime"),
                                   HasSubstr("the runtime is not re-entrant")));
  EXPECT_EQ(result.global_step, 2);
}

TEST(RuntimeReentry, ARecoveryCallbackThatClosesTheRuntimeIsRefused) {
  detail::Script script;
  script.end_of_data_step = 6;                                   // steps 1..5
  script.faults[2] = {{StepStatus::aborted, "injected fault"}};  // at global step 1
  ScriptedWorkload session(script);
  RuntimeOptions options;
  options.logger = std::make_shared<spdlog::logger>("reentry");
  options.recovery_backoff = std::chrono::milliseconds(1);
  options.on_recover = [](Runtime& rt) { rt.close(); };
  Runtime rt(session, options);
  const JobResult result = rt.run_to_end();
  EXPECT_EQ(result.outcome, Outcome::failed);
  EXPECT_THAT(result.reason, HasSubstr("close() called from inside the runtime"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
