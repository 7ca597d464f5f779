// Every malformed configuration stops the real hookhost program before any hook runs: exit status
// 2, a message naming the file and line (or the --set argument), the section and the key, and what
// is valid. Each case is a real INI file in a temporary folder; a lifecycle_trace hook would write
// its trace file at the first call, so a missing trace file proves that no hook ran.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

struct BadConfig {
  const char* name;
  std::string ini;   // followed by a [hook.trace] section that would record any call
  int line;          // the line the message must name
  std::string key;   // the section and key (or the header) the message must name
  std::string what;  // what was wrong, or what is valid
};

const char* const kTraceHook = "\n[hook.trace]\nplugin = lifecycle_trace\npath = trace.jsonl\n";

class ConfigErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_file(dir_ / "bad_number.csv", "mpg,drat,cyl\n21,3.9,6\n22,abc,4\n");
    write_file(dir_ / "open_quote.csv", "mpg,drat,cyl\n\"21,3.9,6\n");
    write_file(dir_ / "short_row.csv", "mpg,drat,cyl\n21,3.9,6\n22,3.1\n");
    write_file(dir_ / "header_only.csv", "mpg,drat,cyl\n");
    fs::create_directory(dir_ / "a_folder");
  }

  // Runs `hookhost run` on `ini` + the trace hook; checks that nothing ran; returns stderr.
  std::string expect_refused(const std::string& ini, const std::vector<std::string>& extra = {}) {
    fs::remove_all(run_dir());
    write_file(dir_ / "job.ini", ini + kTraceHook);
    std::vector<std::string> args = {"run", "--config", (dir_ / "job.ini").string(), "--run-dir",
                                     run_dir().string()};
    args.insert(args.end(), extra.begin(), extra.end());
    ProcessResult r = run_hookhost(args, dir_.path());
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, AllOf(HasSubstr("configuration error"), HasSubstr("Nothing was run")));
    EXPECT_THAT(r.err, Not(HasSubstr("map::at")));
    EXPECT_THAT(r.err, Not(HasSubstr("the options")));  // Boost's own wording
    EXPECT_FALSE(fs::exists(run_dir() / "trace.jsonl")) << "a hook ran despite the error";
    return r.err;
  }
  fs::path run_dir() const { return dir_ / "run"; }
  std::string file_line(int line) const {
    return (dir_ / "job.ini").string() + ":" + std::to_string(line) + ": ";
  }

  TempDir dir_;
};

const std::vector<BadConfig> kBadConfigs = {
    // ---- malformed lines and headers
    {"key missing before =", "[workload]\n= 5\n", 2, "[workload]", "'=' with no key"},
    {"hook without a name", "[hook.]\n", 1, "[hook.]", "no instance name"},
    {"spaces inside brackets", "[ hook.a ]\n", 1, "[ hook.a ]", "without spaces"},
    {"trailing space inside brackets", "[hook.a ]\n", 1, "[hook.a ]", "without spaces"},
    {"space in instance name", "[hook.a b]\n", 1, "[hook.a b]", "without spaces"},
    {"# in a header", "[hook.a#b]\n", 1, "[hook.a#b]", "letters, digits, '_' and '-'"},
    {"; in a header", "[hook.a;b]\n", 1, "[hook.a;b]", "letters, digits, '_' and '-'"},
    {"dot in instance name", "[hook.a.b]\n", 1, "[hook.a.b]", "letters, digits"},
    {"comment right after a header", "[run]# main\n", 1, "[run]# main", "alone on the line"},
    {"unclosed header", "[run\n", 1, "[run", "malformed section header"},
    {"empty header", "[]\n", 1, "[]", "unknown section"},
    {"unknown section", "[hookz.a]\nx = 1\n", 1, "[hookz.a]", "[run], [workload] and [hook.NAME]"},
    {"section without dot", "[hooks]\n", 1, "[hooks]", "unknown section"},
    {"space in a key", "[run]\nlog level = info\n", 2, "[run] log level", "letters, digits"},
    {"# in a key", "[run]\nlog#level = info\n", 2, "[run] log#level", "letters, digits"},
    {"; in a key", "[run]\nlog;level = info\n", 2, "[run] log;level", "letters, digits"},
    {"space in a plugin key", "[hook.s]\nplugin = stop_at_step\nlast step = 3\n", 3,
     "[hook.s] last step", "no spaces"},
    {"line without =", "[run]\nthis is not a key\n", 2, "this is not a key", "'key = value'"},
    {"key outside a section", "log_level = info\n", 1, "log_level", "outside any section"},
    // ---- keys and sections given twice
    {"run_dir twice", "[run]\nrun_dir = a\nrun_dir = b\n", 3, "[run] run_dir", "first at line 2"},
    {"log_level twice", "[run]\nlog_level = info\nlog_level = warn\n", 3, "[run] log_level",
     "first at line 2"},
    {"run on_error twice", "[run]\non_error = stop\n\non_error = fail\n", 4, "[run] on_error",
     "first at line 2"},
    {"plugin twice", "[hook.a]\nplugin = stop_at_step\nplugin = time_limit\n", 3, "[hook.a] plugin",
     "given twice (first at line 2)"},
    {"order twice", "[hook.s]\nplugin = stop_at_step\nlast_step = 3\norder = 1\norder = 2\n", 5,
     "[hook.s] order", "first at line 4"},
    {"enabled twice", "[hook.s]\nplugin = stop_at_step\nenabled = true\nenabled = false\n", 4,
     "[hook.s] enabled", "first at line 3"},
    {"hook on_error twice",
     "[hook.s]\nplugin = stop_at_step\nlast_step = 3\non_error = stop\non_error = fail\n", 5,
     "[hook.s] on_error", "first at line 4"},
    {"plugin parameter twice", "[hook.s]\nplugin = stop_at_step\nlast_step = 3\nlast_step = 4\n", 4,
     "[hook.s] last_step", "first at line 3"},
    {"workload key twice", "[workload]\nbatch_size = 4\nbatch_size = 8\n", 3,
     "[workload] batch_size", "first at line 2"},
    {"workload name twice", "[workload]\nname = linreg\nname = linreg\n", 3, "[workload] name",
     "first at line 2"},
    {"hook section twice", "[hook.a]\nplugin = stop_at_step\nlast_step = 1\n[hook.a]\n", 4,
     "[hook.a]", "appears twice (first at line 1)"},
    {"run section twice", "[run]\nlog_level = info\n[run]\n", 3, "[run]", "appears twice"},
    {"workload section twice", "[workload]\n[workload]\n", 2, "[workload]", "appears twice"},
    {"disabled hook with an unknown plugin", "[hook.x]\nplugin = no_such_plugin\nenabled = false\n",
     2, "[hook.x] plugin", "unknown plugin 'no_such_plugin'"},
    // ---- values
    {"# in a plugin value", "[hook.s]\nplugin = stop_at_step\nlast_step = 5#five\n", 3,
     "[hook.s] last_step", "quote it: \"5#five\""},
    {"; in a workload value", "[workload]\nlabel = mpg;the label\n", 2, "[workload] label",
     "';' in a value is ambiguous"},
    {"# in a run value", "[run]\nlog_level = info#\n", 2, "[run] log_level", "'#' in a value"},
    {"comment leaves a bad value", "[run]\nlog_level = loud  ; comment\n", 2, "[run] log_level",
     "got 'loud'"},
    {"unclosed quote", "[workload]\nlabel = \"mpg\n", 2, "[workload] label", "no closing '\"'"},
    {"text after a quote", "[workload]\nlabel = \"mpg\" x\n", 2, "[workload] label",
     "text after the closing quote"},
    {"empty run_dir", "[run]\nrun_dir =\n", 2, "[run] run_dir", "must not be empty"},
    {"empty plugin_dir", "[run]\nplugin_dir =\n", 2, "[run] plugin_dir", "must name a folder"},
    {"empty plugin", "[hook.a]\nplugin =\n", 2, "[hook.a] plugin", "must name a plugin id"},
    {"run on_error", "[run]\non_error = explode\n", 2, "[run] on_error",
     "continue, disable, stop or fail"},
    {"run log_level", "[run]\nlog_level = loud\n", 2, "[run] log_level", "trace, debug, info"},
    {"run confine", "[run]\nconfine = all\n", 2, "[run] confine",
     "expected off, sandboxed, all-untrusted or required; got 'all'"},
    {"hook confine all-untrusted", "[hook.a]\nplugin = x\nconfine = all-untrusted\n", 3,
     "[hook.a] confine", "(all-untrusted is a [run] setting)"},
    {"allow_read empty item", "[run]\nallow_read = /usr, ,/etc\n", 2, "[run] allow_read",
     "got an empty item"},
    {"allow_network word", "[hook.a]\nplugin = x\nallow_network = maybe\n", 3,
     "[hook.a] allow_network", "expected true or false; got 'maybe'"},
    {"limit_open_files too few", "[run]\nlimit_open_files = 15\n", 2, "[run] limit_open_files",
     "at least 16"},
    {"limit_cpu_secs negative", "[hook.a]\nplugin = x\nlimit_cpu_secs = -1\n", 3,
     "[hook.a] limit_cpu_secs", "must be an integer between 0 and 31536000"},
    {"max_state_mb zero", "[run]\nmax_state_mb = 0\n", 2, "[run] max_state_mb",
     "must be an integer between 1 and 4096"},
    {"max_state_mb text", "[run]\nmax_state_mb = lots\n", 2, "[run] max_state_mb",
     "must be an integer between 1 and 4096"},
    {"keep_checkpoints negative", "[run]\nkeep_checkpoints = -1\n", 2, "[run] keep_checkpoints",
     "must be an integer between 0 and 1000000 (0 keeps every checkpoint); got '-1'"},
    {"keep_checkpoints text", "[run]\nkeep_checkpoints = 3x\n", 2, "[run] keep_checkpoints",
     "must be an integer between 0 and 1000000"},
    {"time_every_n_steps zero", "[run]\ntime_every_n_steps = 0\n", 2, "[run] time_every_n_steps",
     "must be an integer between 1 and 1000000 (1 times every before_run and after_run call); "
     "got '0'"},
    {"empty checkpoint_dir", "[run]\ncheckpoint_dir =\n", 2, "[run] checkpoint_dir",
     "must name a folder"},
    {"unknown run key", "[run]\nrundir = x\n", 2, "[run] rundir", "plugin_dir, run_dir"},
    {"hook on_error", "[hook.s]\nplugin = stop_at_step\nlast_step = 3\non_error = maybe\n", 4,
     "[hook.s] on_error", "continue, disable, stop or fail"},
    {"hook enabled", "[hook.s]\nplugin = stop_at_step\nenabled = perhaps\n", 3, "[hook.s] enabled",
     "true or false"},
    {"order not a number", "[hook.s]\nplugin = stop_at_step\nlast_step = 3\norder = first\n", 4,
     "[hook.s] order", "must be an integer between -2147483648 and 2147483647"},
    {"order too big", "[hook.s]\nplugin = stop_at_step\nlast_step = 3\norder = 99999999999\n", 4,
     "[hook.s] order", "must be an integer between -2147483648 and 2147483647"},
    {"order fractional", "[hook.s]\nplugin = stop_at_step\nlast_step = 3\norder = 1.5\n", 4,
     "[hook.s] order", "must be an integer between"},
    // ---- the workload
    {"unknown workload", "[workload]\nname = logistic\n", 2, "[workload] name",
     "unknown workload 'logistic' (this hookhost has: linreg)"},
    {"unknown workload key", "[workload]\nbatch_sise = 4\n", 2, "[workload] batch_sise",
     "unknown parameter 'batch_sise'"},
    {"batch_size 0", "[workload]\nbatch_size = 0\n", 2, "[workload] batch_size",
     "must be an integer between 1 and 2147483647"},
    {"batch_size negative", "[workload]\nbatch_size = -4\n", 2, "[workload] batch_size",
     "must be an integer between 1 and 2147483647"},
    {"batch_size beyond int32", "[workload]\nbatch_size = 3000000000\n", 2, "[workload] batch_size",
     "must be an integer between 1 and 2147483647"},
    {"batch_size beyond int64", "[workload]\nbatch_size = 99999999999999999999\n", 2,
     "[workload] batch_size",
     "must be an integer between -9223372036854775808 and 9223372036854775807"},
    {"epochs negative", "[workload]\nepochs = -1\n", 2, "[workload] epochs",
     "must be an integer between 0 and 2147483647"},
    {"fail_at_step below -1", "[workload]\nfail_at_step = -5\n", 2, "[workload] fail_at_step",
     "must be an integer between -1 and"},
    {"shuffle_seed text", "[workload]\nshuffle_seed = x\n", 2, "[workload] shuffle_seed",
     "an integer, got 'x'"},
    {"learning_rate nan", "[workload]\nlearning_rate = nan\n", 2, "[workload] learning_rate",
     "finite number"},
    {"learning_rate inf", "[workload]\nlearning_rate = inf\n", 2, "[workload] learning_rate",
     "finite number"},
    {"learning_rate overflow", "[workload]\nlearning_rate = 1e400\n", 2, "[workload] learning_rate",
     "finite number"},
    {"learning_rate negative", "[workload]\nlearning_rate = -0.1\n", 2, "[workload] learning_rate",
     "a number > 0"},
    {"standardize", "[workload]\nstandardize = maybe\n", 2, "[workload] standardize", "a bool"},
    {"fail_kind", "[workload]\nfail_kind = boom\n", 2, "[workload] fail_kind",
     "one of aborted, error, nan"},
    {"empty list item", "[workload]\nfeatures = drat,,cyl\n", 2, "[workload] features",
     "item 2 of the comma-separated list is empty"},
    {"trailing comma", "[workload]\nfeatures = drat,\n", 2, "[workload] features",
     "item 2 of the comma-separated list is empty"},
    {"leading comma", "[workload]\nfeatures = , drat\n", 2, "[workload] features",
     "item 1 of the comma-separated list is empty"},
    {"label is a feature", "[workload]\nfeatures = mpg,drat\n", 2, "[workload] features",
     "both the label and a feature"},
    {"feature twice", "[workload]\nfeatures = drat,drat\n", 2, "[workload] features", "twice"},
    {"unknown label column", "[workload]\nlabel = nosuch\n", 2, "[workload] label",
     "no column 'nosuch'"},
    {"data missing", "[workload]\ndata = missing.csv\n", 2, "[workload] data", "does not exist"},
    {"data is a folder", "[workload]\ndata = a_folder\n", 2, "[workload] data", "is a folder"},
    {"data is a device", "[workload]\ndata = /dev/zero\n", 2, "[workload] data",
     "not a regular file"},
    {"csv bad number", "[workload]\ndata = bad_number.csv\n", 2, "[workload] data",
     "line 3, column 'drat' (column 2): 'abc' is not a finite number"},
    {"csv open quote", "[workload]\ndata = open_quote.csv\n", 2, "[workload] data",
     "line 2, column 1: a quoted field has no closing quote"},
    {"csv short row", "[workload]\ndata = short_row.csv\n", 2, "[workload] data",
     "line 3 has 2 fields, but the header has 3 (column 3, 'cyl', is missing)"},
    {"csv no rows", "[workload]\ndata = header_only.csv\n", 2, "[workload] data",
     "header but no data rows"},
    {"batch bigger than the data", "[workload]\ndata = short_row.csv\nbatch_size = 2\n", 2,
     "[workload] data", "line 3"},
    // ---- hooks and their plugins
    {"unknown plugin", "[hook.x]\nplugin = no_such_plugin\n", 2, "[hook.x] plugin",
     "unknown plugin 'no_such_plugin'"},
    {"unknown plugin key", "[hook.s]\nplugin = stop_at_step\nlast_stp = 3\n", 3,
     "[hook.s] last_stp", "this plugin takes: num_steps, last_step"},
    {"plugin key wrong type", "[hook.s]\nplugin = stop_at_step\nlast_step = ten\n", 3,
     "[hook.s] last_step", "an integer, got 'ten'"},
    {"plugin integer beyond int64", "[hook.s]\nplugin = stop_at_step\nlast_step = 1e30\n", 3,
     "[hook.s] last_step", "an integer"},
    {"refused in create", "[hook.s]\nplugin = stop_at_step\n\nnum_steps = -3\n", 4,
     "[hook.s] num_steps", "invalid num_steps=-3"},
    {"exclusive pair", "[hook.s]\nplugin = stop_at_step\nnum_steps = 3\nlast_step = 5\n", 3,
     "[hook.s] num_steps", "give only one of 'num_steps' and 'last_step'"},
    {"refused float in create", "[hook.p]\nplugin = progress_bar\nevery_n_secs = -1\n", 3,
     "[hook.p] every_n_secs", "must be > 0"},
    {"nan for a plugin", "[hook.p]\nplugin = progress_bar\nevery_n_secs = nan\n", 3,
     "[hook.p] every_n_secs", "finite number"},
    {"empty item for a plugin", "[hook.l]\nplugin = logging_tensor\ntensors = loss,,global_step\n",
     3, "[hook.l] tensors", "item 2 of the comma-separated list is empty"},
    {"disabled hook, bad value",
     "[hook.s]\nplugin = stop_at_step\nenabled = false\nlast_step = x\n", 4, "[hook.s] last_step",
     "an integer, got 'x'"},
    {"disabled hook, unknown key", "[hook.s]\nplugin = stop_at_step\nenabled = false\nlst = 1\n", 4,
     "[hook.s] lst", "unknown parameter 'lst'"},
    {"missing required parameter", "[hook.w]\nplugin = global_step_waiter\n", 1, "[hook.w]",
     "required parameter 'wait_until_step' is missing"},
};

TEST_F(ConfigErrorsTest, EveryMalformedConfigIsRefusedWithItsLineAndKey) {
  ASSERT_GE(kBadConfigs.size(), 60u);
  for (const BadConfig& c : kBadConfigs) {
    SCOPED_TRACE(c.name);
    const std::string err = expect_refused(c.ini);
    EXPECT_THAT(err, HasSubstr(file_line(c.line)));
    EXPECT_THAT(err, HasSubstr(c.key));
    EXPECT_THAT(err, HasSubstr(c.what));
  }
}

TEST_F(ConfigErrorsTest, ControlCharactersAreRefusedAndNotEchoed) {
  const std::string err = expect_refused(
      "[run]\nlog_level = in\x01"
      "fo\x1b[2J\n");
  EXPECT_THAT(err, AllOf(HasSubstr(file_line(2)), HasSubstr("control character 0x01")));
  EXPECT_THAT(err, Not(HasSubstr("\x1b")));
}

// A NUL byte (a UTF-16 file, a binary one) names the line, the section and the key it is in.
TEST_F(ConfigErrorsTest, ANulByteNamesTheLineSectionAndKey) {
  const std::string err =
      expect_refused(std::string("[hook.s]\nplugin = stop_at_step\nlast_step = 3\0", 45) + "\n");
  EXPECT_THAT(err, HasSubstr(file_line(3) + "[hook.s] last_step: control character 0x00 in the "
                                            "value; a config file is plain text"));
  const std::string in_header = expect_refused(std::string("[run]\n[wor\0kload]\n", 18));
  EXPECT_THAT(in_header, HasSubstr(file_line(2) + "control character 0x00 in the line"));
}

TEST_F(ConfigErrorsTest, SetArgumentsAreNamedInTheirErrors) {
  struct BadSet {
    std::string set;
    std::string what;
  };
  const std::vector<BadSet> cases = {
      {"progress=1", "expected SECTION.KEY=VALUE"},
      {"hook.bad name.x=1", "a hook instance name uses only"},
      {"hookz.a.x=1", "unknown section [hookz.a]"},
      {"run.log level=info", "a key uses only"},
      {"hook.s.last_step=ten", "an integer, got 'ten'"},
      {"workload.batch_size=0", "must be an integer between 1 and 2147483647"},
      {"workload.features=drat,,cyl", "item 2 of the comma-separated list is empty"},
      {"hook.s.order=x", "must be an integer between"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.set);
    const std::string err =
        expect_refused("[hook.s]\nplugin = stop_at_step\nlast_step = 3\n", {"--set", c.set});
    EXPECT_THAT(err, AllOf(HasSubstr("--set " + c.set), HasSubstr(c.what)));
  }
  const std::string twice =
      expect_refused("", {"--set", "workload.epochs=1", "--set", "workload.epochs=2"});
  EXPECT_THAT(twice, AllOf(HasSubstr("--set workload.epochs=2: [workload] epochs"),
                           HasSubstr("given twice on the command line")));
}

TEST_F(ConfigErrorsTest, ConfigMustBeABoundedRegularFile) {
  struct BadFile {
    std::string path;
    std::string what;
  };
  write_file(dir_ / "huge.ini", "[run]\n" + std::string(2 * 1024 * 1024, '#') + "\n");
  const std::vector<BadFile> cases = {
      {dir_.path().string(), "is a folder"},
      {"/dev/zero", "is not a regular file"},
      {(dir_ / "missing.ini").string(), "cannot open the config file"},
      {(dir_ / "huge.ini").string(), "larger than 1024 KiB"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.path);
    ProcessResult r =
        run_hookhost({"run", "--config", c.path, "--run-dir", run_dir().string()}, dir_.path());
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, AllOf(HasSubstr(c.path), HasSubstr(c.what), HasSubstr("Nothing was run")));
    EXPECT_FALSE(fs::exists(run_dir()));
  }
}

// ---- what is accepted ----------------------------------------------------------------------

class ConfigAcceptedTest : public ConfigErrorsTest {
 protected:
  ProcessResult run_job(const std::string& ini, const fs::path& cwd) {
    write_file(dir_ / "conf" / "job.ini", ini);
    return run_hookhost({"run", "--config", (dir_ / "conf" / "job.ini").string()}, cwd);
  }
  void SetUp() override {
    ConfigErrorsTest::SetUp();
    fs::create_directories(dir_ / "conf");
    fs::create_directories(dir_ / "elsewhere");
  }
};

TEST_F(ConfigAcceptedTest, BomCrlfAndQuotedHashWork) {
  const std::string ini =
      "\xEF\xBB\xBF[run]\r\nrun_dir = out\r\n\r\n[hook.stop]\r\nplugin = stop_at_step\r\n"
      "last_step = 3\r\n[hook.log]\r\nplugin = logging_tensor\r\ntensors = loss\r\n"
      "every_n_iter = 1\r\nformat = \"step # \\\"loss\\\" {loss}\"\r\n";
  ProcessResult r = run_job(ini, dir_ / "elsewhere");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("step # \"loss\" 452.19"));
}

TEST_F(ConfigAcceptedTest, RelativePathsAreTakenFromTheConfigFilesFolder) {
  fs::create_directories(dir_ / "conf" / "data");
  write_file(dir_ / "conf" / "data" / "small.csv", "y,x\n1,1\n2,2\n3,3\n4,4\n");
  fs::create_directories(dir_ / "conf" / "plugins");
  const std::string ini =
      "[run]\nrun_dir = out\nplugin_dir = plugins\n[workload]\ndata = data/small.csv\n"
      "label = y\nfeatures = x\nbatch_size = 2\n[hook.stop]\nplugin = stop_at_step\n"
      "last_step = 2\n";
  ProcessResult r = run_job(ini, dir_ / "elsewhere");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_directory(dir_ / "conf" / "out"));
  EXPECT_FALSE(fs::exists(dir_ / "elsewhere" / "out"));
  EXPECT_THAT(r.err, Not(HasSubstr("does not exist")));  // the plugin folder was found
}

TEST_F(ConfigAcceptedTest, DisabledHookWithGoodParametersDoesNotRun) {
  const std::string ini =
      "[run]\nrun_dir = out\n[hook.stop]\nplugin = stop_at_step\nlast_step = 2\n"
      "[hook.trace]\nplugin = lifecycle_trace\nenabled = false\npath = trace.jsonl\n";
  ProcessResult r = run_job(ini, dir_ / "elsewhere");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("hook 'trace' is disabled"));
  EXPECT_FALSE(fs::exists(dir_ / "conf" / "out" / "trace.jsonl"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
