// The job config file and --set overrides: what they produce, and the errors for every mistake,
// each naming the file, the line, the section and the key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hookhost/host/config.hpp>

#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

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
  EXPECT_THAT(error_of("[run]\non_error = explode\n"),
              AllOf(HasSubstr("job.ini:2"), HasSubstr("on_error"),
                    HasSubstr("continue, disable, stop or fail")));
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

TEST_F(ConfigTest, QuotedValuesKeepHashSemicolonAndSpaces) {
  JobConfig c = load_job_config(
      write("[hook.a]\nformat = \"  # {loss} \\\"q\\\" \\\\ \"\nlabel = \"a;b\"  ; kept\n"), {});
  EXPECT_THAT(c.hooks[0].params,
              ElementsAre(Pair("format", "  # {loss} \"q\" \\ "), Pair("label", "a;b")));
}

// The INI rule: outside quotes, a space or tab then ';' or '#' starts a comment, after a value
// and after a section header, as the documented examples write them.
TEST_F(ConfigTest, ASpaceThenSemicolonOrHashStartsAnInlineComment) {
  JobConfig c = load_job_config(write("[run]   ; the job\n"
                                      "distributed = mpi        ; none (default) or mpi\n"
                                      "log_level = debug\t# tab before the hash\n"
                                      "[hook.py]  # a Python hook\n"
                                      "plugin = python_hook\n"
                                      "script = loss_hook.py  ; a .py file\n"
                                      "args = {\"k\": 1}   ; JSON\n"
                                      "empty = ; nothing but a comment\n"
                                      "quoted = \"x ; y\"\t# comment after quotes\n"),
                                {});
  EXPECT_EQ(c.distributed, Distribution::mpi);
  EXPECT_EQ(c.log_level, "debug");
  ASSERT_EQ(c.hooks.size(), 1u);
  EXPECT_EQ(c.hooks[0].plugin, "python_hook");
  EXPECT_THAT(c.hooks[0].params,
              ElementsAre(Pair("args", "{\"k\": 1}"), Pair("empty", ""), Pair("quoted", "x ; y"),
                          Pair("script", "loss_hook.py")));
}

// A ';' or '#' right after other text is read differently by different INI readers: refused,
// naming the line and the key and saying how to quote it.
TEST_F(ConfigTest, ASemicolonOrHashWithoutASpaceBeforeItIsRefused) {
  EXPECT_THAT(error_of("[hook.a]\nlabel = a;b\n"),
              AllOf(HasSubstr("job.ini:2: [hook.a] label: ';' in a value is ambiguous"),
                    HasSubstr("quote it: \"a;b\"")));
  EXPECT_THAT(error_of("[run]\nrun_dir = out#1\n"),
              AllOf(HasSubstr("job.ini:2: [run] run_dir: '#' in a value is ambiguous"),
                    HasSubstr("a space or tab before its ';' or '#'")));
  EXPECT_THAT(error_of("[workload]\nlabel =;x\n"),
              HasSubstr("job.ini:2: [workload] label: ';' in a value is ambiguous"));
  EXPECT_THAT(error_of("[workload]\nlabel = \"mpg\";x\n"),
              AllOf(HasSubstr("job.ini:2: [workload] label: text after the closing quote"),
                    HasSubstr("';x'")));
  EXPECT_THAT(error_of("[run]# main\n"), AllOf(HasSubstr("job.ini:1"), HasSubstr("alone on")));
}

// --set values are literal: a ';' or '#' in one is part of the value, as the shell passed it.
TEST_F(ConfigTest, OverrideValuesAreLiteral) {
  JobConfig c = load_job_config(write("[hook.a]\n"), {"hook.a.label=x ; y # z", "hook.a.tag=a;b"});
  EXPECT_THAT(c.hooks[0].params, ElementsAre(Pair("label", "x ; y # z"), Pair("tag", "a;b")));
}

// One list of host-owned hook keys: the reader takes every one of them as its own (a wrong value
// is the host's error, never handed to a plugin), and no other key.
TEST_F(ConfigTest, TheReaderTakesEveryHostOwnedHookKey) {
  for (std::string_view key : kHostHookKeys) {
    // Any text is a path: a list with an empty item is not.
    const bool paths = key == "allow_read" || key == "allow_write";
    const std::string value = key == "plugin" ? "" : paths ? "a,,b" : "?!";
    const std::string error = error_of("[hook.a]\n" + std::string(key) + " = " + value + "\n");
    EXPECT_THAT(error, HasSubstr("job.ini:2: [hook.a] " + std::string(key) + ": ")) << key;
  }
  JobConfig c = load_job_config(write("[hook.a]\nrank = 1\nplugins = x\n"), {});
  EXPECT_THAT(c.hooks[0].params, ElementsAre(Pair("plugins", "x"), Pair("rank", "1")));
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

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
