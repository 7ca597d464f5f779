// The compatibility guard: plugins built against each frozen ABI's headers (tests/abi/: 1.0 to
// 1.6) run through full lifecycles in today's host, state saved and restored included. The 1.1
// and 1.2 C plugins also fail their begin unless hh.job/1 and hh.dist/1 are offered at their 1.1
// sizes; the 1.2 ones declare needs, which change nothing unconfined.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hookhost/host/discovery.hpp"
#include "plugin_harness.hpp"
#include "plugins/trust.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::ElementsAre;

class FrozenAbi : public ::testing::TestWithParam<const char*> {};

TEST_P(FrozenAbi, RunsTheFullLifecycleAndResumesItsState) {
  const std::string id = GetParam();
  TempDir dir;
  const fs::path first = dir / "first.txt", second = dir / "second.txt";
  std::map<std::string, SavedHookState> saved;
  std::string build;  // the SHA-256 of the plugin file: the build its state is tagged with
  {
    PluginHarness h({}, {id});
    build = sha256_of_file(h.plugin_dir() / (id + ".so"));
    h.workload.script().end_of_data_step = 3;
    h.workload.script().values["loss"] = loss_of_ten_over_step;  // the trace's loss=10, loss=5
    h.add("old", id, {{"trace", first.string()}});
    EXPECT_EQ(h.run().outcome, Outcome::completed);
    saved = h.runtime().saved_hook_states();
  }
  EXPECT_THAT(
      lines_of(read_file(first)),
      ElementsAre("begin restored=0", "after_create_session creation=1", "before_run",
                  "after_run gs=0 values=1 loss=10", "before_run", "after_run gs=1 values=1 loss=5",
                  "before_run",  // the step that found the end of the data
                  "end outcome=completed", "destroy"));
  ASSERT_EQ(saved.count("old"), 1u);
  EXPECT_EQ(saved.at("old"), (SavedHookState{id, 1, "2", build}));

  PluginHarness h({}, {id});
  h.workload.script().end_of_data_step = 1;
  h.add("old", id, {{"trace", second.string()}});
  h.runtime().restore_hook_states(saved);
  h.run();
  EXPECT_EQ(lines_of(read_file(second)).front(), "begin restored=2");
}

INSTANTIATE_TEST_SUITE_P(CAndCxx, FrozenAbi,
                         ::testing::Values("frozen_v1_0_c", "frozen_v1_0_cxx", "frozen_v1_1_c",
                                           "frozen_v1_1_cxx", "frozen_v1_2_c", "frozen_v1_2_cxx",
                                           "frozen_v1_3_c", "frozen_v1_3_cxx", "frozen_v1_4_c",
                                           "frozen_v1_4_cxx", "frozen_v1_5_c", "frozen_v1_5_cxx",
                                           "frozen_v1_6_c", "frozen_v1_6_cxx"));

// Runs frozen plugin `id` as one hook named "frozen" (an observer when `observer`) with `params`
// (its trace goes to `trace`) over `steps` steps with a loss of 10/step; returns its after_run
// lines and how many after_run calls the host made.
std::pair<std::vector<std::string>, uint64_t> run_frozen(
    const std::string& id, bool observer, int64_t steps, const fs::path& trace,
    std::multimap<std::string, std::string> params) {
  uint64_t after_run_calls = 0;
  {
    PluginHarness h({}, {id});
    h.workload.script().end_of_data_step = steps;
    h.workload.script().values["loss"] = loss_of_ten_over_step;
    auto plugin = h.plugin(id);
    HookSettings settings{"frozen"};
    settings.observer.enabled = observer;
    params.emplace("trace", trace.string());
    h.runtime().add_hook(plugin, settings, resolve_params(plugin->metadata(), "frozen", params));
    EXPECT_EQ(h.run().outcome, Outcome::completed) << h.log();
    after_run_calls = h.runtime().reports().at(0).callbacks.at("after_run").calls;
  }
  std::vector<std::string> after_runs;
  for (const auto& line : lines_of(read_file(trace)))
    if (line.starts_with("after_run")) after_runs.push_back(line);
  return {after_runs, after_run_calls};
}

// ABI 1.4 gave the run context the step's wall time for calls behind the step: the 1.4 plugins,
// run as observers, get it in every after_run (on the step they get 0, as the test above shows).
TEST(FrozenAbi1_4, ObserversGetTheStepsWallTime) {
  for (const char* id : {"frozen_v1_4_c", "frozen_v1_4_cxx"}) {
    TempDir dir;
    EXPECT_THAT(run_frozen(id, true, 3, dir / "trace.txt", {}).first,
                ElementsAre("after_run gs=0 values=1 loss=10 behind",
                            "after_run gs=1 values=1 loss=5 behind"))
        << id;
  }
}

// ABI 1.5 gave hh.steps/1 skip_until: the 1.5 plugins, asking each time to be called 3 steps later,
// get before_run and after_run at steps 0, 3 and 6 of 8, on the step and behind it.
TEST(FrozenAbi1_5, SkipUntilSkipsTheStepsTheHookDoesNotNeed) {
  for (const char* id : {"frozen_v1_5_c", "frozen_v1_5_cxx"})
    for (const bool observer : {false, true}) {
      TempDir dir;
      const auto [after_runs, calls] =
          run_frozen(id, observer, 8, dir / "trace.txt", {{"every", "3"}});
      EXPECT_EQ(calls, 3u) << id << " observer=" << observer;
      std::vector<std::string> steps;
      for (const auto& line : after_runs) steps.push_back(line.substr(0, line.find(' ', 10)));
      EXPECT_THAT(steps, ElementsAre("after_run gs=0", "after_run gs=3", "after_run gs=6"))
          << id << " observer=" << observer;
    }
}

// A new session clears a hook's skip_until: after a recovery the hook is called at the new
// session's first step, whatever it asked before, and its own schedule goes on from there.
TEST(FrozenAbi1_5, ANewSessionClearsSkipUntil) {
  TempDir dir;
  const fs::path trace = dir / "trace.txt";
  PluginHarness h({}, {"frozen_v1_5_c"});
  h.workload.script().end_of_data_step = 9;
  h.workload.script().faults[5] = {{StepStatus::aborted, "a lost worker", false}};
  h.add("every3", "frozen_v1_5_c", {{"trace", trace.string()}, {"every", "3"}});
  EXPECT_EQ(h.run().outcome, Outcome::completed) << h.log();
  std::vector<std::string> calls;
  for (const auto& line : lines_of(read_file(trace)))
    if (line.starts_with("after_run") || line.starts_with("after_create_session"))
      calls.push_back(line.substr(0, line.find(' ', line.find(' ') + 1)));
  // Step 3 asked for step 6; the recovery's session starts at global step 4 and calls it there.
  EXPECT_THAT(calls,
              ElementsAre("after_create_session creation=1", "after_run gs=0", "after_run gs=3",
                          "after_create_session creation=2", "after_run gs=4", "after_run gs=7"))
      << read_file(trace);
}

// ABI 1.6 gave end() the outcome "detached": a hook taken off a running job is told so when its
// plugin knows the outcome (built against 1.6), and "stopped" with stop cause HH_STOP_CAUSE_HOST
// when it predates it.
TEST(FrozenAbi1_6, ADetachedHookIsToldDetachedOnlyWhenItsPluginKnowsTheOutcome) {
  TempDir dir;
  const std::vector<std::string> ids = {"frozen_v1_5_c", "frozen_v1_5_cxx", "frozen_v1_6_c",
                                        "frozen_v1_6_cxx"};
  PluginHarness h({}, ids);
  h.workload.script().end_of_data_step = 100;
  for (const std::string& id : ids) h.add(id, id, {{"trace", (dir / (id + ".txt")).string()}});
  Runtime& runtime = h.runtime();
  ASSERT_TRUE(runtime.start()) << h.log();
  runtime.run();
  std::vector<std::string> told;
  ASSERT_TRUE(runtime.at_next_boundary([&](Runtime& r) {
    for (const std::string& id : ids) {
      std::string message;
      EXPECT_TRUE(r.detach_hook(id, "by the test", &message)) << message;
      told.push_back(message);
    }
  }));
  runtime.run();  // the change runs at this step's boundary
  ASSERT_EQ(told.size(), 4u) << h.log();
  EXPECT_EQ(told[0], "it had its end (outcome stopped, reason \"detached: by the test\")");
  EXPECT_EQ(told[3], "it had its end (outcome detached, reason \"detached: by the test\")");
  runtime.run();
  EXPECT_EQ(runtime.close().outcome, Outcome::stopped) << h.log();
  for (const std::string& id : ids) {
    const std::vector<std::string> lines = lines_of(read_file(dir / (id + ".txt")));
    ASSERT_GE(lines.size(), 2u) << id;
    const std::string expected_end = id.starts_with("frozen_v1_6")
                                         ? "end outcome=detached reason=detached: by the test"
                                         : "end outcome=stopped cause=4";  // by the host
    // Two steps ran before the boundary: no call after the detach, and no second end.
    EXPECT_THAT(std::vector<std::string>(lines.end() - 3, lines.end()),
                ElementsAre(::testing::StartsWith("after_run gs=1"), expected_end, "destroy"))
        << id << ":\n"
        << read_file(dir / (id + ".txt"));
  }
  for (const HookReport& report : runtime.reports())
    EXPECT_TRUE(report.detached) << report.instance_name;
}

// A note written with HH_PLUGIN_NOTE beside a hand-built entry (no HH_PLUGIN_DEFINE) is discovered
// with its metadata, and the plugin loads and runs.
TEST(HandWrittenNote, IsDiscoveredAndThePluginRuns) {
  TempDir dir;
  copy_plugin(fixture_plugin("hand_note"), dir.path());
  DiscoveryResult found = discover_plugins({dir.path()});
  ASSERT_TRUE(found.rejected.empty()) << found.rejected.front().reason;
  const DiscoveredPlugin* p = found.find("hand_note");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->metadata.version, "2.1.0");
  EXPECT_EQ(p->metadata.description, "Note and entry written by hand");
  EXPECT_EQ(p->metadata.abi_minor, uint32_t{HH_ABI_MINOR});
  ASSERT_EQ(p->metadata.params.size(), 1u);
  EXPECT_EQ(p->metadata.params[0].name, "threshold");
  EXPECT_EQ(p->metadata.params[0].default_value, "0.5");

  PluginHarness h({}, {"hand_note"});
  h.workload.script().end_of_data_step = 3;
  h.add("by_hand", "hand_note", {{"threshold", "0.25"}});
  EXPECT_EQ(h.run().outcome, Outcome::completed) << h.log();
}

// Needs are the note's alone, like placement: a hand-written note that declares them still agrees
// with an entry that cannot say them, so the plugin loads and runs.
TEST(HandWrittenNote, DeclaresNeedsTheEntryCannotSayAndStillLoads) {
  PluginHarness h({}, {"needs_hand_note"});
  const std::shared_ptr<const LoadedPlugin> plugin = h.plugin("needs_hand_note");
  EXPECT_EQ(plugin->metadata().needs, (PluginNeeds{{}, {"exports/"}, {"models"}, {}, false, true}));
  EXPECT_TRUE(metadata_from_entry(plugin->entry()).needs.empty());
  h.workload.script().end_of_data_step = 2;
  h.add("by_hand", "needs_hand_note", {{"models", "a.bin,b.bin"}});
  EXPECT_EQ(h.run().outcome, Outcome::completed) << h.log();
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
