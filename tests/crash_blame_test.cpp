// In-process hooks that take the whole process down (no status can contain them) get one last
// line naming the instance, plugin file, callback and step, and the exit status never says
// success. The real program, the crasher fixture, real processes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>

#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

struct Case {
  const char* how;
  const char* in;
  int exit_code;        // as ProcessResult reports it: 128+N for signal N
  const char* opening;  // how the blame line starts
};

class CrashBlame : public ::testing::TestWithParam<Case> {};

TEST_P(CrashBlame, TheLastLineNamesTheHookCallAndTheStatusIsNotSuccess) {
  const Case& c = GetParam();
  TempDir dir;
  const fs::path plugins = dir / "plugins";
  fs::create_directories(plugins);
  const fs::path file = copy_plugin(fixture_plugin("crasher"), plugins);
  const bool at_step = std::string(c.in) == "before_run" || std::string(c.in) == "after_run";
  write_file(dir / "job.ini", std::string("[run]\nrun_dir = run\n\n[workload]\nname = linreg\n"
                                          "epochs = 2\n\n[hook.boom]\nplugin = crasher\nhow = ") +
                                  c.how + "\nin = " + c.in +
                                  "\nat_step = " + (at_step ? "2" : "0") + "\n");
  ProcessResult r = run_hookhost(
      {"run", "--config", (dir / "job.ini").string(), "--plugin-dir", plugins.string()},
      dir.path());
#if defined(__SANITIZE_ADDRESS__)
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
                                     c.in + " at global step " + (at_step ? "2" : "")),
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
        Case{"thread_segv", "after_run", 128 + SIGSEGV, "hookhost: SIGSEGV (signal 11) while "}),
    [](const auto& info) {
      std::string name = std::string(info.param.how) + "_in_" + info.param.in;
      for (char& ch : name)
        if (ch == '_') ch = 'X';
      return name;
    });

}  // namespace
}  // namespace hookhost::testing
