// The hookhost program's run modes and how a run ends: `run --check` (validate, run nothing, write
// nothing), the summary's headline naming failed hooks, `run --strict`, signals that arrive while
// a hook call hangs or while end() runs, and the help texts. Real program, real plugins (built-in
// and fixtures), real files and processes in temporary folders.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "hookhost/host/job.hpp"
#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

bool is_empty_folder(const fs::path& dir) {
  return fs::is_directory(dir) && fs::directory_iterator(dir) == fs::directory_iterator();
}

class CliRunModes : public ::testing::Test {
 protected:
  void SetUp() override {
    plugins_ = dir_ / "plugins";
    fs::create_directories(plugins_);
    for (const char* fixture : {"scripted", "sleeper", "crasher"})
      copy_plugin(fixture_plugin(fixture), plugins_);
  }
  // A linreg job of `epochs` epochs (4 steps each) with `hooks` appended.
  fs::path config(const std::string& hooks, int epochs = 2,
                  const std::string& run_section = "run_dir = run\n") {
    const fs::path file = dir_ / "job.ini";
    write_file(file, "[run]\n" + run_section + "\n[workload]\nname = linreg\nepochs = " +
                         std::to_string(epochs) + "\n\n" + hooks);
    return file;
  }
  std::vector<std::string> run_args(const fs::path& file, std::vector<std::string> more = {}) {
    std::vector<std::string> args{"run", "--config", file.string(), "--plugin-dir",
                                  plugins_.string()};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  ProcessResult run(const fs::path& file, const std::vector<std::string>& more = {},
                    const std::vector<std::string>& env = {}) {
    return run_hookhost(run_args(file, more), dir_.path(), env);
  }
  std::string scripted(const std::string& name, const std::string& extra = "") {
    return "[hook." + name + "]\nplugin = scripted\ntrace = " + (dir_ / "trace.txt").string() +
           "\ntrace_create = true\n" + extra + "\n";
  }

  TempDir dir_;
  fs::path plugins_;
};

// ---- run --check ------------------------------------------------------------------------------

TEST_F(CliRunModes, CheckCreatesEveryHookSandboxedOnesTooAndRunsNoStepNorWritesAnything) {
  const fs::path run_dir = dir_ / "not-yet" / "run";
  const fs::path checkpoints = dir_ / "checkpoints-elsewhere";
  const fs::path tmp = dir_ / "tmp";
  fs::create_directories(tmp);
  const fs::path file = config(
      scripted("here") + scripted("boxed", "isolation = process") +
          "[hook.trace]\nplugin = lifecycle_trace\npath = trace.jsonl\n\n"
          "[hook.checkpoints]\nplugin = checkpoint_saver\nsave_steps = 1\n",
      2, "run_dir = " + run_dir.string() + "\ncheckpoint_dir = " + checkpoints.string() + "\n");
  ProcessResult r = run(file, {"--check"}, {"TMPDIR=" + tmp.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("hookhost: configuration OK: 4 hooks (here, boxed, trace, "
                               "checkpoints) created and destroyed; no step was run"));
  EXPECT_THAT(r.out, Not(HasSubstr("job completed")));
  // Both scripted hooks were created (the sandboxed one in its runner) and destroyed, and got
  // no lifecycle call.
  const std::string trace = read_file(dir_ / "trace.txt");
  EXPECT_THAT(trace, AllOf(HasSubstr("here create"), HasSubstr("boxed create"),
                           HasSubstr("here destroy"), HasSubstr("boxed destroy")));
  EXPECT_THAT(trace, AllOf(Not(HasSubstr("begin")), Not(HasSubstr("before_run"))));
  EXPECT_FALSE(fs::exists(dir_ / "not-yet")) << "the run directory was created";
  EXPECT_FALSE(fs::exists(checkpoints)) << "the checkpoint folder was created";
  EXPECT_TRUE(is_empty_folder(tmp)) << "the temporary folder for the hooks' outputs is left";
}

TEST_F(CliRunModes, CheckReportsAHookThatRefusesCreationWithStatus2AndWritesNothing) {
  const fs::path file = config(scripted("ok") + scripted("refuser",
                                                         "create_fail = true\n"
                                                         "isolation = process"));
  ProcessResult r = run(file, {"--check"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, AllOf(HasSubstr("job.ini:"), HasSubstr("[hook.refuser]"),
                           HasSubstr("create refused as configured")));
  EXPECT_THAT(r.out, Not(HasSubstr("configuration OK")));
  EXPECT_FALSE(fs::exists(dir_ / "run"));
}

TEST_F(CliRunModes, CheckNeitherTakesTheLockOfARunningJobNorTouchesItsCheckpoints) {
  const fs::path file = config(
      "[hook.checkpoints]\nplugin = checkpoint_saver\nsave_steps = 20\n"
      "[hook.history]\nplugin = history_saver\nevery_n_steps = 1\n",
      0);
  Process job(run_args(file), dir_.path());
  ASSERT_TRUE(wait_until([&] { return fs::exists(dir_ / "run" / "checkpoints" / "checkpoint"); }));
  const fs::path elsewhere = dir_ / "elsewhere";
  fs::create_directories(elsewhere);
  ProcessResult check = run_hookhost(run_args(file, {"--check", "--fresh"}), elsewhere);
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_THAT(check.out, HasSubstr("configuration OK: 2 hooks"));
  EXPECT_THAT(check.err, Not(HasSubstr("moved the previous run")));
  job.signal(SIGTERM);
  ProcessResult r = job.wait();
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
  for (const auto& entry : fs::directory_iterator(dir_.path()))
    EXPECT_EQ(entry.path().filename().string().find("run.old"), std::string::npos)
        << "--check --fresh moved the run aside: " << entry.path();
}

// ---- the summary's headline, --strict -----------------------------------------------------------

TEST_F(CliRunModes, TheHeadlineNamesADisabledHookAndStrictMakesItStatus1) {
  const fs::path file = config(scripted("flaky", "fail_in = before_run\nfail_at_iteration = 2"));
  ProcessResult plain = run(file);
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_THAT(plain.out, HasSubstr("hookhost: job completed; 1 hook disabled: 'flaky' (before_run "
                                   "failed: std::runtime_error: scripted failure in before_run) ("));
  fs::remove_all(dir_ / "run");
  ProcessResult strict = run(file, {"--strict"});
  EXPECT_EQ(strict.exit_code, 1) << strict.err;
  EXPECT_THAT(strict.err, HasSubstr("hookhost: --strict: exit status 1 because 1 hook disabled: "
                                    "'flaky' (before_run failed: std::runtime_error: scripted failure in before_run)"));
}

TEST_F(CliRunModes, StrictCountsAnErrorUnderContinueAndALostRunnerButNotACleanJob) {
  const fs::path continuing =
      config(scripted("noisy", "fail_in = after_run\nfail_at_iteration = 1\non_error = continue"));
  ProcessResult r = run(continuing, {"--strict"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.out, HasSubstr("job completed; hook 'noisy' failed 1 time (after_run failed: "));
  EXPECT_THAT(r.err, HasSubstr("--strict: exit status 1 because hook 'noisy' failed 1 time"));

  fs::remove_all(dir_ / "run");
  const fs::path crashing = config(
      "[hook.boom]\nplugin = crasher\nhow = segv\nin = after_run\nisolation = process\n"
      "on_crash = restart\nmax_restarts = 1\n");
  r = run(crashing);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  fs::remove_all(dir_ / "run");
  r = run(crashing, {"--strict"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--strict: exit status 1 because 1 hook disabled: 'boom'"));

  fs::remove_all(dir_ / "run");
  r = run(config(scripted("fine")), {"--strict"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("hookhost: job completed (")) << "no failure in the headline";
  EXPECT_THAT(r.err, Not(HasSubstr("--strict")));
}

TEST(HookFailuresText, NamesEveryDisabledHookThenEveryFailingOneAndNothingForACleanJob) {
  const auto report = [](const std::string& name, bool disabled, uint64_t failures,
                         const std::string& failure) {
    HookReport r;
    r.instance_name = name;
    r.disabled = disabled;
    r.failure = failure;
    r.callbacks["after_run"].failures = failures;
    return r;
  };
  EXPECT_EQ(hook_failures_text({report("clean", false, 0, "")}), "");
  EXPECT_EQ(hook_failures_text({report("a", true, 1, "begin failed: x"), report("ok", false, 0, ""),
                                report("b", true, 1, "end failed: y"),
                                report("c", false, 3, "after_run failed: z\nw")}),
            "2 hooks disabled: 'a' (begin failed: x), 'b' (end failed: y); hook 'c' failed 3 "
            "times (first: after_run failed: z\\nw)");
}

// ---- signals ------------------------------------------------------------------------------------

TEST_F(CliRunModes, TheFirstSignalNamesTheHookCallItWaitsForAndHowLongItHasRun) {
  const fs::path marker = dir_ / "sleeping";
  const fs::path file = config(
      "[hook.slow]\nplugin = sleeper\nsleep_in = before_run\nmarker = " + marker.string() + "\n");
  Process job(run_args(file), dir_.path());
  ASSERT_TRUE(wait_until([&] { return fs::exists(marker); }));
  job.signal(SIGTERM);
  const std::regex named(
      R"(SIGTERM: stopping after the current step; waiting for hook 'slow' \(plugin 'sleeper'\) in )"
      R"(before_run at global step 0, running for (\d+\.\d s|less than 0\.1 s) \(a second SIGTERM )"
      R"(exits at once\))");
  EXPECT_TRUE(wait_until([&] { return std::regex_search(read_file(dir_ / ".stderr"), named); }))
      << read_file(dir_ / ".stderr");
  job.signal(SIGTERM);
  ProcessResult r = job.wait();
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
}

TEST_F(CliRunModes, ASigtermThatArrivesDuringEndStillEndsWithStatus143) {
  const fs::path marker = dir_ / "ending";
  const fs::path file = config(
      "[hook.slow]\nplugin = sleeper\nsleep_in = end\nsecs = 3\nmarker = " + marker.string() +
      "\n" + scripted("after", "order = 1"));
  Process job(run_args(file), dir_.path());
  ASSERT_TRUE(wait_until([&] { return fs::exists(marker); }));
  job.signal(SIGTERM);
  ProcessResult r = job.wait();
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
  EXPECT_THAT(r.err, HasSubstr("waiting for hook 'slow' (plugin 'sleeper') in end"));
  EXPECT_THAT(r.out, AllOf(HasSubstr("job completed"),
                           HasSubstr("signal: SIGTERM received as the job was ending, so the exit "
                                     "status is 143")));
  // The hooks after the slow one still got their end().
  EXPECT_THAT(read_file(dir_ / "trace.txt"), HasSubstr("after end outcome=completed"));
}

// ---- help texts -------------------------------------------------------------------------------

TEST_F(CliRunModes, HelpListsEveryExitStatusAndEveryRunFlag) {
  ProcessResult help = run_hookhost({"--help"}, dir_.path());
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, AllOf(HasSubstr("\n  70 "), HasSubstr("134 SIGABRT"),
                              HasSubstr("139 SIGSEGV"), HasSubstr("run --check")));
  ProcessResult run_help = run_hookhost({"run", "--help"}, dir_.path());
  EXPECT_EQ(run_help.exit_code, 0);
  for (const char* flag : {"--config", "--plugin-dir", "--run-dir", "--set", "--fresh",
                           "--log-level", "--check", "--strict"})
    EXPECT_THAT(run_help.out, HasSubstr(flag)) << flag;
  EXPECT_THAT(run_help.out, AllOf(HasSubstr("[run] checkpoint_dir"),
                                  HasSubstr("a checkpoint_saver, if one is configured")));
  EXPECT_THAT(run_help.out, Not(HasSubstr("resumes from the newest valid checkpoint in "
                                          "<run_dir>/checkpoints")));
}

TEST_F(CliRunModes, DescribeListsEveryHostKeyAndAnExampleWithEveryParameter) {
  ProcessResult r = run_hookhost({"plugins", "describe", "history_saver"}, dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* key :
       {"plugin", "enabled", "order", "on_error", "isolation", "call_timeout_ms", "memory_limit_mb",
        "on_crash", "max_restarts", "isolation_group", "ranks", "sha256"})
    EXPECT_TRUE(std::regex_search(r.out, std::regex(std::string("\n  ") + key + " +\\S")))
        << key << "\n"
        << r.out;
  const std::string example = r.out.substr(r.out.find("Example:"));
  EXPECT_THAT(example, AllOf(HasSubstr("[hook.history_saver]"), HasSubstr("; every_n_steps = 10"),
                             HasSubstr("; flush_secs = 5")));
  // A required parameter is to be filled in, not commented out.
  r = run_hookhost({"plugins", "describe", "global_step_waiter"}, dir_.path());
  EXPECT_THAT(r.out, HasSubstr("\n  wait_until_step = ...\n"));
}

// ---- installed docs ---------------------------------------------------------------------------

TEST_F(CliRunModes, TheInstalledDemoWritesWhereItIsRunAndTheInstalledReadmeSaysWhatItIs) {
  const fs::path prefix = dir_ / "prefix";
  ProcessResult install =
      Process({"cmake", "--install", HOOKHOST_BINARY_DIR, "--prefix", prefix.string()}, dir_.path(),
              {}, "/usr/bin/env")
          .wait();
  ASSERT_EQ(install.exit_code, 0) << install.err;
  const fs::path docs = prefix / "share" / "doc" / "hookhost";
  EXPECT_EQ(read_file(docs / "README.md").rfind("> **You are reading the installed docs**", 0), 0u);
  for (const char* ini : {"demo.ini", "python/loss_hook.ini", "python/more_hooks.ini"}) {
    const std::string text = read_file(docs / "examples" / ini);
    EXPECT_THAT(text, HasSubstr("[run]")) << ini;
    EXPECT_FALSE(std::regex_search(text, std::regex("(^|\n)run_dir *="))) << ini;
  }
  const fs::path work = dir_ / "work";
  fs::create_directories(work);
  ProcessResult r = Process({"run", "--config", (docs / "examples" / "demo.ini").string(), "--set",
                             "hook.stop.last_step=5", "--log-level", "warn"},
                            work, {}, prefix / "bin" / "hookhost")
                        .wait();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("outputs: " + fs::canonical(work / "hookhost-run").string()));
  EXPECT_TRUE(fs::exists(work / "hookhost-run" / "checkpoints" / "model.ckpt-5"));
  EXPECT_FALSE(fs::exists(docs / "runs"));
  EXPECT_FALSE(fs::exists(prefix / "share" / "doc" / "runs"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
