// isolation = process through the hookhost program: a sandboxed hook that crashes, exits or hangs
// costs that hook only, on_crash decides what follows, and the other hooks get every call. Also
// the in-process watchdog. Real program, real plugins, real runner processes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

long count(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator());
}

class IsolationCli : public ::testing::Test {
 protected:
  void SetUp() override {
    plugins_ = dir_ / "plugins";
    fs::create_directories(plugins_);
    copy_plugin(fixture_plugin("crasher"), plugins_);
    copy_plugin(fixture_plugin("scripted"), plugins_);
  }
  // linreg for 2 epochs (8 steps), a crasher hook and the lifecycle trace, both sandboxed.
  ProcessResult run(const std::string& boom, const std::vector<std::string>& more = {}) {
    write_file(dir_ / "job.ini",
               "[run]\nrun_dir = run\nisolation = process\n\n[workload]\nname = linreg\n"
               "epochs = 2\n\n[hook.boom]\nplugin = crasher\n" +
                   boom + "\n\n[hook.trace]\nplugin = lifecycle_trace\norder = 1\n");
    std::vector<std::string> args{"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir",
                                  plugins_.string()};
    args.insert(args.end(), more.begin(), more.end());
    return run_hookhost(args, dir_.path());
  }
  std::string trace() const { return read_file(dir_ / "run" / "trace.jsonl"); }
  long trace_calls(const std::string& callback) const {
    return count(trace(), "\"callback\":\\s*\"" + callback + "\"");
  }

  TempDir dir_;
  fs::path plugins_;
};

TEST_F(IsolationCli, ACrashInEachWayCostsOnlyThatHookAndTheOthersGetEveryCall) {
  const std::vector<std::pair<std::string, std::string>> ways = {
      {"segv", "was killed by signal 11 (SIGSEGV"},
      {"abort", "was killed by signal 6 (SIGABRT"},
      {"exit", "exited with status 3"},
      {"_exit0", "exited with status 0"},
      {"thread_segv", "was killed by signal 11 (SIGSEGV"}};
  for (const auto& [how, said] : ways) {
    SCOPED_TRACE(how);
    ProcessResult r =
        run("how = " + how + "\nin = after_run\nat_step = 2\non_crash = disable", {"--fresh"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("job completed"));
    EXPECT_THAT(
        r.err,
        AllOf(HasSubstr("hook 'boom' (plugin 'crasher', " + (plugins_ / "crasher.so").string() +
                        ") failed in after_run at global step 1: the hook's runner "
                        "process (pid "),
              HasSubstr(said), HasSubstr("[on_crash=disable: the hook is disabled")));
    EXPECT_EQ(trace_calls("after_run"), 8);
    EXPECT_EQ(trace_calls("end"), 1);
  }
}

TEST_F(IsolationCli, RestartBringsTheHookBackUntilItsRestartsAreUsedUp) {
  ProcessResult r = run("how = segv\nin = after_run\nat_step = 2\nmax_restarts = 2");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count(r.err, "on_crash=restart: restarting it \\([12] of 2\\)"), 2);
  EXPECT_EQ(count(r.err, "hook 'boom' restarted with its last saved state"), 2);
  EXPECT_THAT(r.err, HasSubstr("2 restarts used up (max_restarts); the hook is disabled"));
  EXPECT_EQ(trace_calls("after_run"), 8);
}

TEST_F(IsolationCli, OnCrashStopAndFailEndTheJobAsTheySay) {
  ProcessResult stopped =
      run("how = segv\nin = after_run\nat_step = 2\non_crash = stop", {"--fresh"});
  EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
  EXPECT_THAT(stopped.out, HasSubstr("job stopped"));
  EXPECT_EQ(trace_calls("after_run"), 2);  // the crash's step still finished for the others
  ProcessResult failed =
      run("how = exit\nin = before_run\nat_step = 2\non_crash = fail", {"--fresh"});
  EXPECT_EQ(failed.exit_code, 1) << failed.err;
  EXPECT_THAT(failed.out, HasSubstr("job failed"));
  EXPECT_EQ(trace_calls("end"), 1);
}

TEST_F(IsolationCli, ACallOverItsTimeoutKillsTheRunnerNotTheJob) {
  write_file(dir_ / "job.ini",
             "[run]\nrun_dir = run\n\n[workload]\nname = linreg\nepochs = 1\n\n[hook.slow]\n"
             "plugin = scripted\nisolation = process\ncall_timeout_ms = 300\non_crash = disable\n"
             "block_in_before_secs = 30\ntrace = " +
                 (dir_ / "slow.txt").string() + "\n");
  ProcessResult r = run_hookhost(
      {"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir", plugins_.string()},
      dir_.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, AllOf(HasSubstr("hook 'slow' (plugin 'scripted'"),
                           HasSubstr("failed in before_run at global step 0"),
                           HasSubstr("call_timeout_ms")));
  EXPECT_THAT(r.out, HasSubstr("job completed"));
}

TEST_F(IsolationCli, TheWatchdogNamesASlowInProcessCall) {
  write_file(dir_ / "job.ini",
             "[run]\nrun_dir = run\n\n[workload]\nname = linreg\nepochs = 1\n\n[hook.slow]\n"
             "plugin = scripted\ncall_timeout_ms = 50\nblock_in_before_secs = 0.5\ntrace = " +
                 (dir_ / "slow.txt").string() + "\n");
  ProcessResult r = run_hookhost(
      {"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir", plugins_.string()},
      dir_.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err,
              HasSubstr("hook 'slow' (plugin 'scripted', " + (plugins_ / "scripted.so").string() +
                        ") has been running in before_run at global step 0 for "));
  // Once at the limit, then at doubling intervals: bounded, however long the call.
  const long warnings = count(r.err, "over its call_timeout_ms = 50");
  EXPECT_GE(warnings, 1);
  EXPECT_LE(warnings, 5);
}

TEST_F(IsolationCli, IsolationKeysAreValidated) {
  for (const std::string bad : {"isolation = sandbox", "call_timeout_ms = -1", "on_crash = reboot",
                                "max_restarts = lots"}) {
    ProcessResult r = run("how = segv\n" + bad);
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_THAT(r.err, HasSubstr("[hook.boom] " + bad.substr(0, bad.find(' ')))) << bad;
  }
}

}  // namespace
}  // namespace hookhost::testing
