// A plugin built for a later ABI 1.x minor (tests/fixtures/future_minor: bigger structs with
// trailing fields, its own array strides, a longer note with unknown keys and fields) loads in
// today's host and runs exactly like a 1.0 plugin; a variant that needs a newer host is refused
// with advice to upgrade.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hookhost/hookhost.h>

#include "hookhost/host/discovery.hpp"
#include "plugin_harness.hpp"
#include "plugins/trust.hpp"
#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(FutureMinor, DiscoveryReadsItsLongerNoteAndKeepsTheLoweredMinimum) {
  TempDir dir;
  copy_plugin(fixture_plugin("future_minor"), dir.path());
  DiscoveryResult found = discover_plugins({dir.path()});
  ASSERT_TRUE(found.rejected.empty()) << found.rejected.front().reason;
  const DiscoveredPlugin* p = found.find("future_minor");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->metadata.abi_minor, static_cast<uint32_t>(HH_ABI_MINOR + 3));
  EXPECT_EQ(p->metadata.min_abi_minor, 0u);
  ASSERT_EQ(p->metadata.params.size(), 2u);
  EXPECT_EQ(p->metadata.params[0].name, "trace");
  EXPECT_EQ(p->metadata.params[0].help, "file to append one line per call to");  // 6th field gone
  EXPECT_EQ(p->metadata.params[1].name, "scale");
  EXPECT_EQ(p->metadata.params[1].default_value, "3");
}

TEST(FutureMinor, LoadsThroughItsOwnStridesAndRunsTheWholeLifecycle) {
  TempDir dir;
  const fs::path trace = dir / "trace.txt";
  {
    PluginHarness h({}, {"future_minor"});
    h.workload.script().end_of_data_step = 4;
    h.workload.script().values["loss"] = loss_of_ten_over_step;  // the trace's loss=10, 5, 3.33333
    h.add("later", "future_minor", {{"trace", trace.string()}, {"scale", "5"}});
    EXPECT_EQ(h.run().outcome, Outcome::completed) << h.log();
    // The bigger view fed at global step 1 reached the workload with 1.0's fields intact.
    ASSERT_GE(h.runs.size(), 2u);
    EXPECT_TRUE(h.runs[0].fed.empty());
    ASSERT_EQ(h.runs[1].fed.count("learning_rate"), 1u);
    EXPECT_FLOAT_EQ(h.runs[1].fed.at("learning_rate").as_double(), 0.005);
    // Its state went through state_put like any other.
    const auto saved = h.runtime().saved_hook_states();
    ASSERT_EQ(saved.count("later"), 1u);
    EXPECT_EQ(saved.at("later"),
              (SavedHookState{"future_minor", 1, "3",
                              sha256_of_file(h.plugin_dir() / "future_minor.so")}));
    EXPECT_THAT(h.log(), Not(HasSubstr("[error]")));
  }
  const std::string host_abi = std::to_string(HH_ABI_MAJOR) + "." + std::to_string(HH_ABI_MINOR);
  EXPECT_THAT(lines_of(read_file(trace)),
              ElementsAre("begin host=" + host_abi + " scale=5", "after_create_session creation=1",
                          "before_run", "after_run gs=0 values=1 loss=10", "before_run",
                          "after_run gs=1 values=1 loss=5", "before_run",
                          "after_run gs=2 values=1 loss=3.33333", "before_run",
                          "end outcome=completed", "destroy"));
}

TEST(FutureMinor, ItsDefaultComesThroughTheParamStride) {
  TempDir dir;
  const fs::path trace = dir / "trace.txt";
  PluginHarness h({}, {"future_minor"});
  h.workload.script().end_of_data_step = 1;
  h.add("later", "future_minor", {{"trace", trace.string()}});
  h.run();
  EXPECT_EQ(lines_of(read_file(trace)).front(), "begin host=" + std::to_string(HH_ABI_MAJOR) + "." +
                                                    std::to_string(HH_ABI_MINOR) + " scale=3");
}

TEST(FutureMinor, APluginThatNeedsANewerHostIsToldToUpgradeIt) {
  TempDir dir;
  const fs::path file = copy_plugin(fixture_plugin("future_minor_needs_newer"), dir.path());
  DiscoveryResult found = discover_plugins({dir.path()});
  EXPECT_EQ(found.find("future_minor_needs_newer"), nullptr);
  ASSERT_EQ(found.rejected.size(), 1u);
  EXPECT_EQ(found.rejected[0].file, file);
  EXPECT_THAT(found.rejected[0].reason,
              AllOf(HasSubstr("built for hookhost ABI 1." + std::to_string(HH_ABI_MINOR + 3) +
                              " and needs at least 1." + std::to_string(HH_ABI_MINOR + 1)),
                    HasSubstr("this host supports 1." + std::to_string(HH_ABI_MINOR)),
                    HasSubstr("upgrade the host"), Not(HasSubstr("malformed"))));
}

// hh.dist/1 and hh.job/1 came after 1.0 was frozen: they are ABI 1.1. The note's needs.* lines
// are ABI 1.2, its mode line 1.3, the run context's wall_time_ns 1.4, hh.steps/1 skip_until 1.5,
// the outcome HH_OUTCOME_DETACHED 1.6, and this host is 1.6.
static_assert(HH_ABI_MAJOR == 1 && HH_ABI_MINOR == 6, "the host's ABI is 1.6");
static_assert(HH_OUTCOME_DETACHED == 4 && HH_OUTCOME_FAILED == 3);
static_assert(HH_STEPS_SERVICE_SIZE_1_5 == HH_STEPS_SERVICE_SIZE &&
              HH_STEPS_SERVICE_SIZE_1_0 < HH_STEPS_SERVICE_SIZE_1_5);
static_assert(HH_DIST_SERVICE_SIZE_1_1 == HH_DIST_SERVICE_SIZE && HH_JOB_SERVICE_SIZE_1_1 == 16);

// Every minor up to the host's own is accepted: a 1.0 plugin (declaring minor 0), 1.1 to 1.6
// plugins and one of today's built-in plugins (minor 6, needing 1.6), each from its own note.
TEST(FutureMinor, PluginsOfEveryMinorUpToTheHostsAreAccepted) {
  TempDir dir;
  for (const char* id :
       {"frozen_v1_0_c", "frozen_v1_1_c", "frozen_v1_1_cxx", "frozen_v1_2_c", "frozen_v1_2_cxx",
        "frozen_v1_3_c", "frozen_v1_3_cxx", "frozen_v1_4_c", "frozen_v1_4_cxx", "frozen_v1_5_c",
        "frozen_v1_5_cxx", "frozen_v1_6_c", "frozen_v1_6_cxx"})
    copy_plugin(fixture_plugin(id), dir.path());
  copy_plugin(builtin_plugin("step_counter"), dir.path());
  DiscoveryResult found = discover_plugins({dir.path()});
  ASSERT_TRUE(found.rejected.empty()) << found.rejected.front().reason;
  const DiscoveredPlugin* v1_0 = found.find("frozen_v1_0_c");
  ASSERT_NE(v1_0, nullptr);
  EXPECT_EQ(v1_0->metadata.abi_minor, 0u);
  EXPECT_EQ(v1_0->metadata.min_abi_minor, 0u);
  const std::vector<std::pair<const char*, uint32_t>> minors = {
      {"frozen_v1_1_c", 1}, {"frozen_v1_1_cxx", 1}, {"frozen_v1_2_c", 2}, {"frozen_v1_2_cxx", 2},
      {"frozen_v1_3_c", 3}, {"frozen_v1_3_cxx", 3}, {"frozen_v1_4_c", 4}, {"frozen_v1_4_cxx", 4},
      {"frozen_v1_5_c", 5}, {"frozen_v1_5_cxx", 5}, {"frozen_v1_6_c", 6}, {"frozen_v1_6_cxx", 6},
      {"step_counter", 6}};
  for (const auto& [id, minor] : minors) {
    const DiscoveredPlugin* p = found.find(id);
    ASSERT_NE(p, nullptr) << id;
    EXPECT_EQ(p->metadata.abi_minor, minor) << id;
    EXPECT_EQ(p->metadata.min_abi_minor, minor) << id;
  }
}

TEST(FutureMinor, TheProgramRunsItFromAConfigFile) {
  TempDir dir;
  const fs::path plugins = dir / "plugins";
  fs::create_directories(plugins);
  copy_plugin(fixture_plugin("future_minor"), plugins);
  const fs::path trace = dir / "trace.txt";
  write_file(dir / "job.ini",
             "[run]\nplugin_dir = plugins\nrun_dir = run\n"
             "[workload]\nname = linreg\nepochs = 1\nbatch_size = 8\n"
             "[hook.later]\nplugin = future_minor\ntrace = " +
                 trace.string() + "\n");
  ProcessResult r = run_hookhost({"run", "--config", (dir / "job.ini").string()}, dir.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(read_file(trace));
  ASSERT_FALSE(lines.empty());
  EXPECT_THAT(lines.front(), HasSubstr("scale=3"));
  EXPECT_EQ(lines.back(), "destroy");
  // mtcars has 32 rows: one epoch in batches of 8 is 4 steps.
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                          [](const std::string& l) { return l.starts_with("after_run"); }),
            4);
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
