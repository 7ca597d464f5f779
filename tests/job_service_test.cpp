// hh.job/1 through a real C plugin (tests/fixtures/job_dir): the folder of the job's
// configuration file, from the runtime's options, from `hookhost run` started elsewhere, in a
// sandboxed runner, and the working directory when there is no configuration file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hookhost/ext/job.h>
#include <hookhost/testing.hpp>

#include "plugin_harness.hpp"
#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The table is plain C: the same layout seen from C++.
static_assert(HH_JOB_SERVICE_SIZE == 16);
static_assert(offsetof(hh_job_service, config_dir) == 8);

std::string config_line(const fs::path& dir) {
  return "config_dir=" + dir.string();
}

TEST(JobService, GivesTheRuntimesConfigDirMadeAbsolute) {
  PluginHarness h({}, {"job_dir"});
  const fs::path conf = h.root() / "conf";
  fs::create_directories(conf);
  write_file(conf / "input.txt", "x");
  h.options.config_dir = conf;
  h.add("j", "job_dir", {{"file", "input.txt"}});
  EXPECT_EQ(h.run().outcome, Outcome::completed) << h.log();
  EXPECT_THAT(info_lines(h.log(), "j"),
              ElementsAre(config_line(fs::canonical(conf)), "stable",
                          "file " + fs::canonical(conf).string() + "/input.txt found"));
}

TEST(JobService, ARelativeConfigDirIsTakenFromTheWorkingDirectory) {
  PluginHarness h({}, {"job_dir"});
  h.options.config_dir = "jobs/../jobs/nightly/";
  h.add("j", "job_dir");
  h.run();
  EXPECT_THAT(info_lines(h.log(), "j"),
              Contains(config_line(fs::current_path() / "jobs" / "nightly")));
}

TEST(JobService, WithoutAConfigDirItIsTheWorkingDirectory) {
  PluginHarness h({}, {"job_dir"});
  h.add("j", "job_dir", {{"file", "nowhere.txt"}});
  h.run();
  EXPECT_THAT(info_lines(h.log(), "j"),
              ElementsAre(config_line(fs::current_path()), "stable",
                          "file " + fs::current_path().string() + "/nowhere.txt missing"));
}

TEST(JobService, TheTestHarnessGivesTheWorkingDirectoryInProcessAndSandboxed) {
  for (const Isolation where : {Isolation::in_process, Isolation::process}) {
    HookTest t(fixture_plugin("job_dir"), "j");
    t.isolation(where).steps(1);
    const RunResult run = t.run();
    EXPECT_THAT(run.log_lines("info"), ElementsAre(config_line(fs::current_path()), "stable"))
        << run.log_text();
  }
}

// `hookhost run --config ../jobs/job.ini` from a sibling folder: relative paths of the config and
// of the plugin's own parameter are taken from the config's folder, in process and sandboxed.
class JobServiceCli : public ::testing::Test {
 protected:
  void SetUp() override {
    jobs_ = fs::canonical(dir_.path()) / "jobs";
    elsewhere_ = fs::canonical(dir_.path()) / "elsewhere";
    fs::create_directories(jobs_ / "plugins");
    fs::create_directories(jobs_ / "data");
    fs::create_directories(elsewhere_);
    copy_plugin(fixture_plugin("job_dir"), jobs_ / "plugins");
    write_file(jobs_ / "data" / "input.txt", "x");
    write_file(jobs_ / "job.ini",
               "[run]\nplugin_dir = plugins\nrun_dir = run\n\n[workload]\nname = linreg\n"
               "epochs = 1\n\n[hook.j]\nplugin = job_dir\nfile = data/input.txt\n");
  }

  TempDir dir_;
  fs::path jobs_, elsewhere_;
};

TEST_F(JobServiceCli, IsTheConfigFilesFolderWhateverTheWorkingDirectory) {
  for (const char* isolation : {"in_process", "process"}) {
    SCOPED_TRACE(isolation);
    const ProcessResult r = run_hookhost({"run", "--config", "../jobs/job.ini", "--set",
                                          std::string("hook.j.isolation=") + isolation},
                                         elsewhere_);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, HasSubstr("[j] [info] " + config_line(jobs_) + "\n"));
    EXPECT_THAT(r.err, HasSubstr("[j] [info] stable\n"));
    EXPECT_THAT(r.err, HasSubstr("[j] [info] file " + (jobs_ / "data" / "input.txt").string() +
                                 " found\n"));
    EXPECT_TRUE(fs::exists(jobs_ / "run")) << "the config's run_dir is relative to it too";
  }
}

TEST_F(JobServiceCli, WithoutAConfigFileIsTheWorkingDirectory) {
  const ProcessResult r =
      run_hookhost({"run", "--plugin-dir", (jobs_ / "plugins").string(), "--run-dir", "run",
                    "--set", "hook.j.plugin=job_dir", "--set", "hook.j.file=data/input.txt",
                    "--set", "workload.epochs=1"},
                   elsewhere_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("[j] [info] " + config_line(elsewhere_) + "\n"));
  EXPECT_THAT(r.err, HasSubstr("[j] [info] file " + (elsewhere_ / "data" / "input.txt").string() +
                               " missing\n"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
