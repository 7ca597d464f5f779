// Where a plugin's hooks run in a distributed job when their section sets no `ranks`: declared in
// the plugin's note (placement=chief|all), read at discovery, shown by `plugins describe`, never
// inferred from the plugin's id. The distributed runs themselves are in mpi_job_test.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "placement_fork.hpp"
#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

class PluginPlacement : public ::testing::Test {
 protected:
  ProcessResult describe(const std::string& id) {
    return run_hookhost({"plugins", "describe", id, "--plugin-dir", dir_.path().string()},
                        dir_.path());
  }
  TempDir dir_;
};

TEST_F(PluginPlacement, DescribeShowsWhatThePluginDeclaresAndTheDefaultWhenItDeclaresNothing) {
  copy_plugin(fixture_plugin("placed_chief"), dir_.path());
  copy_plugin(fixture_plugin("placed_c_all"), dir_.path());
  copy_plugin(fixture_plugin("placed_default"), dir_.path());
  copy_plugin(fixture_plugin("frozen_v1_0_c"), dir_.path());

  ProcessResult r = describe("placed_chief");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out,
              AllOf(HasSubstr("\n  placement: chief (declared by the plugin: rank 0 alone"),
                    HasSubstr("ranks = overrides it)"),
                    HasSubstr("(default: the plugin's placement); for this plugin: chief\n")));
  r = describe("placed_c_all");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\n  placement: all (declared by the plugin: every rank"));
  for (const std::string id : {"placed_default", "frozen_v1_0_c"}) {
    r = describe(id);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out,
                AllOf(HasSubstr("\n  placement: all (not declared by the plugin, so every rank"),
                      HasSubstr("(default: the plugin's placement); for this plugin: all\n")))
        << id;
  }
  // A built-in says it the same way: from its note.
  r = run_hookhost({"plugins", "describe", "summary_saver"}, dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\n  placement: chief (declared by the plugin"));
  r = run_hookhost({"plugins", "describe", "nan_tensor"}, dir_.path());
  EXPECT_THAT(r.out, HasSubstr("\n  placement: all (not declared by the plugin"));
}

TEST_F(PluginPlacement, AForkOfABuiltInUnderAnotherIdKeepsItsPlacement) {
  fork_plugin(builtin_plugin("history_saver"), dir_.path(), "history_saver", "history_fork1");
  const ProcessResult r = describe("history_fork1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, AllOf(HasSubstr("history_fork1 "),
                           HasSubstr("\n  placement: chief (declared by the plugin")));
}

TEST_F(PluginPlacement, DiscoveryRefusesAnUnknownPlacementNamingTheFileAndTheLine) {
  const fs::path file = copy_plugin(fixture_plugin("bad_placement"), dir_.path());
  ProcessResult r =
      run_hookhost({"plugins", "list", "--plugin-dir", dir_.path().string()}, dir_.path());
  EXPECT_THAT(r.out, AllOf(HasSubstr(file.string()), HasSubstr("line 4 says placement=everywhere"),
                           HasSubstr("'chief'"), HasSubstr("'all'")));
  // A job that names it hears the same reason, with the file.
  write_file(dir_ / "job.ini", "[workload]\nepochs = 0\n[hook.b]\nplugin = bad_placement\n");
  r = run_hookhost(
      {"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir", dir_.path().string()},
      dir_.path());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, AllOf(HasSubstr("unknown plugin 'bad_placement'"), HasSubstr(file.string()),
                           HasSubstr("placement=everywhere")));
}

TEST_F(PluginPlacement, CheckAcceptsAPluginThatDeclaresItsPlacement) {
  for (const std::string id : {"placed_chief", "placed_c_all"}) {
    std::vector<std::string> args = {"check", fixture_plugin(id).string()};
    if (id == "placed_chief") args.insert(args.end(), {"--set", "file=out.txt"});
    const ProcessResult r = run_hookhost(args, dir_.path());
    EXPECT_EQ(r.exit_code, 0) << id << "\n" << r.out << r.err;
    EXPECT_THAT(r.out + r.err, Not(HasSubstr("placement"))) << id;
  }
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
