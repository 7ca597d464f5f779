// Plugins that import process-wide calls, through the hookhost program: 'plugins describe' names
// the calls, and [run] untrusted = process runs such a plugin's hooks sandboxed unless their
// isolation is set. Real program, real plugins (the fault corpus), real runner processes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <elf.h>

#include <hookhost/version.h>
#include <cstddef>
#include <string>

#include "hookhost/host/config.hpp"
#include "plugin_files.hpp"
#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kUntrustedLine =
    "hook 'bad' (plugin 'faulty') imports _exit, exit, sigaction, signal: running it with isolation = "
    "process because [run] untrusted = process";

class UntrustedCli : public ::testing::Test {
 protected:
  void SetUp() override {
    plugins_ = dir_ / "plugins";
    fs::create_directories(plugins_);
    copy_plugin(fixture_plugin("faulty"), plugins_);
  }
  // linreg for 1 epoch (4 steps): hook 'bad' (faulty) calls exit(3) in after_run at global step
  // 1, hook 'trace' (lifecycle_trace, which imports none of the calls) records every call.
  ProcessResult run(const std::string& run_keys, const std::string& bad_keys = {}) {
    write_file(dir_ / "job.ini",
               "[run]\nrun_dir = run\n" + run_keys +
                   "\n[workload]\nname = linreg\nepochs = 1\n\n[hook.bad]\nplugin = faulty\n"
                   "behaviour = exit3\ncallback = after_run\nat_step = 1\non_crash = disable\n" +
                   bad_keys + "\n[hook.trace]\nplugin = lifecycle_trace\norder = 1\n");
    return run_hookhost({"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir",
                         plugins_.string(), "--fresh"},
                        dir_.path());
  }
  long after_runs_traced() const {
    return count_occurrences(read_file(dir_ / "run" / "trace.jsonl"), "\"after_run\"");
  }

  TempDir dir_;
  fs::path plugins_;
};

TEST_F(UntrustedCli, DescribeNamesTheProcessWideCallsAPluginImports) {
  ProcessResult faulty = run_hookhost(
      {"plugins", "describe", "faulty", "--plugin-dir", plugins_.string()}, dir_.path());
  EXPECT_EQ(faulty.exit_code, 0) << faulty.err;
  EXPECT_THAT(
      faulty.out,
      HasSubstr("  ABI: " + std::to_string(HH_ABI_MAJOR) + "." + std::to_string(HH_ABI_MINOR) +
                "\n  process-wide calls: _exit, exit, sigaction, signal (run it with "
                "isolation = process to contain them)\n\nParameters:\n"));
  ProcessResult clean = run_hookhost({"plugins", "describe", "stop_at_step"}, dir_.path());
  EXPECT_EQ(clean.exit_code, 0) << clean.err;
  EXPECT_THAT(clean.out, HasSubstr("\n  process-wide calls: none\n"));
}

TEST_F(UntrustedCli, DescribeSaysWhenTheImportsCouldNotBeRead) {
  // Without section headers the plugin still loads, but its .dynsym section cannot be found.
  const fs::path file = plugins_ / "faulty.so";
  patch_file(file, offsetof(Elf64_Ehdr, e_shoff), Elf64_Off{0});
  patch_file(file, offsetof(Elf64_Ehdr, e_shnum), Elf64_Half{0});
  patch_file(file, offsetof(Elf64_Ehdr, e_shstrndx), Elf64_Half{0});
  ProcessResult r = run_hookhost(
      {"plugins", "describe", "faulty", "--plugin-dir", plugins_.string()}, dir_.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\n  process-wide calls: could not be read"));
  EXPECT_THAT(r.out, Not(HasSubstr("process-wide calls: none")));

  // And [run] untrusted = process treats "unknown" as suspect: the hook is sandboxed.
  ProcessResult job = run("untrusted = process\n");
  EXPECT_EQ(job.exit_code, 0) << job.err;
  EXPECT_THAT(job.err, HasSubstr("hook 'bad' (plugin 'faulty') has imports that could not be "
                                 "read: running it with isolation = process because [run] "
                                 "untrusted = process"));
  EXPECT_THAT(job.err, HasSubstr("exited with status 3"));
}

TEST_F(UntrustedCli, UntrustedProcessSandboxesAHookWhosePluginImportsExit) {
  ProcessResult r = run("untrusted = process\n");
  // exit(3) cost the hook only: the job completed and the other hook got every call.
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("job completed"));
  EXPECT_EQ(count_occurrences(r.err, kUntrustedLine), 1) << r.err;
  EXPECT_THAT(r.err,
              AllOf(HasSubstr("[info] " + kUntrustedLine), HasSubstr("[hook.bad] plugin = faulty"),
                    HasSubstr("exited with status 3"),
                    HasSubstr("[on_crash=disable: the hook is disabled")));
  EXPECT_THAT(r.err, HasSubstr("isolation = process, on_crash = disable"));
  // The clean plugin's hook stays in process, with no line about it.
  EXPECT_THAT(r.err, HasSubstr("[hook.trace] plugin = lifecycle_trace"));
  EXPECT_THAT(r.err, Not(HasSubstr("hook 'trace' (plugin 'lifecycle_trace') imports")));
  EXPECT_EQ(count_occurrences(r.err, "isolation = in_process"), 1) << r.err;
  EXPECT_EQ(after_runs_traced(), 4);
}

TEST_F(UntrustedCli, AHookNamedAfterItsPluginIsJudgedByThatPluginsImports) {
  // No plugin key: the section's name is the plugin id whose imports the job must read.
  write_file(dir_ / "job.ini",
             "[run]\nrun_dir = run\nuntrusted = process\n\n[workload]\nname = linreg\n"
             "epochs = 1\n\n[hook.faulty]\nbehaviour = exit3\ncallback = after_run\nat_step = 1\n"
             "on_crash = disable\n\n[hook.lifecycle_trace]\norder = 1\n");
  ProcessResult r = run_hookhost({"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir",
                                  plugins_.string(), "--fresh"},
                                 dir_.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("hook 'faulty' (plugin 'faulty') imports _exit, exit, sigaction, "
                               "signal: running it with isolation = process because [run] "
                               "untrusted = process"));
  EXPECT_THAT(r.err, HasSubstr("exited with status 3"));
  // The clean plugin's imports were read too, as none: it stays in process.
  EXPECT_THAT(r.err, Not(HasSubstr("hook 'lifecycle_trace' (plugin 'lifecycle_trace')")));
  EXPECT_EQ(after_runs_traced(), 4);
}

TEST_F(UntrustedCli, AnIsolationSetInTheHookOrInRunWins) {
  // The same exit(3), in process: it ends the whole job, and hookhost names the hook.
  for (const auto& [run_keys, bad_keys] : std::vector<std::pair<std::string, std::string>>{
           {"untrusted = process\n", "isolation = in_process\n"},
           {"untrusted = process\nisolation = in_process\n", ""},
           {"", ""}}) {
    SCOPED_TRACE(run_keys + bad_keys);
    ProcessResult r = run(run_keys, bad_keys);
    EXPECT_EQ(r.exit_code, 70) << r.err;
    EXPECT_THAT(r.err, HasSubstr("hookhost: exit() was called by "));
    EXPECT_THAT(r.err, Not(HasSubstr("because [run] untrusted")));
    EXPECT_THAT(r.out, Not(HasSubstr("job completed")));
  }
  // An explicit isolation = process needs no word from untrusted either.
  ProcessResult sandboxed = run("untrusted = process\n", "isolation = process\n");
  EXPECT_EQ(sandboxed.exit_code, 0) << sandboxed.err;
  EXPECT_THAT(sandboxed.err, Not(HasSubstr("because [run] untrusted")));
  EXPECT_THAT(sandboxed.err, HasSubstr("exited with status 3"));
}

TEST_F(UntrustedCli, AnInvalidValueIsAConfigurationErrorNamingTheLineAndKey) {
  ProcessResult r = run("untrusted = maybe\n");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("job.ini:3: [run] untrusted: expected in_process or process; got "
                               "'maybe'"));
  EXPECT_THAT(r.err, HasSubstr("Nothing was run."));
  EXPECT_FALSE(fs::exists(dir_ / "run" / "trace.jsonl"));

  ProcessResult set = run_hookhost({"run", "--set", "run.untrusted=yes"}, dir_.path());
  EXPECT_EQ(set.exit_code, 2) << set.err;
  EXPECT_THAT(set.err, HasSubstr("--set run.untrusted=yes: [run] untrusted: expected in_process or "
                                 "process; got 'yes'"));
}

TEST(UntrustedConfig, DefaultsToInProcessAndReadsBothValues) {
  EXPECT_EQ(load_job_config(std::nullopt, {}).untrusted, Isolation::in_process);
  EXPECT_EQ(load_job_config(std::nullopt, {"run.untrusted=process"}).untrusted, Isolation::process);
  EXPECT_EQ(load_job_config(std::nullopt, {"run.untrusted=in_process"}).untrusted,
            Isolation::in_process);
  // It sets no isolation of its own: an explicit one must stay distinguishable.
  EXPECT_FALSE(load_job_config(std::nullopt, {"run.untrusted=process"}).isolation.isolation);
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
