// The job config file and --set overrides: what they produce, and the errors for every mistake,
// each naming the file, the line, the section and the key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hookhost/host/config.hpp>

#include "test_support.hpp"

namespace hookhost::testing {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

class ConfigTest : public ::testing::Test {
 protected:
  fs::path write(const std::string& text) {
    fs::path file = dir_ / "job.ini";
    write_file(file, text);
    return file;
  }
  std::string error_of(const std::string& text, const std::vector<std::string>& sets = {}) {
    try {
      load_job_config(write(text), sets);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "(no error)";
  }
  TempDir dir_;
};

TEST_F(ConfigTest, ReadsEverySection) {
  JobConfig c = load_job_config(write(R"(# a comment
[run]
plugin_dir = a
plugin_dir = b
run_dir = out
log_level = debug
on_error = stop

[workload]
name = linreg
epochs = 3

[hook.progress]
plugin = progress_bar
every_n_secs = 2
order = -5
on_error = fail

[hook.stop_at_step]
last_step = 10

[hook.off]
enabled = false
)"),
                                {});
  // Relative paths in the file are taken from the file's folder.
  EXPECT_THAT(c.plugin_dirs, ElementsAre(dir_ / "a", dir_ / "b"));
  EXPECT_EQ(c.run_dir, dir_ / "out");
  EXPECT_EQ(c.log_level, "debug");
  EXPECT_EQ(c.on_error, FailurePolicy::stop);
  EXPECT_EQ(c.workload, "linreg");
  EXPECT_THAT(c.workload_params, ElementsAre(Pair("epochs", "3")));
  ASSERT_EQ(c.hooks.size(), 3u);
  EXPECT_EQ(c.hooks[0].name, "progress");
  EXPECT_EQ(c.hooks[0].plugin, "progress_bar");
  EXPECT_EQ(c.hooks[0].order, -5);
  EXPECT_EQ(c.hooks[0].on_error, FailurePolicy::fail);
  EXPECT_THAT(c.hooks[0].params, ElementsAre(Pair("every_n_secs", "2")));
  EXPECT_EQ(c.hooks[1].plugin, "stop_at_step");  // plugin defaults to the instance name
  EXPECT_FALSE(c.hooks[1].on_error.has_value());
  EXPECT_FALSE(c.hooks[2].enabled);
  EXPECT_EQ(c.where(c.hooks[0], "every_n_secs"),
            (dir_ / "job.ini").string() + ":15: [hook.progress] every_n_secs: ");
}

TEST_F(ConfigTest, SetOverridesReplaceAndAdd) {
  JobConfig c = load_job_config(write("[hook.progress]\nplugin = progress_bar\nevery_n_secs = 2\n"),
                                {"hook.progress.every_n_secs=1", "run.log_level=warn",
                                 "hook.extra.plugin=stop_at_step", "workload.epochs=7"});
  EXPECT_THAT(c.hooks[0].params, ElementsAre(Pair("every_n_secs", "1")));
  EXPECT_EQ(c.log_level, "warn");
  ASSERT_EQ(c.hooks.size(), 2u);
  EXPECT_EQ(c.hooks[1].plugin, "stop_at_step");
  EXPECT_THAT(c.workload_params, ElementsAre(Pair("epochs", "7")));
  EXPECT_THAT(c.where(c.hooks[0], "every_n_secs"), HasSubstr("--set hook.progress.every_n_secs=1"));
}

TEST_F(ConfigTest, NoFileMeansDefaults) {
  JobConfig c = load_job_config(std::nullopt, {});
  EXPECT_EQ(c.workload, "linreg");
  EXPECT_TRUE(c.hooks.empty());
  EXPECT_EQ(c.on_error, FailurePolicy::disable);
}

TEST_F(ConfigTest, UnknownSectionNamesFileAndLine) {
  EXPECT_THAT(error_of("[run]\nrun_dir = x\n\n[hooks.typo]\nplugin = a\n"),
              AllOf(HasSubstr("job.ini:4"), HasSubstr("unknown section [hooks.typo]"),
                    HasSubstr("[run], [workload] and [hook.NAME]")));
}

TEST_F(ConfigTest, UnknownRunKeyListsTheValidOnes) {
  EXPECT_THAT(error_of("[run]\nrundir = x\n"),
              AllOf(HasSubstr("job.ini:2"), HasSubstr("[run] rundir"), HasSubstr("unknown key"),
                    HasSubstr("plugin_dir, run_dir, log_level, on_error")));
}

TEST_F(ConfigTest, BadValuesOfHostKeys) {
  EXPECT_THAT(
      error_of("[run]\non_error = explode\n"),
      AllOf(HasSubstr("job.ini:2"), HasSubstr("on_error"), HasSubstr("continue, disable, stop or fail")));
  EXPECT_THAT(error_of("[run]\nlog_level = loud\n"), HasSubstr("trace, debug, info"));
  EXPECT_THAT(error_of("[hook.a]\norder = first\n"),
              AllOf(HasSubstr("job.ini:2"), HasSubstr("[hook.a] order"), HasSubstr("integer")));
  EXPECT_THAT(error_of("[hook.a]\nenabled = perhaps\n"), HasSubstr("true or false"));
}

TEST_F(ConfigTest, DuplicateInstanceNameIsAnError) {
  EXPECT_THAT(error_of("[hook.a]\nplugin = x\n\n[hook.a]\nplugin = y\n"),
              AllOf(HasSubstr("job.ini:4"), HasSubstr("[hook.a] appears twice"),
                    HasSubstr("first at line 1")));
}

TEST_F(ConfigTest, SyntaxErrorsNameTheLine) {
  EXPECT_THAT(error_of("[run]\nthis is not a key\n"),
              AllOf(HasSubstr("job.ini:2"), HasSubstr("expected 'key = value'")));
  EXPECT_THAT(error_of("log_level = info\n"),
              AllOf(HasSubstr("job.ini:1"), HasSubstr("outside any section")));
  EXPECT_THAT(error_of("[run\n"), AllOf(HasSubstr("job.ini:1"), HasSubstr("malformed section")));
}

TEST_F(ConfigTest, RunKeyGivenTwice) {
  EXPECT_THAT(error_of("[run]\nrun_dir = a\nrun_dir = b\n"),
              AllOf(HasSubstr("job.ini:3: [run] run_dir"), HasSubstr("first at line 2")));
}

TEST_F(ConfigTest, QuotedValuesKeepHashAndSpaces) {
  JobConfig c = load_job_config(
      write("[hook.a]\nformat = \"  # {loss} \\\"q\\\" \\\\ \"\nlabel = a;b\n"), {});
  EXPECT_THAT(c.hooks[0].params,
              ElementsAre(Pair("format", "  # {loss} \"q\" \\ "), Pair("label", "a;b")));
}

TEST_F(ConfigTest, OverridesReplaceFileValuesButTheFileIsStillChecked) {
  JobConfig c = load_job_config(write("[run]\nplugin_dir = a\nrun_dir = out\n"),
                                {"run.plugin_dir=x", "run.plugin_dir=y", "run.run_dir=here"});
  EXPECT_THAT(c.plugin_dirs, ElementsAre(fs::path("x"), fs::path("y")));
  EXPECT_EQ(c.run_dir, fs::path("here"));  // from the command line: the current folder
  EXPECT_THAT(error_of("[run]\nlog_level = loud\n", {"run.log_level=info"}),
              HasSubstr("job.ini:2: [run] log_level"));
}

TEST_F(ConfigTest, MissingFileAndBadOverride) {
  try {
    load_job_config(dir_ / "nope.ini", {});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("nope.ini"), HasSubstr("cannot open")));
  }
  EXPECT_THAT(error_of("", {"progress=1"}), HasSubstr("expected SECTION.KEY=VALUE"));
  EXPECT_THAT(error_of("", {"hook.bad name.x=1"}), HasSubstr("letters, digits"));
}

}  // namespace
}  // namespace hookhost::testing
