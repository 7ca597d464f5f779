// [hook.NAME] log_level: one hook's logger at its own level, in both isolation tiers, without
// changing the job's or the other hooks'; a bad level is a configuration error naming where.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hookhost/host/config.hpp>
#include <string>
#include <vector>

#include "plugin_files.hpp"
#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

class HookLogLevelTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    plugins_ = dir_ / "plugins";
    fs::create_directories(plugins_);
    copy_plugin(fixture_plugin("level_logger"), plugins_);
    write_file(dir_ / "job.ini", "[run]\nrun_dir = run\nisolation = " + GetParam() +
                                     "\n[workload]\nname = linreg\nepochs = 0\n"
                                     "[hook.loud]\nplugin = level_logger\n"
                                     "[hook.quiet]\nplugin = level_logger\n"
                                     "[hook.stop]\nplugin = stop_at_step\nlast_step = 3\n");
  }
  ProcessResult run(std::vector<std::string> more) {
    std::vector<std::string> args = {"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir",
                                     plugins_.string()};
    args.insert(args.end(), more.begin(), more.end());
    return run_hookhost(args, dir_.path());
  }
  TempDir dir_;
  fs::path plugins_;
};

TEST_P(HookLogLevelTest, OneHooksDebugLinesShowAndNoOtherLoggersDo) {
  const ProcessResult r = run({"--set", "hook.loud.log_level=debug"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, AllOf(HasSubstr("[loud] [debug] debug line at step 1"),
                           HasSubstr("[loud] [debug] debug line at step 3"),
                           HasSubstr("[loud] [info] info line at step 1")));
  EXPECT_THAT(r.err, Not(HasSubstr("[loud] [trace]")));
  // The other instance of the same plugin, and the host, stay at the job's level (info).
  EXPECT_THAT(r.err, HasSubstr("[quiet] [info] info line at step 1"));
  EXPECT_THAT(r.err, Not(HasSubstr("[quiet] [debug]")));
  EXPECT_THAT(r.err, Not(HasSubstr("[hookhost] [debug]")));
}

TEST_P(HookLogLevelTest, AHookCanBeQuieterThanTheJob) {
  const ProcessResult r =
      run({"--set", "run.log_level=trace", "--set", "hook.quiet.log_level=warn"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, AllOf(HasSubstr("[loud] [trace] trace line at step 2"),
                           HasSubstr("[quiet] [warning] warn line at step 2")));
  EXPECT_THAT(r.err, Not(HasSubstr("[quiet] [info]")));
  EXPECT_THAT(r.err, Not(HasSubstr("[quiet] [debug]")));
}

TEST_P(HookLogLevelTest, ABadLevelIsAConfigurationErrorNamingWhereItWasSet) {
  const ProcessResult set = run({"--set", "hook.loud.log_level=loud"});
  EXPECT_EQ(set.exit_code, 2) << set.err;
  EXPECT_THAT(set.err,
              AllOf(HasSubstr("--set hook.loud.log_level=loud"), HasSubstr("log_level"),
                    HasSubstr("expected one of trace, debug, info, warn, error, critical, off"),
                    HasSubstr("got 'loud'")));

  write_file(dir_ / "job.ini", read_file(dir_ / "job.ini") +
                                   "[hook.extra]\nplugin = "
                                   "level_logger\nlog_level = Debug\n");
  const ProcessResult file = run({});
  EXPECT_EQ(file.exit_code, 2) << file.err;
  EXPECT_THAT(file.err, AllOf(HasSubstr("job.ini:16"), HasSubstr("[hook.extra] log_level"),
                              HasSubstr("got 'Debug'")));
  EXPECT_THAT(file.out + file.err, Not(HasSubstr("line at step")));
}

INSTANTIATE_TEST_SUITE_P(Tiers, HookLogLevelTest, ::testing::Values("in_process", "process"));

TEST(HookLogLevel, IsAHostKeyThatPluginsDescribeLists) {
  EXPECT_TRUE(is_host_hook_key("log_level"));
  TempDir dir;
  const ProcessResult r = run_hookhost({"plugins", "describe", "stop_at_step"}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("  log_level        this hook's log level"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
