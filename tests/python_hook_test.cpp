// The python_hook bridge plugin driven through the real runtime with <hookhost/testing.hpp>: each
// test writes a small Python hook into a temporary folder and runs the built python_hook.so on it.
// Some run the hookhost program itself: config-relative paths, a kill -9 and resume, the example.
// Not under AddressSanitizer: the plugin is not built there (CPython's allocations make
// LeakSanitizer report the interpreter), so these tests skip themselves.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <hookhost/testing.hpp>
#include <regex>
#include <string>
#include <vector>

#include "plugin_harness.hpp"
#include "process.hpp"
#include "storage/checkpoint.hpp"
#include "support/sanitizer.hpp"
#include "test_support.hpp"

namespace {
namespace HOOKHOST_TEST_FILE {

namespace fs = std::filesystem;
using hookhost::Callback;
using hookhost::Outcome;
using hookhost::testing::HookTest;
using hookhost::testing::ProcessResult;
using hookhost::testing::run_hookhost;
using hookhost::testing::RunResult;
using hookhost::testing::write_file;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using Names = std::vector<std::string>;

const fs::path kPlugin = fs::path(HOOKHOST_BUILTIN_DIR) / "python_hook.so";

class PythonHook : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(HOOKHOST_ASAN)
    GTEST_SKIP() << "python_hook is not built with HOOKHOST_SANITIZE (CPython is leak-noisy)";
#endif
  }

  // Writes `source` as NAME.py and returns a harness for class `class_name` in it.
  HookTest hook(const std::string& name, const std::string& source,
                const std::string& class_name = "Hook", const std::string& instance = "py",
                const fs::path& plugin = kPlugin) {
    const fs::path file = dir_ / (name + ".py");
    std::ofstream(file) << source;
    HookTest t(plugin, instance);
    t.set("script", file.string()).set("class", class_name);
    return t;
  }

  hookhost::testing::TempDir dir_;
};

TEST_F(PythonHook, CallsEveryMethodInTensorFlowsOrder) {
  HookTest t = hook("order", R"(
import hookhost
class Hook(hookhost.SessionRunHook):
    def begin(self): print("begin")
    def after_create_session(self, session, coord): print("created", session.creation)
    def before_run(self, run_context): print("before", hookhost.global_step())
    def after_run(self, run_context, run_values): print("after", hookhost.global_step())
    def end(self, session): print("end")
)");
  t.steps(2);
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::completed) << run.log_text();
  // before_run@3 is the attempt that meets the end of the data: no after_run follows it.
  EXPECT_THAT(run.trace(),
              ElementsAre("begin", "after_create_session", "before_run@1", "after_run@1",
                          "before_run@2", "after_run@2", "before_run@3", "end"));
  EXPECT_THAT(run.log_lines("info"), ElementsAre("begin", "created 1", "before 0", "after 1",
                                                 "before 1", "after 2", "before 2", "end"));
}

TEST_F(PythonHook, ResultsHaveTheStructureOfTheFetches) {
  HookTest t = hook("fetches", R"(
import hookhost
class Hook:  # duck typing: no base class, only the methods it needs
    def before_run(self, run_context):
        return hookhost.SessionRunArgs({"a": ["loss", "global_step"], "w": ("weights",)})
    def after_run(self, run_context, run_values):
        r = run_values.results
        print(type(r).__name__, type(r["a"]).__name__, type(r["w"]).__name__,
              "%.3f" % r["a"][0], int(r["a"][1]), r["a"][1].shape, r["w"][0].tolist(),
              r["w"][0].dtype, r["w"][0].flags.writeable)
)");
  t.steps(2);
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::completed) << run.log_text();
  EXPECT_EQ(run.fetched(2), (Names{"loss", "global_step", "weights"}));
  EXPECT_THAT(run.log_lines("info"),
              Contains("dict list tuple 0.500 2 () [1.0, 2.0, 3.0] float32 False"));
}

TEST_F(PythonHook, FeedDictReachesTheWorkload) {
  HookTest t = hook("feeds", R"(
import hookhost, numpy as np
class Hook(hookhost.SessionRunHook):
    def before_run(self, run_context):
        return hookhost.SessionRunArgs("learning_rate",
                                       feed_dict={"learning_rate": np.float32(0.25)})
    def after_run(self, run_context, run_values):
        print("lr", float(run_values.results))
)");
  t.steps(1);
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::completed) << run.log_text();
  EXPECT_EQ(run.fed(1).count("learning_rate"), 1u);
  EXPECT_THAT(run.log_lines("info"), ElementsAre("lr 0.25"));
}

TEST_F(PythonHook, RequestStopInAfterRunStopsTheJob) {
  HookTest t = hook("stop_after", R"(
import hookhost
class Hook(hookhost.SessionRunHook):
    def before_run(self, run_context): return hookhost.SessionRunArgs("loss")
    def after_run(self, run_context, run_values):
        if run_values.results < 0.3: run_context.request_stop()
)");
  t.steps(10);
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::stopped) << run.log_text();
  EXPECT_TRUE(run.stopped_by_hook);
  EXPECT_EQ(run.global_step, 4);  // 1/4 is the first loss below 0.3
  EXPECT_THAT(run.hook_stop_reason, HasSubstr("Hook.after_run called request_stop()"));
}

TEST_F(PythonHook, RequestStopInBeforeRunEndsTheJobAfterThatStep) {
  HookTest t = hook("stop_before", R"(
import hookhost
class Hook(hookhost.SessionRunHook):
    def before_run(self, run_context):
        if hookhost.global_step() == 2: run_context.request_stop()
    def after_run(self, run_context, run_values):
        print("after", hookhost.global_step(), run_context.stop_requested)
)");
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::stopped) << run.log_text();
  EXPECT_TRUE(run.stopped_by_hook);
  EXPECT_EQ(run.global_step, 3);
  EXPECT_THAT(run.hook_stop_reason, HasSubstr("Hook.before_run called request_stop()"));
  EXPECT_THAT(run.log_lines("info"), Contains("after 3 True"));
}

TEST_F(PythonHook, RecoveryCallsAfterCreateSessionAgain) {
  HookTest t = hook("recovery", R"(
class Hook:
    def after_create_session(self, session, coord):
        print("created", session.creation, "at", session.global_step)
)");
  t.steps(5).recoverable_error_at(3);
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::completed) << run.log_text();
  EXPECT_THAT(run.log_lines("info"), ElementsAre("created 1 at 0", "created 2 at 2"));
}

TEST_F(PythonHook, EndReadsTheOutcome) {
  HookTest t = hook("end", R"(
class Hook:
    def end(self, session): print("end", session.outcome, session.reason, session.global_step)
)");
  t.steps(3).stop_requested_at(2, "enough");
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::stopped) << run.log_text();
  ASSERT_EQ(run.log_lines("info").size(), 1u) << run.log_text();
  EXPECT_THAT(run.log_lines("info")[0], AllOf(HasSubstr("end stopped"), HasSubstr("enough")));
}

TEST_F(PythonHook, AnExceptionFailsTheCallWithItsTraceback) {
  HookTest t = hook("raises", R"(
def check(value):
    raise ValueError("bad value %d" % value)
class Hook:
    def after_run(self, run_context, run_values):
        check(7)
)");
  const RunResult run = t.run();
  ASSERT_TRUE(run.failure) << run.log_text();
  EXPECT_EQ(run.failure->callback, Callback::after_run);
  // One line for the host's error line and the summary; the traceback is in the log above it.
  EXPECT_EQ(run.failure->message, "ValueError: bad value 7 (traceback above)");
  const std::vector<std::string> errors = run.log_lines("error");
  ASSERT_GE(errors.size(), 5u) << run.log_text();
  EXPECT_THAT(errors, Contains(StartsWith("Traceback (most recent call last")));
  EXPECT_THAT(errors, Contains(AllOf(StartsWith("  File \""),
                                     HasSubstr("raises.py\", line 6, in after_run"))));
  EXPECT_THAT(errors,
              Contains(AllOf(StartsWith("  File \""), HasSubstr("raises.py\", line 3, in check"))));
  EXPECT_THAT(errors, Contains("    raise ValueError(\"bad value %d\" % value)"));
  for (const std::string& line : errors) EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_TRUE(run.disabled);  // on_error = disable, as for a native hook
}

// The caret line under the failing expression keeps its column: it is a log line of its own.
TEST_F(PythonHook, ATracebacksCaretLineStaysUnderItsExpression) {
  HookTest t = hook("caret", R"(
class Hook:
    def after_run(self, run_context, run_values):
        results = {}
        w = results["weights"]
)");
  const RunResult run = t.run();
  ASSERT_TRUE(run.failure) << run.log_text();
  EXPECT_EQ(run.failure->message, "KeyError: 'weights' (traceback above)");
  const std::vector<std::string> errors = run.log_lines("error");
  const auto source = std::find(errors.begin(), errors.end(), "    w = results[\"weights\"]");
  ASSERT_NE(source, errors.end()) << run.log_text();
  // Python 3.11+ prints a caret line; older ones do not.
  if (source + 1 != errors.end() && (source + 1)->find('^') != std::string::npos) {
    EXPECT_EQ((source + 1)->find_first_not_of(' '), source->find('r'));
  }
}

TEST_F(PythonHook, TensorFlowsGetGlobalStepSaysWhatToUseInstead) {
  HookTest t = hook("tf_step", R"(
import hookhost as tf
class Hook(tf.train.SessionRunHook):
    def begin(self):
        self._global_step_tensor = tf.train.get_global_step()
)");
  const RunResult run = t.run();
  ASSERT_TRUE(run.failure) << run.log_text();
  EXPECT_EQ(run.failure->callback, Callback::begin);
  EXPECT_THAT(run.failure->message,
              AllOf(StartsWith("NotAvailableInHookhost: tf.train.get_global_step is not available "
                               "in hookhost: use hookhost.global_step()"),
                    Not(HasSubstr("SimpleNamespace"))));
}

TEST_F(PythonHook, ASessionsGraphSaysWhatToUseInsteadAndIsAnAttributeError) {
  HookTest t = hook("tf_graph", R"(
import hookhost
class Hook(hookhost.SessionRunHook):
    def before_run(self, run_context):
        assert not hasattr(run_context.session, "graph")
        try:
            run_context.session.graph
        except AttributeError as e:
            assert isinstance(e, hookhost.NotAvailableInHookhost)
        return hookhost.SessionRunArgs("loss")
    def after_run(self, run_context, run_values):
        print(run_context.session.graph.get_tensor_by_name("loss:0"))
)");
  const RunResult run = t.run();
  ASSERT_TRUE(run.failure) << run.log_text();
  EXPECT_EQ(run.failure->callback, Callback::after_run);  // before_run's checks held
  EXPECT_THAT(run.failure->message,
              StartsWith("NotAvailableInHookhost: session.graph is not available in hookhost: "
                         "use hookhost.global_step()"));
}

TEST_F(PythonHook, AHookWithoutBeforeRunGetsNoBeforeRunCalls) {
  HookTest t = hook("no_before", R"(
class Hook:
    def after_run(self, run_context, run_values): pass
)");
  t.steps(2);
  const RunResult run = t.run();
  EXPECT_EQ(run.trace(),
            (Names{"begin", "after_create_session", "after_run@1", "after_run@2", "end"}))
      << run.log_text();
}

TEST_F(PythonHook, SysExitAndKeyboardInterruptAreTheCallsErrors) {
  HookTest t = hook("exits", R"(
import sys
class Hook:
    def before_run(self, run_context): raise KeyboardInterrupt()
    def after_run(self, run_context, run_values): sys.exit(3)
)");
  t.on_error(hookhost::FailurePolicy::keep_going);
  t.steps(2);
  const RunResult run = t.run();
  // The process is still here, and the job ran to its end.
  EXPECT_EQ(run.outcome, Outcome::completed) << run.log_text();
  ASSERT_TRUE(run.failure);
  EXPECT_THAT(run.failure->message, HasSubstr("KeyboardInterrupt"));
  std::vector<std::string> messages;
  for (const auto& call : run.calls)
    if (call.status != HH_OK) messages.push_back(call.name() + " " + call.message.substr(0, 13));
  EXPECT_THAT(messages, Contains("after_run@1 SystemExit: 3"));
}

TEST_F(PythonHook, ASyntaxErrorIsAConfigurationErrorWithFileAndLine) {
  HookTest t = hook("broken", "class Hook:\n    def begin(self):\n        x = = 1\n");
  const std::string error = t.configuration_error();
  EXPECT_THAT(error, AllOf(HasSubstr("script: syntax error in"), HasSubstr("broken.py, line 3")));
}

TEST_F(PythonHook, AWrongPathAMissingClassAndWrongArgsAreConfigurationErrors) {
  HookTest missing(kPlugin);
  missing.set("script", (dir_ / "nowhere.py").string()).set("class", "Hook");
  EXPECT_THAT(missing.configuration_error(),
              AllOf(HasSubstr("script: no such file"), HasSubstr("nowhere.py")));

  HookTest no_class = hook("no_class", "class Other: pass\n");
  EXPECT_THAT(no_class.configuration_error(), HasSubstr("class: "));
  EXPECT_THAT(no_class.configuration_error(), HasSubstr("defines no 'Hook'"));

  HookTest bad_args = hook("bad_args", "class Hook:\n    def __init__(self, threshold): pass\n");
  bad_args.set("args", R"({"treshold": 1})");
  EXPECT_THAT(bad_args.configuration_error(),
              AllOf(HasSubstr("args: Hook(**"), HasSubstr("unexpected keyword argument")));

  HookTest both = hook("both", "class Hook: pass\n");
  both.set("module", "json");
  EXPECT_THAT(both.configuration_error(),
              HasSubstr("give only one of 'script', 'module' and 'object'"));

  HookTest none(kPlugin);
  none.set("class", "Hook");
  EXPECT_THAT(none.configuration_error(), HasSubstr("give one of 'script', 'module' or 'object'"));
  HookTest no_class_given(kPlugin);
  no_class_given.set("module", "json");
  EXPECT_THAT(no_class_given.configuration_error(), HasSubstr("give 'class' with"));
  // `object` names a hook a MonitoredSession registered in its own process; there is none here.
  HookTest unknown_object(kPlugin);
  unknown_object.set("object", "7f00:missing");
  EXPECT_THAT(unknown_object.configuration_error(),
              AllOf(HasSubstr("object: no hook object '7f00:missing'"),
                    HasSubstr("hookhost.MonitoredSession")));
  HookTest object_and_class(kPlugin);
  object_and_class.set("object", "7f00:x").set("class", "Hook");
  EXPECT_THAT(object_and_class.configuration_error(),
              HasSubstr("'class' is not used with 'object'"));
}

TEST_F(PythonHook, StateDictIsSavedAsJsonAndRestoredOnResume) {
  const std::string source = R"(
class Hook:
    def __init__(self): self.count = 0
    def after_run(self, run_context, run_values): self.count += 1
    def end(self, session): print("count", self.count)
    def state_dict(self): return {"count": self.count}
    def load_state_dict(self, state): self.count = state["count"]
)";
  HookTest first = hook("stateful", source);
  first.steps(4);
  const RunResult run1 = first.run();
  EXPECT_EQ(run1.state_bytes(), R"({"count": 4})") << run1.log_text();

  HookTest second = hook("stateful", source);
  second.steps(6).resume_from(run1);
  const RunResult run2 = second.run();
  EXPECT_EQ(run2.global_step, 6) << run2.log_text();
  EXPECT_THAT(run2.log_lines("info"), ElementsAre("count 6"));
}

TEST_F(PythonHook, TwoInstancesOfOneClassKeepTheirOwnArguments) {
  const std::string source = R"(
import logging
class Hook:
    def __init__(self, tag, scale=1):
        self.tag, self.scale = tag, scale
    def begin(self):
        logging.getLogger("tagged").warning("%s %d", self.tag, self.scale * 2)
)";
  HookTest a = hook("tagged", source, "Hook", "first");
  a.set("args", R"({"tag": "a"})").steps(1);
  HookTest b = hook("tagged", source, "Hook", "second");
  b.set("args", R"({"tag": "b", "scale": 21})").steps(1);
  const RunResult run_a = a.run();
  const RunResult run_b = b.run();
  EXPECT_THAT(run_a.log_lines("warn"), ElementsAre("tagged: a 2")) << run_a.log_text();
  EXPECT_THAT(run_b.log_lines("warn"), ElementsAre("tagged: b 42")) << run_b.log_text();
}

TEST_F(PythonHook, ValuesKeptAcrossStepsStayValidAndReadOnly) {
  HookTest t = hook("keeps", R"(
import hookhost
class Hook(hookhost.SessionRunHook):
    def __init__(self): self.kept = []
    def before_run(self, run_context): return hookhost.SessionRunArgs(["loss", "weights"])
    def after_run(self, run_context, run_values):
        self.kept.append(run_values.results)
        try:
            run_values.results[1][0] = 5
            print("writable")
        except ValueError:
            pass
    def end(self, session):
        print(["%.3f" % l for l, w in self.kept], [w.tolist() for l, w in self.kept][-1])
)");
  t.steps(4).value("weights", [](int64_t step) {
    return hookhost::testing::Value(std::vector<float>(3, static_cast<float>(step)));
  });
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::completed) << run.log_text();
  EXPECT_THAT(run.log_lines("info"),
              ElementsAre("['1.000', '0.500', '0.333', '0.250'] [4.0, 4.0, 4.0]"));
}

TEST_F(PythonHook, AFunctionBasedHookFromAModule) {
  std::ofstream(dir_ / "fn_hooks.py") << R"(
import hookhost
def make(every):
    def after_run(run_context, run_values):
        if hookhost.global_step() % every == 0: print("step", hookhost.global_step())
    return hookhost.session_run_hook(after_run=after_run)
)";
  HookTest t(kPlugin);
  t.set("module", "fn_hooks").set("python_path", dir_.path().string()).set("class", "make");
  t.set("args", R"({"every": 2})").steps(4);
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::completed) << run.log_text();
  EXPECT_THAT(run.log_lines("info"), ElementsAre("step 2", "step 4"));
}

// ---- what TensorFlow gives a hook, kept exactly while the bridge reuses its objects ------------

TEST_F(PythonHook, AHookWithoutBeforeRunOrAfterRunIsNeverCalledForThem) {
  HookTest only_end = hook("only_end", R"(
import hookhost
class Hook(hookhost.SessionRunHook):  # SessionRunHook's own before_run and after_run do nothing
    def end(self, session): print("end at", session.global_step)
)");
  only_end.steps(2);
  const RunResult run = only_end.run();
  EXPECT_THAT(run.trace(), ElementsAre("begin", "after_create_session", "end")) << run.log_text();
  EXPECT_THAT(run.log_lines("info"), ElementsAre("end at 2"));

  // state_dict() is saved after every after_run, so a stateful hook keeps its after_run.
  HookTest stateful = hook("stateful_only", R"(
class Hook:
    def __init__(self): self.n = 0
    def before_run(self, run_context): self.n += 1
    def state_dict(self): return {"n": self.n}
)");
  stateful.steps(2);
  const RunResult run2 = stateful.run();
  EXPECT_THAT(run2.trace(), Contains("after_run@2")) << run2.log_text();
  EXPECT_EQ(run2.state_bytes(), R"({"n": 3})");
}

TEST_F(PythonHook, OneContextPerStepSharedByBeforeRunAndAfterRunAndNeverSeenAgain) {
  HookTest t = hook("contexts", R"(
import hookhost
class Hook(hookhost.SessionRunHook):
    def __init__(self): self.kept, self.before = [], None
    def before_run(self, run_context):
        print("fresh", not hasattr(run_context, "mark"), run_context.original_args.fetches)
        run_context.mark = True
        self.before = run_context
        if hookhost.global_step() % 2 == 0: self.kept.append(run_context)
        return hookhost.SessionRunArgs("loss")
    def after_run(self, run_context, run_values):
        print("same", run_context is self.before, run_context.original_args.fetches)
        self.before = None
    def end(self, session):
        print("kept", len(self.kept), len(set(map(id, self.kept))),
              all(c.session is session for c in self.kept))
)");
  t.steps(4);
  const RunResult run = t.run();
  EXPECT_THAT(run.log_lines("info"),
              ElementsAre("fresh True None", "same True loss", "fresh True None", "same True loss",
                          "fresh True None", "same True loss", "fresh True None", "same True loss",
                          "fresh True None", "kept 3 3 True"))
      << run.log_text();
}

TEST_F(PythonHook, KeptValuesViewsAndRunValuesStayRightWhileTheOthersAreRefilled) {
  // weights is [step, step, step] and loss 1/step: every step's values differ.
  HookTest t = hook("keeps_some", R"(
import weakref, hookhost
class Hook(hookhost.SessionRunHook):
    def __init__(self):
        self.kept, self.views, self.refs, self.whole, self.seen = [], [], [], None, []
    def before_run(self, run_context):
        return hookhost.SessionRunArgs({"w": "weights", "l": ["loss"]})
    def after_run(self, run_context, run_values):
        step = hookhost.global_step()
        w = run_values.results["w"]
        loss = run_values.results["l"][0]
        self.seen.append(w.tolist() == [step] * 3 and abs(loss - 1 / step) < 1e-6)
        if step % 4 == 0: self.kept.append((step, w))
        if step % 4 == 1: self.views.append((step, w[1:]))
        if step % 4 == 2: self.refs.append((step, weakref.ref(w)))
        if step == 3: self.whole = run_values
    def end(self, session):
        print("every step right", all(self.seen), len(self.seen))
        print("kept", all(w.tolist() == [s] * 3 for s, w in self.kept), len(self.kept))
        print("views", all(v.tolist() == [s] * 2 for s, v in self.views), len(self.views))
        print("weak", all(r() is None or r().tolist() == [s] * 3 for s, r in self.refs))
        print("whole", self.whole.results["w"].tolist(), "%.4f" % self.whole.results["l"][0])
)");
  t.steps(12).value("weights", [](int64_t step) {
    return hookhost::testing::Value(std::vector<float>(3, static_cast<float>(step)));
  });
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::completed) << run.log_text();
  EXPECT_THAT(run.log_lines("info"),
              ElementsAre("every step right True 12", "kept True 3", "views True 3", "weak True",
                          "whole [3.0, 3.0, 3.0] 0.3333"));
}

TEST_F(PythonHook, NamedTuplesAndOtherStructuresStillGetTheirOwnTypesBack) {
  HookTest t = hook("structures", R"(
import collections, hookhost
Pair = collections.namedtuple("Pair", "loss weights")
class Hook(hookhost.SessionRunHook):
    def __init__(self): self.args = hookhost.SessionRunArgs(Pair("loss", "weights"))
    def before_run(self, run_context): return self.args
    def after_run(self, run_context, run_values):
        r = run_values.results
        print(type(r).__name__, "%.2f" % r.loss, r.weights.tolist())
)");
  t.steps(1);
  const RunResult run = t.run();
  EXPECT_THAT(run.log_lines("info"), ElementsAre("Pair 1.00 [1.0, 2.0, 3.0]")) << run.log_text();
}

TEST_F(PythonHook, TwoInstancesOfOneClassInOneJobKeepTheirOwnArguments) {
  const fs::path script = dir_ / "tagged.py";
  std::ofstream(script) << R"(
import hookhost
class Hook(hookhost.SessionRunHook):
    made = 0
    def __init__(self, tag, scale=1):
        Hook.made += 1
        self.tag, self.scale, self.losses = tag, scale, 0
    def before_run(self, run_context): return hookhost.SessionRunArgs("loss")
    def after_run(self, run_context, run_values): self.losses += 1
    def end(self, session):
        print(self.tag, self.scale * 2, "losses", self.losses, "made", Hook.made)
)";
  hookhost::testing::PluginHarness h({"python_hook"});
  h.add("first", "python_hook",
        {{"script", script.string()}, {"class", "Hook"}, {"args", R"({"tag": "a"})"}});
  h.add("second", "python_hook",
        {{"script", script.string()}, {"class", "Hook"}, {"args", R"({"tag": "b", "scale": 21})"}});
  EXPECT_EQ(h.run().outcome, Outcome::completed) << h.log();
  using hookhost::testing::info_lines;
  EXPECT_THAT(info_lines(h.log(), "first"), ElementsAre("a 2 losses 10 made 2")) << h.log();
  EXPECT_THAT(info_lines(h.log(), "second"), ElementsAre("b 42 losses 10 made 2"));
}

// ---- isolation = process --------------------------------------------------------------------

TEST_F(PythonHook, SandboxedTheWholeLifecycleRunsInARunnerProcess) {
  HookTest t = hook("sandboxed", R"(
import os, hookhost
class Hook(hookhost.SessionRunHook):
    def __init__(self, host_pid): self.host_pid = host_pid
    def begin(self): print("in another process", os.getpid() != self.host_pid)
    def before_run(self, run_context):
        return hookhost.SessionRunArgs(["loss", "weights"], feed_dict={"learning_rate": 0.5})
    def after_run(self, run_context, run_values):
        loss, weights = run_values.results
        print("step", hookhost.global_step(), "%.3f" % loss, weights.tolist())
    def end(self, session): print("end", session.outcome)
)");
  t.set("args", "{\"host_pid\": " + std::to_string(::getpid()) + "}");
  t.isolation(hookhost::Isolation::process).steps(2);
  const RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::completed) << run.log_text();
  EXPECT_THAT(run.trace(),
              ElementsAre("begin", "after_create_session", "before_run@1", "after_run@1",
                          "before_run@2", "after_run@2", "before_run@3", "end"));
  EXPECT_EQ(run.fed(1).count("learning_rate"), 1u);
  EXPECT_THAT(run.log_lines("info"),
              ElementsAre("in another process True", "step 1 1.000 [1.0, 2.0, 3.0]",
                          "step 2 0.500 [1.0, 2.0, 3.0]", "end completed"));
}

TEST_F(PythonHook, SandboxedAnOsExitIsContainedAndOnCrashDecides) {
  const std::string source = R"(
import os, hookhost
class Hook(hookhost.SessionRunHook):
    def after_run(self, run_context, run_values):
        print("after", hookhost.global_step())
        if hookhost.global_step() == 2: os._exit(3)
)";
  {
    SCOPED_TRACE("on_crash = disable");
    HookTest t = hook("exits", source);
    t.isolation(hookhost::Isolation::process).set("on_crash", "disable").steps(4);
    const RunResult run = t.run();
    EXPECT_EQ(run.outcome, Outcome::completed) << run.log_text();
    EXPECT_EQ(run.global_step, 4);  // the job went on without the hook
    ASSERT_TRUE(run.failure) << run.log_text();
    EXPECT_THAT(run.failure->message, HasSubstr("exited with status 3"));
    EXPECT_TRUE(run.disabled);
    // The line printed in the call that never returned went with the runner.
    EXPECT_THAT(run.log_lines("info"), ElementsAre("after 1"));
  }
  {
    SCOPED_TRACE("on_crash = restart, the plugin file swapped before the crash");
    // The hook replaces its own plugin file with another plugin's before it dies: the restarted
    // runner must run the bytes verified when the job started, not what the file has become.
    const fs::path plugin = dir_ / "python_hook.so";
    const fs::path other = fs::path(HOOKHOST_BUILTIN_DIR) / "nan_tensor.so";
    fs::copy_file(kPlugin, plugin);
    const std::string swapping = R"(
import os, shutil, hookhost
class Hook(hookhost.SessionRunHook):
    def __init__(self, plugin, other): self.plugin, self.other = plugin, other
    def after_run(self, run_context, run_values):
        print("after", hookhost.global_step())
        if hookhost.global_step() == 2:
            shutil.copyfile(self.other, self.plugin + ".new")
            os.replace(self.plugin + ".new", self.plugin)
            os._exit(3)
)";
    HookTest t = hook("exits_restart", swapping, "Hook", "py", plugin);
    t.set("args", R"({"plugin": ")" + plugin.string() + R"(", "other": ")" + other.string() + "\"}")
        .isolation(hookhost::Isolation::process)
        .set("on_crash", "restart")
        .steps(4);
    const RunResult run = t.run();
    EXPECT_EQ(run.outcome, Outcome::completed) << run.log_text();
    EXPECT_EQ(run.global_step, 4);
    EXPECT_THAT(run.log_lines("info"), ElementsAre("after 1", "after 3", "after 4"));
    EXPECT_FALSE(run.disabled) << run.log_text();
    // The swap did happen: the file is the other plugin now.
    EXPECT_EQ(hookhost::testing::read_file(plugin), hookhost::testing::read_file(other));
  }
  {
    SCOPED_TRACE("on_crash = stop");
    HookTest t = hook("exits_stop", source);
    t.isolation(hookhost::Isolation::process).set("on_crash", "stop").steps(4);
    const RunResult run = t.run();
    EXPECT_EQ(run.outcome, Outcome::stopped) << run.log_text();
    EXPECT_EQ(run.global_step, 2);
  }
}

// ---- the hookhost program -------------------------------------------------------------------

class PythonHookProgram : public PythonHook {
 protected:
  void SetUp() override {
    PythonHook::SetUp();
    if (IsSkipped()) return;
    jobs_ = fs::canonical(dir_.path()) / "jobs";
    elsewhere_ = fs::canonical(dir_.path()) / "elsewhere";
    fs::create_directories(jobs_ / "hooks");
    fs::create_directories(jobs_ / "lib");
    fs::create_directories(elsewhere_);
  }
  fs::path jobs_, elsewhere_;
};

TEST_F(PythonHookProgram, ScriptAndPythonPathAreTakenFromTheConfigFilesFolder) {
  write_file(jobs_ / "lib" / "thresholds.py",
             "def below(value, limit):\n    return value < limit\n");
  write_file(jobs_ / "hooks" / "loss_hook.py", R"(
import hookhost, thresholds  # thresholds is in lib/, which python_path names
class LossHook(hookhost.SessionRunHook):
    def before_run(self, run_context): return hookhost.SessionRunArgs("loss")
    def after_run(self, run_context, run_values):
        if thresholds.below(run_values.results, 50): run_context.request_stop()
)");
  write_file(jobs_ / "job.ini",
             "[run]\nrun_dir = run\n\n[workload]\nname = linreg\nepochs = 20\n\n"
             "[hook.loss]\nplugin = python_hook\nscript = hooks/loss_hook.py\n"
             "python_path = lib\nclass = LossHook\n");
  const ProcessResult r = run_hookhost({"run", "--config", "../jobs/job.ini"}, elsewhere_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out,
              HasSubstr("job stopped (hook 'loss': LossHook.after_run called request_stop()"));
}

// A Python hook as an observer (mode = observe): its methods run on the host's worker thread,
// behind the step and in step order, with the values it fetched and the step each concerns.
TEST_F(PythonHookProgram, AnObserverRunsItsMethodsBehindTheStepInStepOrder) {
  write_file(jobs_ / "watch.py", R"(
import threading, time, hookhost
class Watch(hookhost.SessionRunHook):
    def begin(self): self.begin_thread, self.seen = threading.get_ident(), []
    def before_run(self, run_context): return hookhost.SessionRunArgs("loss")
    def after_run(self, run_context, run_values):
        time.sleep(0.002)
        self.seen.append((hookhost.global_step(), run_values.results > 0,
                          threading.get_ident() == self.begin_thread))
    def end(self, session):
        steps = [s for s, _, _ in self.seen]
        print("steps", steps == list(range(1, len(steps) + 1)), len(steps),
              "values", all(v for _, v, _ in self.seen),
              "on_begins_thread", any(t for _, _, t in self.seen))
)");
  write_file(jobs_ / "job.ini",
             "[run]\nrun_dir = run\n\n[workload]\nname = linreg\nepochs = 5\n\n"
             "[hook.watch]\nplugin = python_hook\nscript = watch.py\nclass = Watch\n"
             "mode = observe\nqueue = 4\n");
  const ProcessResult r =
      run_hookhost({"run", "--config", (jobs_ / "job.ini").string()}, elsewhere_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("mode = observe, queue = 4, policy = block"));
  // 20 steps, each seen once in order with its loss, none on the thread that ran begin.
  EXPECT_THAT(r.err, HasSubstr("steps True 20 values True on_begins_thread False")) << r.err;
}

TEST_F(PythonHookProgram, AMissingScriptNamesWhatTheConfigSaidAndThePathTried) {
  write_file(jobs_ / "job.ini",
             "[workload]\nname = linreg\n\n[hook.loss]\nplugin = python_hook\n"
             "script = hooks/missing.py\nclass = LossHook\n");
  const ProcessResult r =
      run_hookhost({"run", "--config", (jobs_ / "job.ini").string()}, elsewhere_);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, AllOf(HasSubstr("script: no such file hooks/missing.py (tried " +
                                     (jobs_ / "hooks" / "missing.py").string()),
                           HasSubstr("configuration file's folder")));
}

TEST_F(PythonHookProgram, StateSurvivesAKillNineAndTheJobContinuesFromItsCheckpoint) {
  // The hook kills its own process with SIGKILL at step 13, once checkpoint 10 is on disk.
  write_file(jobs_ / "counter.py", R"(
import os, signal, time, hookhost
class Counter(hookhost.SessionRunHook):
    def __init__(self, kill_at):
        self.kill_at, self.after_runs = kill_at, 0
    def state_dict(self): return {"after_runs": self.after_runs}
    def load_state_dict(self, state): self.after_runs = state["after_runs"]
    def after_create_session(self, session, coord):
        print("session at", session.global_step, "after_runs", self.after_runs)
    def after_run(self, run_context, run_values):
        self.after_runs += 1
        marker = os.path.join(hookhost.run_dir(), "killed")
        if hookhost.global_step() == self.kill_at and not os.path.exists(marker):
            checkpoint = os.path.join(hookhost.run_dir(), "checkpoints", "model.ckpt-10")
            deadline = time.time() + 60
            while not os.path.exists(checkpoint) and time.time() < deadline:
                time.sleep(0.01)
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
    def end(self, session): print("end at", session.global_step, "after_runs", self.after_runs)
)");
  write_file(jobs_ / "job.ini",
             "[run]\nrun_dir = run\nkeep_checkpoints = 0\n\n[workload]\nname = linreg\n"
             "epochs = 0\n\n[hook.counter]\nplugin = python_hook\nscript = counter.py\n"
             "class = Counter\nargs = {\"kill_at\": 13}\n\n[hook.stop]\nplugin = stop_at_step\n"
             "last_step = 30\n\n[hook.checkpoints]\nplugin = checkpoint_saver\nsave_steps = 5\n");
  const std::vector<std::string> args{"run", "--config", (jobs_ / "job.ini").string()};
  const ProcessResult killed = run_hookhost(args, elsewhere_);
  ASSERT_EQ(killed.exit_code, 128 + SIGKILL) << killed.err;
  ASSERT_TRUE(fs::exists(jobs_ / "run" / "killed"));
  EXPECT_THAT(killed.err, HasSubstr("[counter] [info] session at 0 after_runs 0"));

  const ProcessResult resumed = run_hookhost(args, elsewhere_);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_THAT(resumed.err, HasSubstr("model.ckpt-10 at global step 10"));
  EXPECT_THAT(resumed.err, HasSubstr("[counter] [info] session at 10 after_runs 10"));
  EXPECT_THAT(resumed.err, HasSubstr("[counter] [info] end at 30 after_runs 30"));
  EXPECT_THAT(resumed.out, HasSubstr("(global step 10 -> 30)"));
  const auto newest = hookhost::restore_latest_checkpoint(jobs_ / "run" / "checkpoints");
  ASSERT_TRUE(newest && !newest->file.empty());
  EXPECT_EQ(newest->checkpoint.global_step, 30);
  ASSERT_EQ(newest->checkpoint.hook_states.count("counter"), 1u);
  EXPECT_EQ(newest->checkpoint.hook_states.at("counter").bytes, R"({"after_runs": 30})");
}

TEST_F(PythonHookProgram, TheLossHookExampleStopsAtItsThresholdFromAnyFolder) {
  const fs::path ini = fs::path(HOOKHOST_SOURCE_DIR) / "examples" / "python" / "loss_hook.ini";
  const ProcessResult r = run_hookhost(
      {"run", "--config", ini.string(), "--run-dir", (dir_ / "run").string()}, elsewhere_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.out, m,
      std::regex(R"(hookhost: job stopped \(hook 'loss': LossHook\.after_run called )"
                 R"(request_stop\(\) at global step (\d+)\))")))
      << r.out;
  EXPECT_LT(std::stoi(m[1]), 200) << "the threshold, not the step limit, stopped it";
  EXPECT_THAT(r.err, HasSubstr("[loss] [info] step=" + std::string(m[1])));
}

// The example files in examples/python/ run as their comments say.
class PythonHookExample : public PythonHook {
 protected:
  static HookTest example(const std::string& file, const std::string& class_name) {
    HookTest t(kPlugin, "example");
    t.set("script", (fs::path(HOOKHOST_SOURCE_DIR) / "examples" / "python" / file).string());
    t.set("class", class_name);
    return t;
  }
};

TEST_F(PythonHookExample, TheFunctionBasedHookPrintsTheLossEveryNSteps) {
  HookTest t = example("function_hook.py", "make_hook");
  t.set("args", R"({"every": 2})").steps(4);
  const RunResult run = t.run();
  EXPECT_THAT(run.log_lines("info"), ElementsAre("step 2: loss 0.5000", "step 4: loss 0.2500"))
      << run.log_text();
}

TEST_F(PythonHookExample, TheDictFetchHookGetsTheStructureItAskedFor) {
  HookTest t = example("dict_fetch_hook.py", "ModelLogger");
  t.set("args", R"({"every": 2})").steps(2).value("bias", 0.5f);
  const RunResult run = t.run();
  EXPECT_EQ(run.fetched(2), (Names{"loss", "global_step", "weights", "bias"})) << run.log_text();
  EXPECT_THAT(run.log_lines("info"),
              ElementsAre("step 2: loss 0.5000, weights [1.000, 2.000, 3.000], bias 0.500"));
}

TEST_F(PythonHookExample, TheStatefulHookStopsAfterItsPatienceAndResumesCounting) {
  // The loss improves until step 3, then stays at 1.
  const auto loss = [](int64_t step) { return step <= 3 ? 1.0 / static_cast<double>(step) : 1.0; };
  HookTest first = example("stateful_hook.py", "PatienceStop");
  first.set("args", R"({"patience": 2})").steps(10).value("loss", loss);
  const RunResult stopped = first.run();
  EXPECT_EQ(stopped.outcome, Outcome::stopped) << stopped.log_text();
  EXPECT_EQ(stopped.global_step, 5);
  EXPECT_THAT(stopped.log_lines("info"), ElementsAre("no improvement for 2 steps (best 0.3333)"));
  EXPECT_THAT(stopped.state_bytes(), HasSubstr(R"("waited": 2)"));

  // Resumed with more patience, it goes on counting from 2 rather than from 0.
  HookTest resumed = example("stateful_hook.py", "PatienceStop");
  resumed.set("args", R"({"patience": 4})").steps(20).value("loss", 1.0).resume_from(stopped);
  const RunResult run = resumed.run();
  EXPECT_EQ(run.global_step, 7) << run.log_text();
  EXPECT_THAT(run.log_lines("info"), ElementsAre("no improvement for 4 steps (best 0.3333)"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
