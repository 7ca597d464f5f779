// In-process hooks that take the whole process down (no status can contain them) get one last
// line naming the instance, plugin file, callback and step, and the exit status never says
// success. The real program, the crasher fixture, real processes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <csignal>

#include "process.hpp"
#include "support/sanitizer.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

struct Case {
  const char* how;
  const char* in;
  int exit_code;        // as ProcessResult reports it: 128+N for signal N
  const char* opening;  // how the blame line starts
};

bool is_step_call(const std::string& callback) {
  return callback == "before_run" || callback == "after_run";
}

// A job of linreg and one crasher hook 'boom' (acting from live global step 2 in a step call).
void write_crasher_job(const fs::path& ini, const std::string& how, const std::string& in,
                       const std::string& extra = "") {
  write_file(ini,
             "[run]\nrun_dir = run\n\n[workload]\nname = linreg\nepochs = 2\n\n"
             "[hook.boom]\nplugin = crasher\nhow = " +
                 how + "\nin = " + in + "\nat_step = " + (is_step_call(in) ? "2" : "0") + "\n" +
                 extra);
}

// The N of the first "PREFIX<N>" in `text`, or -1.
int64_t step_after(const std::string& text, const std::string& prefix) {
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return -1;
  return std::stoll(text.substr(at + prefix.size()));
}

class CrashBlame : public ::testing::TestWithParam<Case> {};

TEST_P(CrashBlame, TheLastLineNamesTheHookCallAndTheStatusIsNotSuccess) {
  const Case& c = GetParam();
  TempDir dir;
  const fs::path plugins = dir / "plugins";
  fs::create_directories(plugins);
  const fs::path file = copy_plugin(fixture_plugin("crasher"), plugins);
  write_crasher_job(dir / "job.ini", c.how, c.in);
  // The step the call concerns, as an error line of that call says it: after_run at live step 2
  // ran for the step whose context said 1.
  const std::string step = std::string(c.in) == "after_run"    ? "1"
                           : std::string(c.in) == "before_run" ? "2"
                                                               : "";
  ProcessResult r = run_hookhost(
      {"run", "--config", (dir / "job.ini").string(), "--plugin-dir", plugins.string()},
      dir.path());
#if defined(HOOKHOST_ASAN)
  // AddressSanitizer reports a fault itself (the blame line comes first) and exits with its own
  // status; it leaves SIGABRT alone.
  const bool sanitizer_reports = c.exit_code > 128 && c.exit_code != 128 + SIGABRT;
#else
  const bool sanitizer_reports = false;
#endif
  if (!sanitizer_reports) {
    EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
  }
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, AllOf(HasSubstr(c.opening),
                           HasSubstr("hook 'boom' (plugin 'crasher', " + file.string() + ") in " +
                                     c.in + " at global step " + step),
                           HasSubstr("isolation = process")))
      << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    InProcess, CrashBlame,
    ::testing::Values(
        Case{"segv", "after_run", 128 + SIGSEGV, "hookhost: SIGSEGV (signal 11) while "},
        Case{"segv", "before_run", 128 + SIGSEGV, "hookhost: SIGSEGV (signal 11) while "},
        Case{"abort", "end", 128 + SIGABRT, "hookhost: SIGABRT (signal 6) while "},
        Case{"exit", "after_run", 70, "hookhost: exit() was called by "},
        Case{"exit", "begin", 70, "hookhost: exit() was called by "},
        Case{"_exit0", "after_run", 70, "hookhost: _exit() with status 0 was called by "},
        Case{"_exit0", "after_create_session", 70,
             "hookhost: _exit() with status 0 was called by "},
        Case{"thread_segv", "after_run", 128 + SIGSEGV, "hookhost: SIGSEGV (signal 11) while "},
        // create() and destroy() run outside the lifecycle calls, and are blamed all the same.
        Case{"segv", "create", 128 + SIGSEGV, "hookhost: SIGSEGV (signal 11) while "},
        Case{"exit", "create", 70, "hookhost: exit() was called by "},
        Case{"abort", "destroy", 128 + SIGABRT, "hookhost: SIGABRT (signal 6) while "},
        Case{"exit", "destroy", 70, "hookhost: exit() was called by "}),
    [](const auto& info) {
      std::string name = std::string(info.param.how) + "_in_" + info.param.in;
      for (char& ch : name)
        if (ch == '_') ch = 'X';
      return name;
    });

// The blame line of an in-process crash and the error line of the same crash in a hook's own
// process name the same global step.
TEST(CrashBlameStep, InProcessBlameAndSandboxedErrorLineNameTheSameStep) {
  for (const char* in : {"before_run", "after_run"}) {
    SCOPED_TRACE(in);
    TempDir dir;
    const fs::path plugins = dir / "plugins";
    fs::create_directories(plugins);
    copy_plugin(fixture_plugin("crasher"), plugins);
    write_crasher_job(dir / "in_process.ini", "segv", in);
    write_crasher_job(dir / "sandboxed.ini", "segv", in, "isolation = process\non_crash = fail\n");
    const ProcessResult blamed = run_hookhost(
        {"run", "--config", (dir / "in_process.ini").string(), "--plugin-dir", plugins.string()},
        dir.path());
    const ProcessResult failed = run_hookhost(
        {"run", "--config", (dir / "sandboxed.ini").string(), "--plugin-dir", plugins.string()},
        dir.path());
    const std::string call = std::string(") in ") + in + " at global step ";
    const std::string error = std::string(") failed in ") + in + " at global step ";
    const int64_t blamed_step = step_after(blamed.err, call);
    const int64_t error_step = step_after(failed.err, error);
    ASSERT_GE(blamed_step, 0) << blamed.err;
    ASSERT_GE(error_step, 0) << failed.err;
    EXPECT_EQ(blamed_step, error_step) << blamed.err << "\n---\n" << failed.err;
  }
}

// An in-process observer's calls run on its worker thread: a fault there is blamed on the
// observer's call, with the step it concerns, as on the step.
TEST(CrashBlameObserver, AFaultInAnInProcessObserversCallIsBlamedOnThatCall) {
  TempDir dir;
  const fs::path plugins = dir / "plugins";
  fs::create_directories(plugins);
  const fs::path file = copy_plugin(fixture_plugin("crasher"), plugins);
  for (const char* how : {"segv", "exit"}) {
    SCOPED_TRACE(how);
    write_crasher_job(dir / "job.ini", how, "after_run", "mode = observe\n");
    const ProcessResult r = run_hookhost(
        {"run", "--config", (dir / "job.ini").string(), "--plugin-dir", plugins.string()},
        dir.path());
    EXPECT_NE(r.exit_code, 0);
    EXPECT_THAT(r.err, HasSubstr("hook 'boom' (plugin 'crasher', " + file.string() +
                                 ") in after_run at global step 1;"))
        << r.err;
  }
}

// A stack overflow is a fault like any other on the thread the hooks are called on (the program's
// main thread): the handler runs on the alternate signal stack installed there, and the line names
// the hook call. On any other thread (one the plugin started, an in-process observer's worker)
// there is no alternate stack: the process dies of SIGSEGV without the line (docs/limits.md).
// AddressSanitizer gives every thread an alternate stack of its own and reports an overflow
// itself, so these are run without it.
class StackOverflow : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(HOOKHOST_ASAN)
    GTEST_SKIP() << "AddressSanitizer installs an alternate signal stack on every thread";
#endif
    // The crasher's recursion overflows a main-thread stack of up to 64 MiB (`ulimit -s`).
    struct rlimit stack {};
    if (::getrlimit(RLIMIT_STACK, &stack) == 0 &&
        (stack.rlim_cur == RLIM_INFINITY || stack.rlim_cur > (64u << 20)))
      GTEST_SKIP() << "the stack limit (ulimit -s) is over 64 MiB";
    fs::create_directories(dir_ / "plugins");
    file_ = copy_plugin(fixture_plugin("crasher"), dir_ / "plugins");
  }
  ProcessResult run(const std::string& how, const std::string& extra = "") {
    write_crasher_job(dir_ / "job.ini", how, "after_run", extra);
    return run_hookhost({"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir",
                         (dir_ / "plugins").string()},
                        dir_.path());
  }
  TempDir dir_;
  fs::path file_;
};

TEST_F(StackOverflow, OnTheThreadTheHookIsCalledOnIsBlamedOnTheHookCall) {
  const ProcessResult r = run("overflow");
  EXPECT_EQ(r.exit_code, 128 + SIGSEGV) << r.err;
  EXPECT_THAT(r.err,
              HasSubstr("hookhost: SIGSEGV (signal 11) while hook 'boom' (plugin 'crasher', " +
                        file_.string() + ") in after_run at global step 1;"))
      << r.err;
}

TEST_F(StackOverflow, OnAThreadThePluginStartedKillsTheProcessWithoutTheLine) {
  const ProcessResult r = run("thread_overflow");
  EXPECT_EQ(r.exit_code, 128 + SIGSEGV) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("hookhost: SIGSEGV"))) << r.err;
  // Not a blame that is missing altogether: a plain fault on such a thread is named.
  const ProcessResult fault = run("thread_segv");
  EXPECT_THAT(fault.err, HasSubstr("hookhost: SIGSEGV (signal 11) while hook 'boom'")) << fault.err;
}

TEST_F(StackOverflow, InAnInProcessObserversCallKillsTheProcessWithoutTheLine) {
  const ProcessResult r = run("overflow", "mode = observe\n");
  EXPECT_EQ(r.exit_code, 128 + SIGSEGV) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("hookhost: SIGSEGV"))) << r.err;
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
