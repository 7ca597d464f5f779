// isolation = process through the hookhost program: a sandboxed hook that crashes, exits or hangs
// costs that hook only, on_crash decides what follows, and the other hooks get every call. Also
// the in-process watchdog. Real program, real plugins, real runner processes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "plugins/trust.hpp"
#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

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
  // The trace hook is sandboxed, so confined: it writes in its own run folder.
  std::string trace() const { return read_file(dir_ / "run" / "hooks" / "trace" / "trace.jsonl"); }
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

// Pinned: every restart checks the pin on the bytes it opens.
TEST_F(IsolationCli, RestartBringsTheHookBackUntilItsRestartsAreUsedUp) {
  const std::string pin = sha256_of_file(plugins_ / "crasher.so");
  ProcessResult r =
      run("how = segv\nin = after_run\nat_step = 2\nmax_restarts = 2\nsha256 = " + pin);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count(r.err, "on_crash=restart: restarting it \\([12] of 2\\)"), 2);
  EXPECT_EQ(count(r.err, "hook 'boom' restarted with its last saved state"), 2);
  EXPECT_THAT(r.err, HasSubstr("2 restarts used up (max_restarts); the hook is disabled"));
  EXPECT_EQ(trace_calls("after_run"), 8);
}

TEST_F(IsolationCli, APinTheFileDoesNotMatchIsRefusedBeforeAnyRunnerStarts) {
  const std::string wrong(64, '0');
  ProcessResult r = run("how = segv\nin = after_run\nat_step = 2\nsha256 = " + wrong);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, AllOf(HasSubstr("[hook.boom] sha256"),
                           HasSubstr("has SHA-256 " + sha256_of_file(plugins_ / "crasher.so")),
                           HasSubstr("the configuration pins " + wrong)));
  EXPECT_FALSE(fs::exists(dir_ / "run" / "trace.jsonl"));
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

// No key set: the sandboxed default limit (60 s) still ends a call that would never return.
TEST_F(IsolationCli, AHangIsContainedWithNoTimeoutSet) {
  write_file(dir_ / "job.ini",
             "[run]\nrun_dir = run\n\n[workload]\nname = linreg\nepochs = 1\n\n[hook.slow]\n"
             "plugin = scripted\nisolation = process\non_crash = disable\n"
             "block_in_before_secs = 3600\ntrace = " +
                 (dir_ / "slow.txt").string() + "\n");
  ProcessResult r = run_hookhost(
      {"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir", plugins_.string()},
      dir_.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("[hook.slow] plugin = scripted"));
  EXPECT_THAT(r.err, HasSubstr("call_timeout_ms = 60000"));
  EXPECT_THAT(r.err, AllOf(HasSubstr("hook 'slow' (plugin 'scripted'"),
                           HasSubstr("failed in before_run at global step 0"),
                           HasSubstr("did not answer within call_timeout_ms = 60000")));
  EXPECT_THAT(r.err, Not(HasSubstr("hangs the whole job")));
  EXPECT_THAT(r.out, HasSubstr("job completed"));
}

TEST_F(IsolationCli, NoTimeoutForASandboxedHookIsAllowedWithAWarning) {
  for (const std::string where : {"hook", "run"}) {
    SCOPED_TRACE(where);
    const std::string zero = "call_timeout_ms = 0\n";
    write_file(dir_ / "job.ini", "[run]\nrun_dir = run\n" + (where == "run" ? zero : "") +
                                     "\n[workload]\nname = linreg\nepochs = 1\n\n[hook.calm]\n"
                                     "plugin = scripted\nisolation = process\ntrace = " +
                                     (dir_ / "calm.txt").string() + "\n" +
                                     (where == "hook" ? zero : ""));
    ProcessResult r = run_hookhost({"run", "--fresh", "--config", (dir_ / "job.ini").string(),
                                    "--plugin-dir", plugins_.string()},
                                   dir_.path());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, HasSubstr("hook 'calm' (plugin 'scripted') runs with isolation = process "
                                 "and call_timeout_ms = 0: a call that hangs there hangs the "
                                 "whole job"));
    EXPECT_THAT(r.out, HasSubstr("job completed"));
  }
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

// An in-process observer's call_timeout_ms is not watched: its calls are off the step
// (observers.md). The same slow after_run on the step is named.
TEST_F(IsolationCli, AnInProcessObserversCallTimeoutIsNotWatched) {
  for (const bool observer : {true, false}) {
    SCOPED_TRACE(observer ? "observer" : "on the step");
    write_file(dir_ / "job.ini",
               "[run]\nrun_dir = run\n\n[workload]\nname = linreg\nepochs = 1\n\n[hook.slow]\n"
               "plugin = scripted\ncall_timeout_ms = 20\nafter_run_sleep_ms = 150\nfetch = loss\n" +
                   std::string(observer ? "mode = observe\n" : "") +
                   "trace = " + (dir_ / "slow.txt").string() + "\n");
    ProcessResult r = run_hookhost({"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir",
                                    plugins_.string(), "--fresh"},
                                   dir_.path());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(count(read_file(dir_ / "slow.txt"), "slow after_run gs="), 4);
    if (observer) {
      EXPECT_THAT(r.err, Not(HasSubstr("over its call_timeout_ms")));
    } else {
      EXPECT_THAT(r.err, HasSubstr("has been running in after_run at global step 0 for "));
    }
    fs::remove(dir_ / "slow.txt");
  }
}

// The runner is looked for where HOOKHOST_RUNNER names it first, then next to the program
// (isolation.md): a wrapper it names runs every runner; a name that is no program falls back.
TEST_F(IsolationCli, HookhostRunnerNamesTheRunnerFirstAndAMissingOneFallsBackBesideTheProgram) {
  const fs::path marker = dir_ / "wrapper-ran";
  const fs::path wrapper = dir_ / "runner-wrapper.sh";
  write_file(wrapper, "#!/bin/sh\necho ran >> '" + marker.string() + "'\nexec '" +
                          (hookhost_binary().parent_path() / "hookhost-runner").string() +
                          "' \"$@\"\n");
  fs::permissions(wrapper, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
  ProcessResult r = run("how = none", {"--fresh"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(marker));
  r = run_hookhost({"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir",
                    plugins_.string(), "--fresh"},
                   dir_.path(), {"HOOKHOST_RUNNER=" + wrapper.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count(read_file(marker), "ran"), 2);  // one runner per sandboxed hook
  EXPECT_EQ(trace_calls("end"), 1);
  r = run_hookhost({"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir",
                    plugins_.string(), "--fresh"},
                   dir_.path(), {"HOOKHOST_RUNNER=" + (dir_ / "no-such-runner").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(trace_calls("end"), 1);
  EXPECT_EQ(count(read_file(marker), "ran"), 2);  // not the wrapper again
}

TEST_F(IsolationCli, IsolationKeysAreValidated) {
  for (const std::string bad : {"isolation = sandbox", "call_timeout_ms = -1", "on_crash = reboot",
                                "max_restarts = lots"}) {
    ProcessResult r = run("how = segv\n" + bad);
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_THAT(r.err, HasSubstr("[hook.boom] " + bad.substr(0, bad.find(' ')))) << bad;
  }
}

// ---- isolation groups -----------------------------------------------------------------------

TEST_F(IsolationCli, HooksOfOneIsolationGroupShareARunnerAndLoseItTogether) {
  // boom crashes once (then is disabled); trace, in the same runner, is lost with it and restarts
  // into a runner of its own group.
  ProcessResult r =
      run("how = segv\nin = after_run\nat_step = 2\non_crash = disable\n"
          "isolation_group = shared",
          {"--set", "hook.trace.isolation_group=shared", "--set", "run.log_level=debug"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("job completed"));
  EXPECT_THAT(r.err, HasSubstr("isolation_group = shared"));
  // One runner for both, then one more for the restarted trace hook: never one per hook.
  EXPECT_EQ(count(r.err, "started the runner process of isolation group 'shared'"), 2) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.err, m,
      std::regex(R"(hook 'boom' .* failed in after_run at global step 1: the runner process of )"
                 R"(isolation group 'shared' \(pid (\d+)\) was killed by signal 11)")))
      << r.err;
  const std::string shared_pid = m[1];
  EXPECT_THAT(r.err, HasSubstr("[on_crash=disable: the hook is disabled"));
  // The other member names the runner it lost and the hook that was running there.
  EXPECT_THAT(r.err, AllOf(HasSubstr("hook 'trace' (plugin 'lifecycle_trace'"),
                           HasSubstr("the runner process of isolation group 'shared' (pid " +
                                     shared_pid + ") was killed by signal 11"),
                           HasSubstr("while hook 'boom' was running")));
  EXPECT_THAT(r.err, HasSubstr("hook 'trace' restarted with its last saved state"));
  EXPECT_EQ(trace_calls("end"), 1);
}

TEST_F(IsolationCli, IsolationGroupMistakesAreConfigErrors) {
  struct Case {
    std::string boom;
    std::vector<std::string> set;
    std::string said;
    std::string where;  // the file, or the --set argument
  };
  const std::vector<Case> cases = {
      {"isolation_group = g\nisolation = in_process",
       {},
       "[hook.boom] isolation_group",
       "job.ini:"},
      {"isolation_group = two words", {}, "expected a group name", "job.ini:"},
      {"isolation_group = g\nmemory_limit_mb = 100",
       {"--set", "hook.trace.isolation_group=g", "--set", "hook.trace.memory_limit_mb=200"},
       "share isolation_group 'g' but ask for different memory_limit_mb (100 and 200)",
       "--set hook.trace.memory_limit_mb=200: [hook.trace] memory_limit_mb"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.boom);
    ProcessResult r = run("how = segv\n" + c.boom, c.set);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.said));
    EXPECT_THAT(r.err, HasSubstr(c.where));
  }
}

// ---- checkpoints survive a sandboxed crash --------------------------------------------------

TEST_F(IsolationCli, ASandboxedCrashThatFailsTheJobLeavesCheckpointsThatResume) {
  // linreg, 4 steps an epoch; a checkpoint every 5 steps; boom crashes at global step 12 and
  // on_crash = fail ends the job there.
  write_file(dir_ / "job.ini",
             "[run]\nrun_dir = run\n\n[workload]\nname = linreg\nepochs = 10\n\n"
             "[hook.boom]\nplugin = crasher\nisolation = process\nhow = segv\nin = after_run\n"
             "at_step = 12\non_crash = fail\n\n"
             "[hook.history]\nplugin = history_saver\nevery_n_steps = 1\n\n"
             "[hook.checkpoints]\nplugin = checkpoint_saver\nsave_steps = 5\norder = 100\n");
  const std::vector<std::string> job{"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir",
                                     plugins_.string()};
  ProcessResult failed = run_hookhost(job, dir_.path());
  EXPECT_EQ(failed.exit_code, 1) << failed.err;
  EXPECT_THAT(failed.out, HasSubstr("job failed"));
  EXPECT_THAT(failed.err, HasSubstr("was killed by signal 11"));
  const fs::path checkpoints = dir_ / "run" / "checkpoints";
  std::vector<long> steps;
  for (const auto& entry : fs::directory_iterator(checkpoints)) {
    const std::string name = entry.path().filename().string();
    ASSERT_EQ(name.find(".tmp"), std::string::npos) << "a leftover temporary: " << name;
    if (name.rfind("model.ckpt-", 0) == 0) steps.push_back(std::stol(name.substr(11)));
  }
  std::sort(steps.begin(), steps.end());
  ASSERT_FALSE(steps.empty());
  EXPECT_LE(steps.back(), 12);  // nothing from the failed step on

  // The same job without the crashing hook resumes from the newest one and completes.
  std::vector<std::string> rerun = job;
  rerun.insert(rerun.end(), {"--set", "hook.boom.enabled=false"});
  ProcessResult resumed = run_hookhost(rerun, dir_.path());
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_THAT(resumed.err,
              HasSubstr("resuming from " +
                        (checkpoints / ("model.ckpt-" + std::to_string(steps.back()))).string()));
  EXPECT_THAT(resumed.out, HasSubstr("job completed"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
