// Observers (mode = observe) through the hookhost program: their calls run behind the step on a
// thread of their own, every step exactly once and in order under policy = block, skipped and
// counted under skip; a stop, a failure and a lost runner are handled at the next boundary with the
// step they concern; queues drain before a checkpoint and before end. In process and sandboxed.
// Real program, real plugins, real runner processes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <hookhost/host/discovery.hpp>
#include <hookhost/host/loader.hpp>
#include <hookhost/host/runtime.hpp>
#include <map>
#include <numeric>
#include <regex>
#include <sstream>

#include "event_file_reader.hpp"
#include "process.hpp"
#include "runtime/observer_lane.hpp"
#include "sandbox/process_dispatch.hpp"
#include "test_support.hpp"
#include "testing/scripted_workload.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::Not;

class ObserverJob : public ::testing::Test {
 protected:
  void SetUp() override {
    plugins_ = dir_ / "plugins";
    fs::create_directories(plugins_);
    copy_plugin(fixture_plugin("scripted"), plugins_);
  }
  // linreg for `epochs` epochs (4 steps each, global steps from 0) with the scripted hook 'obs'
  // tracing to obs.txt, `keys` added to its section; `more_sections` after it.
  ProcessResult run(const std::string& keys, int epochs = 5, const std::string& run_keys = "",
                    const std::string& more_sections = "",
                    const std::vector<std::string>& more_args = {"--fresh"}) {
    write_file(dir_ / "job.ini",
               "[run]\nrun_dir = run\n" + run_keys +
                   "\n[workload]\nname = linreg\nepochs = " + std::to_string(epochs) +
                   "\n\n[hook.obs]\nplugin = scripted\ntrace = " + (dir_ / "obs.txt").string() +
                   "\n" + keys + "\n" + more_sections);
    std::vector<std::string> args{"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir",
                                  plugins_.string()};
    args.insert(args.end(), more_args.begin(), more_args.end());
    ProcessResult r = run_hookhost(args, dir_.path());
    r.out += r.err;
    return r;
  }
  std::string trace(const std::string& file = "obs.txt") const {
    return fs::exists(dir_ / file) ? read_file(dir_ / file) : "";
  }
  // The global steps of the trace's `callback` lines, in the order they were written.
  std::vector<int> steps_of(const std::string& callback, const std::string& file = "obs.txt",
                            const std::string& hook = "obs") const {
    const std::string text = trace(file);
    const std::regex line(hook + " " + callback + " gs=(\\d+)");
    std::vector<int> steps;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), line);
         it != std::sregex_iterator(); ++it)
      steps.push_back(std::stoi((*it)[1]));
    return steps;
  }
  static std::vector<int> range(int from, int to) {  // [from, to)
    std::vector<int> out;
    for (int i = from; i < to; ++i) out.push_back(i);
    return out;
  }

  TempDir dir_;
  fs::path plugins_;
};

TEST_F(ObserverJob, BlockDeliversEveryStepOnceInOrderOffTheTrainingThread) {
  const ProcessResult r =
      run("mode = observe\nqueue = 2\nfetch = loss\nafter_run_sleep_ms = 2\ntrace_thread = true");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(steps_of("after_run"), ElementsAreArray(range(0, 20)));
  // The first before_run runs on the step to learn the fetches; every later one behind it.
  EXPECT_THAT(steps_of("before_run"), ElementsAreArray(range(0, 20)));
  const std::string text = trace();
  // Each after_run had the loss it asked for; the first on the training thread's queue too.
  const std::regex with_loss("after_run gs=\\d+ .* values=loss:");
  EXPECT_EQ(std::distance(std::sregex_iterator(text.begin(), text.end(), with_loss),
                          std::sregex_iterator()),
            20);
  EXPECT_THAT(text, Not(HasSubstr("begin_thread=1")));
  EXPECT_THAT(text, HasSubstr("begin_thread=0"));
  // end comes after the drain: the last line is end, after all 20 after_runs.
  EXPECT_THAT(text.substr(text.rfind("obs after_run")), HasSubstr("obs end outcome=completed"));
  EXPECT_THAT(r.out, HasSubstr("mode = observe, queue = 2, policy = block"));
  EXPECT_THAT(r.out, Not(HasSubstr("observer:")));  // nothing skipped
}

TEST_F(ObserverJob, SkipDropsStepsWhileTheQueueIsFullAndCountsThem) {
  const ProcessResult r =
      run("mode = observe\nqueue = 1\npolicy = skip\nafter_run_sleep_ms = 30\nfetch = loss");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::vector<int> delivered = steps_of("after_run");
  ASSERT_FALSE(delivered.empty());
  EXPECT_LT(delivered.size(), 20u);  // 20 steps of microseconds against 30 ms per call
  EXPECT_TRUE(std::is_sorted(delivered.begin(), delivered.end()));
  EXPECT_EQ(std::adjacent_find(delivered.begin(), delivered.end()), delivered.end());
  // Every step is either delivered or counted, never both and never neither.
  const std::regex counted("observer: (\\d+) steps skipped, its queue full \\(policy = skip\\)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, counted)) << r.out;
  EXPECT_EQ(std::stoul(m[1]) + delivered.size(), 20u);
  EXPECT_THAT(r.out, HasSubstr("observer 'obs' fell behind: global step"));
}

TEST_F(ObserverJob, AStopFromAnObserverEndsTheJobWithinQueuePlusOneSteps) {
  const ProcessResult r =
      run("mode = observe\nqueue = 3\nstop_at_iteration = 4\nafter_run_sleep_ms = 5", 10);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("job stopped"));
  const std::vector<int> delivered = steps_of("after_run");
  ASSERT_GE(delivered.size(), 5u);
  // Asked in after_run of global step 4: at most queue + 1 = 4 more steps ran, and each reached
  // the observer before its end.
  EXPECT_LE(delivered.back(), 4 + 3 + 1);
  EXPECT_THAT(delivered, ElementsAreArray(range(0, delivered.back() + 1)));
  EXPECT_THAT(trace(), HasSubstr("obs end outcome=stopped"));
}

TEST_F(ObserverJob, AFailureIsHandledWithTheStepItConcerns) {
  const ProcessResult r =
      run("mode = observe\nqueue = 4\nfail_in = after_run\nfail_at_iteration = 7\n"
          "after_run_sleep_ms = 2\non_error = disable");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(
      r.out,
      AllOf(HasSubstr("hook 'obs' (plugin 'scripted'"),
            HasSubstr("failed in after_run at global step 7: std::runtime_error: scripted failure"),
            HasSubstr("on_error=disable")));
  EXPECT_THAT(steps_of("after_run"), ElementsAreArray(range(0, 8)));  // nothing after it
  EXPECT_THAT(r.out, HasSubstr("job completed"));
  EXPECT_THAT(trace(), HasSubstr("obs end outcome=failed"));  // its own end says it failed
}

TEST_F(ObserverJob, ContinueKeepsDeliveringAfterAFailure) {
  const ProcessResult r =
      run("mode = observe\nfail_in = after_run\nfail_at_iteration = 3\non_error = continue");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("failed in after_run at global step 3"));
  EXPECT_THAT(steps_of("after_run"), ElementsAreArray(range(0, 20)));
}

TEST_F(ObserverJob, AnObserverCannotFeed) {
  const ProcessResult r = run("mode = observe\nfeed = x=1\non_error = continue", 1);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("an observer cannot feed"));
}

TEST_F(ObserverJob, ABadKeyStopsTheJobBeforeItStartsNamingTheLine) {
  struct Case {
    std::string keys, says;
  };
  for (const Case& c : {
           Case{"mode = later", "expected observe"},
           Case{"queue = 4", "'queue' applies to observers only; add mode = observe"},
           Case{"policy = skip", "'policy' applies to observers only"},
           Case{"mode = observe\nqueue = 0", "expected an integer from 1 to 65536"},
           Case{"mode = observe\nqueue = 70000", "expected an integer from 1 to 65536"},
           Case{"mode = observe\npolicy = drop", "expected block"},
           Case{"mode = observe\non_error = fail", "an observer cannot fail the job"},
       }) {
    SCOPED_TRACE(c.keys);
    const ProcessResult r = run(c.keys, 1);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_THAT(r.out, AllOf(HasSubstr("job.ini:"), HasSubstr(c.says)));
    EXPECT_EQ(trace(), "");  // nothing ran
  }
  // [run] on_error = fail reaches the observer too.
  const ProcessResult r = run("mode = observe", 1, "on_error = fail\n");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("on_error is fail (from [run])"));
}

TEST_F(ObserverJob, ASandboxedObserverGetsEveryStepInOrder) {
  const ProcessResult r =
      run("isolation = process\nmode = observe\nqueue = 2\nfetch = loss\nafter_run_sleep_ms = 1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(steps_of("after_run"), ElementsAreArray(range(0, 20)));
  EXPECT_THAT(steps_of("before_run"), ElementsAreArray(range(0, 20)));
  EXPECT_THAT(trace(), HasSubstr("obs end outcome=completed"));
}

// A sandboxed observer's step is one message: its runner calls after_run without a second
// request from the host. Each call still sees its own live step, and the names its before_run asks
// for are the host's to check, also when the runner answers a known name itself.
TEST_F(ObserverJob, ASandboxedObserversOneMessageStepSeesEachCallsLiveStep) {
  const ProcessResult r =
      run("isolation = process\nmode = observe\nqueue = 4\nfetch = loss, weights, bias");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string text = trace();
  for (int step = 0; step < 20; ++step) {
    const std::string gs = std::to_string(step);
    EXPECT_THAT(text, HasSubstr("obs before_run gs=" + gs + " live=" + gs + " "));
    EXPECT_THAT(text, HasSubstr("obs after_run gs=" + gs + " live=" + std::to_string(step + 1)));
  }
  EXPECT_THAT(steps_of("after_run"), ElementsAreArray(range(0, 20)));
}

// The observers of one isolation group share one worker, which takes the oldest queued step of
// its lanes next: their runner gets the steps in step order, whichever observer is slower (with a
// worker each, the faster one would run ahead while the slower one holds the runner).
TEST_F(ObserverJob, ObserversOfAnIsolationGroupShareAWorkerThatKeepsStepOrder) {
  const std::string shared_trace = (dir_ / "obs.txt").string();
  const ProcessResult r =
      run("isolation = process\nisolation_group = g\nmode = observe\nqueue = 8\nfetch = loss\n"
          "after_run_sleep_ms = 2",
          5, "",
          "\n[hook.obs2]\nplugin = scripted\nisolation = process\nisolation_group = g\n"
          "mode = observe\nqueue = 8\nfetch = weights\ntrace = " +
              shared_trace + "\n");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string text = trace();
  const std::regex line("(obs2?) after_run gs=(\\d+)");
  std::vector<std::string> order;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator();
       ++it)
    order.push_back((*it)[1].str() + "@" + (*it)[2].str());
  std::vector<std::string> expected;
  for (int step = 0; step < 20; ++step) {
    // Step 0's before_run runs on the training thread for each, in the configuration's order.
    expected.push_back("obs@" + std::to_string(step));
    expected.push_back("obs2@" + std::to_string(step));
  }
  EXPECT_THAT(order, ElementsAreArray(expected)) << text;
}

// hh.steps/1 skip_until from a sandboxed hook (forwarded to the host like any host function): its
// before_run and after_run are made only at the steps it asks for, on the step and behind it.
class SandboxedSkipUntil : public ObserverJob, public ::testing::WithParamInterface<const char*> {};

TEST_P(SandboxedSkipUntil, CallsTheHookOnlyAtTheStepsItAsksFor) {
  copy_plugin(fixture_plugin("frozen_v1_5_c"), plugins_);
  fs::create_directories(dir_ / "vocab");
  fs::create_directories(dir_ / "exports");
  write_file(dir_ / "vocab" / "words.txt", "the files its note says it reads\n");
  write_file(dir_ / "job.ini",
             "[run]\nrun_dir = run\n\n[workload]\nname = linreg\nepochs = 5\n\n"
             "[hook.every4]\nplugin = frozen_v1_5_c\nisolation = process\ngrant = declared\n"
             "mode = " +
                 std::string(GetParam()) +
                 "\nevery = 4\ntrace = " + (dir_ / "every4.txt").string() + "\n");
  const ProcessResult r = run_hookhost({"run", "--config", (dir_ / "job.ini").string(),
                                        "--plugin-dir", plugins_.string(), "--fresh"},
                                       dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string text = trace("every4.txt");
  const std::regex line("after_run gs=(\\d+)");
  std::vector<int> steps;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator();
       ++it)
    steps.push_back(std::stoi((*it)[1]));
  EXPECT_THAT(steps, ElementsAre(0, 4, 8, 12, 16)) << text;
  // On the step, one more before_run: the attempt at global step 20 that found the end of the
  // data (an observer is queued only the steps that ran).
  const std::regex before("before_run");
  EXPECT_EQ(
      std::distance(std::sregex_iterator(text.begin(), text.end(), before), std::sregex_iterator()),
      std::string(GetParam()) == "step" ? 6 : 5)
      << text;
}

INSTANTIATE_TEST_SUITE_P(StepAndObserve, SandboxedSkipUntil, ::testing::Values("step", "observe"));

class LostObserverRunner : public ObserverJob, public ::testing::WithParamInterface<const char*> {};

// The runner dies in before_run or in after_run of one message: the failure names that call and
// its step, and the restarted hook goes on to the last step.
TEST_P(LostObserverRunner, IsNamedWithTheCallItWasInAndItsStep) {
  const std::string callback = GetParam();
  const ProcessResult r =
      run("isolation = process\nmode = observe\nfetch = loss\nkill_in = " + callback +
          "\nkill_at_step = 6\nkill_by_context_step = true\nkill_marker = " +
          (dir_ / "killed").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ASSERT_TRUE(fs::exists(dir_ / "killed"));
  EXPECT_THAT(r.out, AllOf(HasSubstr("in " + callback + " at global step 6"),
                           HasSubstr("on_crash=restart: restarting it (1 of 3)")));
  EXPECT_THAT(r.out, Not(HasSubstr(std::string("in ") +
                                   (callback == "after_run" ? "before_run" : "after_run") +
                                   " at global step 6")));
  const std::vector<int> delivered = steps_of("after_run");
  ASSERT_FALSE(delivered.empty());
  EXPECT_EQ(delivered.back(), 19);
  // Every step reached it at most once, in order, and those before the loss all did.
  EXPECT_TRUE(std::is_sorted(delivered.begin(), delivered.end())) << trace();
  EXPECT_EQ(std::adjacent_find(delivered.begin(), delivered.end()), delivered.end()) << trace();
  ASSERT_GE(delivered.size(), 6u);
  EXPECT_THAT(std::vector<int>(delivered.begin(), delivered.begin() + 6),
              ElementsAreArray(range(0, 6)));
}

INSTANTIATE_TEST_SUITE_P(BeforeAndAfterRun, LostObserverRunner,
                         ::testing::Values("before_run", "after_run"));

TEST_F(ObserverJob, ObserversInAnIsolationGroupWithAnOrdinaryHookTakeTurnsInTheRunner) {
  const std::string others =
      "\n[hook.obs2]\nplugin = scripted\nisolation = process\nisolation_group = g\n"
      "mode = observe\nfetch = loss\ntrace = " +
      (dir_ / "obs2.txt").string() +
      "\n\n[hook.plain]\nplugin = scripted\nisolation = process\nisolation_group = g\n"
      "fetch = loss\ntrace = " +
      (dir_ / "plain.txt").string() + "\n";
  const ProcessResult r =
      run("isolation = process\nisolation_group = g\nmode = observe\nafter_run_sleep_ms = 1", 5, "",
          others);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(steps_of("after_run"), ElementsAreArray(range(0, 20)));
  EXPECT_THAT(steps_of("after_run", "obs2.txt", "obs2"), ElementsAreArray(range(0, 20)));
  EXPECT_THAT(steps_of("after_run", "plain.txt", "plain"), ElementsAreArray(range(0, 20)));
}

TEST_F(ObserverJob, ALostSandboxedObserverIsRestartedAtTheNextBoundary) {
  const ProcessResult r =
      run("isolation = process\nmode = observe\nkill_in = after_run\nkill_at_step = 6\n"
          "kill_by_context_step = true\nkill_marker = " +
          (dir_ / "killed").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(fs::exists(dir_ / "killed"));
  EXPECT_THAT(r.out, AllOf(HasSubstr("on_crash=restart: restarting it (1 of 3)"),
                           HasSubstr("restarted with its last saved state")));
  const std::vector<int> delivered = steps_of("after_run");
  ASSERT_FALSE(delivered.empty());
  EXPECT_EQ(delivered.back(), 19);  // it went on to the last step
  EXPECT_THAT(r.out, HasSubstr("job completed"));
}

TEST_F(ObserverJob, AStepFilterSelectsTheStepsQueuedToIt) {
  const ProcessResult r = run("mode = observe\nevery_n_steps = 3\nfetch = loss");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(steps_of("after_run"), ElementsAreArray({0, 3, 6, 9, 12, 15, 18}));
  EXPECT_THAT(steps_of("before_run"), ElementsAreArray({0, 3, 6, 9, 12, 15, 18}));
}

TEST_F(ObserverJob, ARecoveryWaitsForTheQueueBeforeTheNewSession) {
  // linreg fails recoverably at global step 6; the observer takes 40 ms a step, so 240 ms of
  // steps wait for it when the recovery (its backoff 100 ms) makes the new session.
  write_file(dir_ / "job.ini",
             "[run]\nrun_dir = run\n\n[workload]\nname = linreg\nepochs = 5\nfail_at_step = 6\n"
             "fail_kind = aborted\n\n[hook.obs]\nplugin = scripted\ntrace = " +
                 (dir_ / "obs.txt").string() +
                 "\nmode = observe\nfetch = loss\nafter_run_sleep_ms = 40\n");
  ProcessResult r = run_hookhost({"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir",
                                  plugins_.string(), "--fresh"},
                                 dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string text = trace();
  const size_t second_session = text.find("creation=2");
  ASSERT_NE(second_session, std::string::npos) << text;
  // Every step that ran before the failure reached the observer before the new session did.
  for (int step = 0; step < 6; ++step) {
    const size_t at = text.find("obs after_run gs=" + std::to_string(step) + " ");
    ASSERT_NE(at, std::string::npos) << step;
    EXPECT_LT(at, second_session) << step;
  }
}

TEST_F(ObserverJob, ASandboxedObserverFailingAtStepNIsNamedWithN) {
  const ProcessResult r =
      run("isolation = process\nmode = observe\nfetch = loss\nfail_in = after_run\n"
          "fail_at_iteration = 5\non_error = stop\nafter_run_sleep_ms = 1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, AllOf(HasSubstr("failed in after_run at global step 5"),
                           HasSubstr("on_error=stop"), HasSubstr("job stopped")));
  EXPECT_THAT(steps_of("after_run"), ElementsAreArray(range(0, 6)));
}

// A plugin may declare its hooks observers in its note (ABI 1.3, HH_PLUGIN_MODE): its instances
// then run behind the step unless their section says mode = step, or a policy that fails the job
// keeps them on it.
TEST_F(ObserverJob, APluginThatDeclaresItselfAnObserverRunsBehindTheStepUnlessItsSectionSaysNot) {
  copy_plugin(fixture_plugin("frozen_v1_3_c"), plugins_);
  const auto run_declared = [&](const std::string& keys, const std::string& run_keys = "") {
    write_file(dir_ / "job.ini", "[run]\nrun_dir = run\n" + run_keys +
                                     "\n[workload]\nname = linreg\nepochs = 1\n\n"
                                     "[hook.declared]\nplugin = frozen_v1_3_c\ntrace = " +
                                     (dir_ / "declared.txt").string() + "\n" + keys + "\n");
    ProcessResult r = run_hookhost({"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir",
                                    plugins_.string(), "--fresh"},
                                   dir_.path());
    r.out += r.err;
    return r;
  };
  ProcessResult r = run_declared("");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("mode = observe, queue = 8, policy = block"));
  r = run_declared("queue = 2\npolicy = skip");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("mode = observe, queue = 2, policy = skip"));
  for (const auto& [keys, run_keys] :
       {std::pair<std::string, std::string>{"mode = step", ""}, {"", "on_error = fail\n"}}) {
    SCOPED_TRACE(keys + run_keys);
    r = run_declared(keys, run_keys);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_THAT(r.out, Not(HasSubstr("mode = observe")));
    EXPECT_THAT(r.out, HasSubstr("hook 'declared': its plugin declares it an observer, but it "
                                 "runs on the step"));
  }
  // An observer's keys on a declared observer that fail = keeps on the step are refused.
  r = run_declared("queue = 2", "on_error = fail\n");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, AllOf(HasSubstr("job.ini:"), HasSubstr("'queue' applies to observers only")));
  // plugins describe says it.
  r = run_hookhost({"plugins", "describe", "frozen_v1_3_c", "--plugin-dir", plugins_.string()},
                   dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("mode: observe (declared by the plugin"));
  r = run_hookhost({"plugins", "describe", "scripted", "--plugin-dir", plugins_.string()},
                   dir_.path());
  EXPECT_THAT(r.out, HasSubstr("mode: step (its hooks run on the step"));
}

// Every built-in plugin but progress_bar and early_stopping, whose `mode` is a parameter of their
// own, accepts `mode = observe` (observers.md); those two refuse it naming the key.
TEST(ObserverBuiltins, EveryBuiltInButProgressBarAndEarlyStoppingAcceptsModeObserve) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> plugins = {
      {"checkpoint_saver", "save_steps = 10"},
      {"early_stopping", ""},
      {"global_step_waiter", "wait_until_step = 0"},
      {"history_saver", ""},
      {"lifecycle_trace", ""},
      {"logging_tensor", "tensors = loss\nevery_n_iter = 10"},
      {"loss_threshold", "threshold = 0.1"},
      {"nan_tensor", ""},
      {"progress_bar", ""},
      {"step_counter", ""},
      {"stop_at_step", "last_step = 10"},
      {"summary_saver", "save_steps = 10"},
      {"time_limit", "max_secs = 60"}};
  for (const auto& [plugin, keys] : plugins) {
    SCOPED_TRACE(plugin);
    write_file(dir / "job.ini",
               "[run]\nrun_dir = run\n[workload]\nname = linreg\n[hook.h]\nplugin = " + plugin +
                   "\nmode = observe\n" + keys + "\n");
    const ProcessResult r = run_hookhost({"run", "--check", "--config", "job.ini"}, dir.path());
    if (plugin == "progress_bar" || plugin == "early_stopping") {
      EXPECT_EQ(r.exit_code, 2) << r.err;
      EXPECT_THAT(r.err, AllOf(HasSubstr("job.ini:7: [hook.h] mode:"), HasSubstr(plugin)));
    } else {
      EXPECT_EQ(r.exit_code, 0) << r.err;
    }
  }
}

// The worker's pacing observers.md states: an idle worker looks every 20 µs to 1 ms and parks
// after 64 empty looks (so a queued step waits at most 1 ms for it), and a before_run is learnt on
// the training thread for at most its first 100 calls.
TEST(ObserverPacing, IsWhatObserversMdStates) {
  EXPECT_EQ(ObserverLane::kMinPollInterval, std::chrono::microseconds(20));
  EXPECT_EQ(ObserverLane::kPollInterval, std::chrono::milliseconds(1));
  EXPECT_EQ(ObserverLane::kIdlePollsBeforePark, 64u);
  EXPECT_EQ(ObserverLane::kLearningSteps, 100u);
}

// The same through the embedding API: HookSettings::observer on a Runtime of one's own.
class ObserverRuntime : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path plugins = dir_ / "plugins";
    fs::create_directories(plugins);
    copy_plugin(fixture_plugin("scripted"), plugins);
    DiscoveryResult found = discover_plugins({plugins});
    ASSERT_NE(found.find("scripted"), nullptr);
    scripted_ = load_plugin(*found.find("scripted"));
    workload_.script().end_of_data_step = 41;  // 40 steps
  }
  std::unique_ptr<Runtime> make_runtime() {
    RuntimeOptions options;
    options.run_dir = dir_.path();
    options.logger = std::make_shared<spdlog::logger>(
        "hookhost", std::make_shared<spdlog::sinks::ostream_sink_mt>(log_));
    return std::make_unique<Runtime>(workload_, options);
  }
  ResolvedParams params(std::multimap<std::string, std::string> raw) {
    raw.emplace("trace", (dir_ / "obs.txt").string());
    return resolve_params(scripted_->metadata(), "obs", raw);
  }
  // Another fixture plugin, copied into the plugin folder and loaded from there.
  std::shared_ptr<const LoadedPlugin> load_fixture(const std::string& id) {
    copy_plugin(fixture_plugin(id), dir_ / "plugins");
    DiscoveryResult found = discover_plugins({dir_ / "plugins"});
    if (!found.find(id)) throw std::runtime_error("plugin '" + id + "' was not discovered");
    return load_plugin(*found.find(id));
  }
  // `plugin`'s instance in process, or in a runner of its own as `isolation = process` makes it
  // (from the bytes verified when it was loaded).
  static void add(Runtime& rt, const std::shared_ptr<const LoadedPlugin>& plugin,
                  const HookSettings& settings, const ResolvedParams& resolved, bool sandboxed) {
    if (!sandboxed) {
      rt.add_hook(plugin, settings, resolved);
      return;
    }
    rt.add_hook(plugin->metadata().id, 1, settings, [&](const hh_host& host) {
      return make_process_dispatch(*plugin, settings.instance_name, resolved, host,
                                   SandboxOptions{});
    });
  }
  // The lines of the trace that start with `prefix`.
  std::vector<std::string> traced(const std::string& prefix, const std::string& file = "obs.txt") {
    return fs::exists(dir_ / file) ? starting_with(lines_of(dir_ / file), prefix)
                                   : std::vector<std::string>{};
  }

  TempDir dir_;
  std::shared_ptr<const LoadedPlugin> scripted_;
  ScriptedWorkload workload_{detail::Script{}};
  std::ostringstream log_;
};

TEST_F(ObserverRuntime, AddHookRefusesAnObserverThatWouldFailTheJob) {
  auto rt = make_runtime();
  HookSettings settings{"obs", 0, FailurePolicy::fail};
  settings.observer.enabled = true;
  EXPECT_THROW(
      {
        try {
          rt->add_hook(scripted_, settings, params({}));
        } catch (const ConfigError& e) {
          EXPECT_THAT(e.what(), HasSubstr("an observer cannot fail the job"));
          throw;
        }
      },
      ConfigError);
  settings.on_error = FailurePolicy::disable;
  settings.on_crash = CrashPolicy::fail;
  EXPECT_THROW(rt->add_hook(scripted_, settings, params({})), ConfigError);
}

TEST_F(ObserverRuntime, ReportsCountTheStepsASkippingObserverMissed) {
  auto rt = make_runtime();
  HookSettings settings{"obs", 0, FailurePolicy::disable};
  settings.observer = {true, 1, ObserverSettings::WhenFull::skip};
  rt->add_hook(scripted_, settings, params({{"fetch", "loss"}, {"after_run_sleep_ms", "20"}}));
  ASSERT_TRUE(rt->start());
  int steps = 0;
  while (!rt->should_stop() && rt->run().ran) ++steps;
  rt->close();
  ASSERT_EQ(steps, 40);
  const auto reports = rt->reports();
  ASSERT_EQ(reports.size(), 1u);
  const uint64_t delivered = reports[0].callbacks.at("after_run").calls;
  EXPECT_GT(reports[0].observer_skipped_steps, 0u);
  EXPECT_EQ(reports[0].observer_skipped_steps + delivered, 40u);
  EXPECT_EQ(reports[0].observer_unfetched_steps, 0u);
}

// How often `needle` occurs in `text`.
long count_of(const std::string& text, const std::string& needle) {
  long n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// A name an observer asks for late (here from its 11th before_run) was not fetched at the steps
// already queued when it asked: their after_run is not called, the first is logged once, and they
// are counted: at least the step whose before_run asked, at most queue + 2 (observers.md,
// limits.md: that step, the queue, and the step the training thread ran and waits to queue under
// policy = block), every other step delivered.
TEST_F(ObserverRuntime, ANameAskedLateMissesAtMostQueuePlusTwoStepsEachCounted) {
  workload_.script().values["late"] = [](int64_t step) { return Value(step); };
  auto rt = make_runtime();
  constexpr int kQueue = 4;
  HookSettings settings{"obs", 0, FailurePolicy::disable};
  settings.observer = {true, kQueue, ObserverSettings::WhenFull::block};
  // A slow worker, so that steps wait in the queue when the name is first asked.
  rt->add_hook(scripted_, settings,
               params({{"fetch", "loss"},
                       {"fetch_late", "late"},
                       {"fetch_late_from", "10"},
                       {"after_run_sleep_ms", "5"}}));
  ASSERT_TRUE(rt->start());
  int steps = 0;
  while (!rt->should_stop() && rt->run().ran) ++steps;
  rt->close();
  ASSERT_EQ(steps, 40);
  const auto reports = rt->reports();
  ASSERT_EQ(reports.size(), 1u);
  const uint64_t missed = reports[0].observer_unfetched_steps;
  EXPECT_GE(missed, 1u);
  EXPECT_LE(missed, static_cast<uint64_t>(kQueue + 2));
  EXPECT_EQ(reports[0].observer_skipped_steps, 0u);  // block: none dropped
  EXPECT_EQ(reports[0].callbacks.at("after_run").calls + missed, 40u);
  // The missed steps are the ones from the asking step on, and every later step got its value.
  const std::vector<std::string> after = traced("obs after_run");
  ASSERT_EQ(after.size(), 40u - missed);
  EXPECT_THAT(after.at(10), HasSubstr("gs=" + std::to_string(10 + missed) + " "));
  for (std::size_t i = 10; i < after.size(); ++i) EXPECT_THAT(after[i], HasSubstr("late:"));
  const std::string log = log_.str();
  EXPECT_EQ(count_of(log, "which it had not asked for before"), 1) << log;
  EXPECT_THAT(log, HasSubstr("asked for 'late' in its before_run of global step 10"));
}

// A name of `length` bytes that starts with `tag`.
std::string name_of_length(const std::string& tag, std::size_t length) {
  return tag + std::string(length - tag.size(), 'n');
}

// Whether the observer runs in a runner of its own (isolation = process).
class ObserverFetches : public ObserverRuntime, public ::testing::WithParamInterface<bool> {};

// Names of 16 bytes and more live outside std::string's small buffer: the views each after_run
// gets name the copies queued with its step, which must live until the call returns, whatever
// the training thread (two steps ahead at most) does meanwhile. ASan runs this too, where a name
// freed before the call is a use after free.
TEST_P(ObserverFetches, NamesPastTheSmallStringBufferUpToTheMaximumGetTheirOwnStepsValues) {
  const std::vector<std::string> names = {
      name_of_length("a", 15), name_of_length("b", 16),  name_of_length("c", 17),
      name_of_length("d", 64), name_of_length("e", 255), name_of_length("f", HH_MAX_NAME_LENGTH)};
  std::string fetch;
  for (std::size_t k = 0; k < names.size(); ++k) {
    // Each name's value tells its name and its step apart: 1000 * (k + 1) + step.
    workload_.script().values[names[k]] = [k](int64_t step) {
      return Value(static_cast<int64_t>(1000 * (k + 1)) + step);
    };
    fetch += (k ? "," : "") + names[k];
  }
  auto rt = make_runtime();
  HookSettings settings{"obs", 0, FailurePolicy::disable};
  settings.observer = {true, 2, ObserverSettings::WhenFull::block};
  add(*rt, scripted_, settings, params({{"fetch", fetch}, {"after_run_sleep_ms", "1"}}),
      GetParam());
  ASSERT_TRUE(rt->start());
  int steps = 0;
  while (!rt->should_stop() && rt->run().ran) ++steps;
  const JobResult result = rt->close();
  ASSERT_EQ(steps, 40);
  EXPECT_EQ(result.outcome, Outcome::completed) << result.reason;

  // after_run of global step g has the values of the step that took it to g + 1, in the order its
  // before_run asked for them, every step once and in order.
  std::vector<std::string> expected;
  for (int g = 0; g < 40; ++g) {
    std::string line = "obs after_run gs=" + std::to_string(g) + " live=" + std::to_string(g + 1) +
                       " it=" + std::to_string(g) + " stop=0 values=";
    for (std::size_t k = 0; k < names.size(); ++k)
      line += (k ? "," : "") + names[k] + ":" + std::to_string(1000 * (k + 1) + g + 1);
    expected.push_back(std::move(line));
  }
  const std::vector<std::string> after_runs = traced("obs after_run ");
  ASSERT_EQ(after_runs.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(after_runs[i], expected[i]) << "line " << i;  // one line at a time: they are long
  EXPECT_THAT(traced("obs end "), ElementsAre(HasSubstr("obs end outcome=completed")));
  const auto reports = rt->reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FALSE(reports[0].disabled) << reports[0].failure;
  EXPECT_EQ(reports[0].observer_unfetched_steps, 0u);
}

INSTANTIATE_TEST_SUITE_P(InProcessAndSandboxed, ObserverFetches, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "Sandboxed" : "InProcess");
                         });

// The runner of a sandboxed observer dies in after_run of global step 6, while the installed
// plugin file has been replaced by an impostor (the same id, version and parameters from other
// bytes, which tags its trace lines): the restart at the next boundary opens the bytes verified at
// the start, never the installed file, and the steps queued meanwhile go on to the new runner.
TEST_F(ObserverRuntime, ALostSandboxedObserverRestartsFromTheVerifiedBytesWhenItsFileWasSwapped) {
  const std::shared_ptr<const LoadedPlugin> faulty = load_fixture("faulty");
  auto rt = make_runtime();
  HookSettings settings{"obs", 0, FailurePolicy::disable};
  settings.on_crash = CrashPolicy::restart;
  settings.restart_backoff = std::chrono::milliseconds(1);
  settings.observer = {true, 4, ObserverSettings::WhenFull::block};
  add(*rt, faulty, settings,
      resolve_params(faulty->metadata(), "obs",
                     {{"behaviour", "segv"},
                      {"callback", "after_run"},
                      {"at_step", "6"},
                      {"trace", (dir_ / "obs.txt").string()}}),
      true);
  // The runner is up with its private copy; now the installed file changes.
  fs::copy_file(fs::path(HOOKHOST_FIXTURE_DIR) / "impostor" / "faulty_impostor.so",
                dir_ / "plugins" / "faulty.so", fs::copy_options::overwrite_existing);
  ASSERT_NE(read_file(dir_ / "plugins" / "faulty.so"), read_file(fixture_plugin("faulty")));
  ASSERT_TRUE(rt->start());
  int steps = 0;
  while (!rt->should_stop() && rt->run().ran) ++steps;
  const JobResult result = rt->close();
  rt.reset();  // destroy delivered, runners gone: the trace is complete
  ASSERT_EQ(steps, 40);
  EXPECT_EQ(result.outcome, Outcome::completed) << result.reason;

  const std::string log = log_.str();
  EXPECT_THAT(log, AllOf(HasSubstr("failed in after_run at global step 6"),
                         HasSubstr("was killed by signal 11"),
                         HasSubstr("on_crash=restart: restarting it (1 of 3)"),
                         HasSubstr("hook 'obs' restarted with its last saved state")));
  EXPECT_THAT(log, Not(HasSubstr("could not be restarted")));
  // Nothing ran from the impostor's bytes.
  for (const std::string& line : traced("")) EXPECT_THAT(line, Not(HasSubstr("impostor"))) << line;
  // Created twice: at the start, and at the restart with what it had saved by the fatal call
  // (after_run of global steps 0 to 6).
  EXPECT_THAT(
      traced("obs create "),
      ElementsAreArray({"obs create behaviour=segv callback=after_run state=(none)",
                        "obs create behaviour=segv callback=after_run state=after_runs=7"}));
  // Every step reached it once, in order: the one it died in included (it traced it first), and
  // none twice across the restart.
  std::vector<int> after_runs;
  const std::regex after_run("^obs after_run gs=(\\d+) ");
  for (const std::string& line : traced("obs after_run ")) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(line, m, after_run)) << line;
    after_runs.push_back(std::stoi(m[1]));
  }
  std::vector<int> all(40);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_THAT(after_runs, ElementsAreArray(all));
  EXPECT_THAT(traced("obs end "), ElementsAre(HasSubstr("obs end outcome=completed")));
  EXPECT_THAT(traced(""), ::testing::Contains("obs destroy"));
}

// An observer's calls carry the time their step ran (the run context's wall_time_ns, ABI 1.4), and
// so do the summaries it writes through the host: each event's wall_time is the one its after_run
// saw, whenever the worker got to it. On the step the field is 0 and the record is stamped now.
TEST_F(ObserverJob, AnObserversCallsAndSummariesCarryTheTimeTheirStepRan) {
  for (const std::string keys :
       {"mode = observe", "mode = observe\nisolation = process", "mode = step"}) {
    fs::remove(dir_ / "obs.txt");
    fs::remove_all(dir_ / "run");
    const ProcessResult r = run(keys + "\nsummary_wall_time = true\nafter_run_sleep_ms = 1");
    ASSERT_EQ(r.exit_code, 0) << keys << "\n" << r.out;
    const std::string text = trace();
    const std::regex line("obs after_run gs=(\\d+) .* wall=(\\d+)");
    std::map<int64_t, int64_t> walls;  // by global step
    for (auto it = std::sregex_iterator(text.begin(), text.end(), line);
         it != std::sregex_iterator(); ++it)
      walls[std::stoll((*it)[1])] = std::stoll((*it)[2]);
    ASSERT_EQ(walls.size(), 20u) << keys;
    std::map<int64_t, double> recorded;  // the events' wall times, by step
    // A confined hook's run folder is its own, inside the job's.
    const fs::path folder =
        fs::exists(dir_ / "run" / "hooks" / "obs") ? dir_ / "run" / "hooks" / "obs" : dir_ / "run";
    for (const Event& event : events_in(folder))
      for (const auto& [tag, value] : event.scalars)
        if (tag == "scripted") recorded[event.step] = event.wall_time;
    ASSERT_EQ(recorded.size(), 20u) << keys;
    const bool behind = keys.find("observe") != std::string::npos;
    int64_t previous = 0;
    for (const auto& [step, wall] : walls) {
      if (!behind) {
        EXPECT_EQ(wall, 0) << step;
        EXPECT_GT(recorded.at(step), 1.5e9) << step;  // stamped now, by the host's clock
        continue;
      }
      EXPECT_GE(wall, previous) << keys << ", step " << step;  // steps run in order
      previous = wall;
      // A double holds seconds since 1970 to about a quarter of a microsecond.
      EXPECT_NEAR(recorded.at(step), static_cast<double>(wall) * 1e-9, 1e-6)
          << keys << ", step " << step;
    }
  }
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
