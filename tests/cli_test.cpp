// End-to-end tests of the hookhost program: the real binary, the real built-in plugins, real files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <regex>
#include <set>

#include <hookhost/version.h>

#include "job/config_keys.hpp"
#include "plugin_files.hpp"
#include "process.hpp"
#include "storage/checkpoint.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

long count_matches(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator());
}

long trace_calls(const std::string& trace, const std::string& callback) {
  return count_matches(trace, "\"callback\":\\s*\"" + callback + "\"");
}

// Steps of the checkpoints in a folder ("model.ckpt-<step>"), ascending.
std::vector<long> checkpoint_steps(const fs::path& dir) {
  std::vector<long> steps;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    const std::string name = e.path().filename().string();
    if (std::regex_match(name, m, std::regex(R"(model\.ckpt-(\d+))")))
      steps.push_back(std::stol(m[1]));
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

// The first column of every data row of a CSV.
std::vector<long> history_steps(const fs::path& csv) {
  std::vector<long> steps;
  auto lines = lines_of(read_file(csv));
  for (size_t i = 1; i < lines.size(); ++i)
    if (!lines[i].empty()) steps.push_back(std::stol(lines[i].substr(0, lines[i].find(','))));
  return steps;
}

class CliTest : public ::testing::Test {
 protected:
  fs::path config(const std::string& text) {
    fs::path file = dir_ / "job.ini";
    write_file(file, text);
    return file;
  }
  ProcessResult run(const std::vector<std::string>& args) {
    return run_hookhost(args, dir_.path());
  }
  fs::path run_dir() const { return dir_ / "run"; }

  TempDir dir_;
};

// ---- usage ----------------------------------------------------------------------------------

TEST_F(CliTest, HelpAndVersion) {
  ProcessResult help = run({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, AllOf(HasSubstr("hookhost run"), HasSubstr("plugins list"),
                              HasSubstr("Exit status"), HasSubstr("128+N")));
  ProcessResult run_help = run({"run", "--help"});
  EXPECT_EQ(run_help.exit_code, 0);
  EXPECT_THAT(run_help.out, AllOf(HasSubstr("--config"), HasSubstr("--set"), HasSubstr("--fresh"),
                                  HasSubstr("Examples")));
  ProcessResult version = run({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_THAT(version.out, HasSubstr("plugin ABI " + std::to_string(HH_ABI_MAJOR) + "." +
                                     std::to_string(HH_ABI_MINOR)));
  EXPECT_EQ(run({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(run({"run", "--no-such-option"}).exit_code, 2);
}

// ---- configuration errors: exit 2 before anything runs -------------------------------------

struct ConfigCase {
  const char* name;
  const char* ini;
  std::vector<const char*> expected;
};

TEST_F(CliTest, EveryConfigMistakeStopsBeforeAnythingRuns) {
  const std::string trace_hook = "\n[hook.trace]\nplugin = lifecycle_trace\npath = trace.jsonl\n";
  const std::vector<ConfigCase> cases = {
      {"unknown section", "[hookz.a]\nx = 1\n", {"job.ini:1", "unknown section [hookz.a]"}},
      {"unknown hook key",
       "[hook.stop]\nplugin = stop_at_step\nlast_stp = 3\n",
       {"job.ini:3", "[hook.stop] last_stp", "unknown parameter 'last_stp'", "stop_at_step"}},
      {"wrong type",
       "[hook.stop]\nplugin = stop_at_step\nlast_step = ten\n",
       {"job.ini:3", "'last_step'", "an integer", "got 'ten'"}},
      {"missing required",
       "[hook.wait]\nplugin = global_step_waiter\n",
       {"job.ini:1", "required parameter 'wait_until_step'"}},
      {"unknown plugin",
       "[hook.x]\nplugin = no_such_plugin\n",
       {"job.ini:2", "unknown plugin 'no_such_plugin'", "hookhost plugins list"}},
      {"exclusive pair given twice",
       "[hook.stop]\nplugin = stop_at_step\nnum_steps = 3\nlast_step = 5\n",
       {"job.ini:3", "[hook.stop] num_steps", "num_steps", "last_step"}},
      {"duplicate instance",
       "[hook.a]\nplugin = stop_at_step\nlast_step = 1\n[hook.a]\nplugin = stop_at_step\n",
       {"job.ini:4", "[hook.a] appears twice"}},
      {"unknown workload key",
       "[workload]\nbatch_sise = 4\n",
       {"job.ini:2", "[workload] batch_sise", "unknown parameter 'batch_sise'"}},
      {"bad run key",
       "[run]\non_error = explode\n",
       {"job.ini:2", "continue, disable, stop or fail"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    fs::remove_all(run_dir());
    fs::path file = config(c.ini + trace_hook);
    ProcessResult r = run({"run", "--config", file.string(), "--run-dir", run_dir().string()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, AllOf(HasSubstr("configuration error"), HasSubstr("Nothing was run")));
    for (const char* text : c.expected) EXPECT_THAT(r.err, HasSubstr(text));
    EXPECT_FALSE(fs::exists(run_dir() / "trace.jsonl")) << "a hook ran despite the error";
  }
}

// ---- plugins list / describe -----------------------------------------------------------------

TEST_F(CliTest, ListShowsBuiltinsAndRejectedFilesWithReasons) {
  fs::path extra = dir_ / "extra";
  fs::create_directory(extra);
  write_file(extra / "notes.so", "this is not a shared object\n");
  ProcessResult r = run({"plugins", "list", "--plugin-dir", extra.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, AllOf(HasSubstr("ID"), HasSubstr("stop_at_step"), HasSubstr("lifecycle_trace"),
                           HasSubstr("checkpoint_saver"), HasSubstr("1.0")));
  EXPECT_THAT(r.out, AllOf(HasSubstr("Rejected files"), HasSubstr("notes.so")));
  EXPECT_THAT(r.out, HasSubstr("ELF"));
}

TEST_F(CliTest, PluginFoldersComeFromTheEnvironmentToo) {
  fs::path extra = dir_ / "from_env";
  fs::create_directory(extra);
  copy_plugin(fixture_plugin("good_cxx"), extra);
  ProcessResult r =
      run_hookhost({"plugins", "list"}, dir_.path(), {"HOOKHOST_PLUGIN_PATH=" + extra.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, AllOf(HasSubstr("good_cxx.so"), HasSubstr("stop_at_step")));
  EXPECT_THAT(run({"plugins", "list"}).out, Not(HasSubstr("good_cxx.so")));
}

TEST_F(CliTest, MissingPluginFolderIsAnErrorInListAndAWarningInRun) {
  const std::string missing = (dir_ / "no-such-folder").string();
  ProcessResult list = run({"plugins", "list", "--plugin-dir", missing});
  EXPECT_EQ(list.exit_code, 2);
  EXPECT_THAT(list.err, HasSubstr("plugin folder " + missing + " does not exist"));
  EXPECT_THAT(list.out, HasSubstr("stop_at_step"));  // the rest is still listed

  ProcessResult job = run({"run", "--plugin-dir", missing, "--run-dir", run_dir().string(), "--set",
                           "hook.stop.plugin=stop_at_step", "--set", "hook.stop.last_step=2"});
  EXPECT_EQ(job.exit_code, 0) << job.err;
  EXPECT_THAT(job.err, AllOf(HasSubstr("[warning]"),
                             HasSubstr("plugin folder " + missing + " does not exist")));
}

TEST_F(CliTest, DuplicatePluginIdIsReportedWithBothFilesAndWhy) {
  fs::path first = dir_ / "first", second = dir_ / "second";
  fs::create_directories(first);
  fs::create_directories(second);
  const fs::path chosen = copy_plugin(fixture_plugin("good_cxx"), first, "good_cxx.so");
  const fs::path backup = copy_plugin(fixture_plugin("good_cxx"), second, "good_cxx.so.bak.so");
  ProcessResult list =
      run({"plugins", "list", "--plugin-dir", first.string(), "--plugin-dir", second.string()});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, AllOf(HasSubstr("Duplicate plugin ids"),
                              HasSubstr("good_cxx: using " + chosen.string()),
                              HasSubstr("because its folder comes first in the search path"),
                              HasSubstr("ignoring " + backup.string())));

  ProcessResult job = run({"run", "--plugin-dir", first.string(), "--plugin-dir", second.string(),
                           "--run-dir", run_dir().string(), "--set",
                           "hook.stop.plugin=stop_at_step", "--set", "hook.stop.last_step=2"});
  EXPECT_EQ(job.exit_code, 0) << job.err;
  EXPECT_THAT(job.err, AllOf(HasSubstr("two plugins with id 'good_cxx': using " + chosen.string()),
                             HasSubstr("ignoring " + backup.string())));
}

TEST_F(CliTest, EveryUnusableEntryIsListedWithItsReason) {
  fs::path extra = dir_ / "extra";
  fs::create_directory(extra);
  ASSERT_EQ(::mkfifo((extra / "pipe.so").c_str(), 0644), 0);
  fs::create_symlink(extra / "loop.so", extra / "loop.so");
  fs::create_directory(extra / "dir.so");
  fs::create_symlink("/dev/null", extra / "null.so");
  ProcessResult r = run({"plugins", "list", "--plugin-dir", extra.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out,
              AllOf(HasSubstr("pipe.so\n    a FIFO"), HasSubstr("loop.so\n    symbolic link loop"),
                    HasSubstr("dir.so\n    a folder"), HasSubstr("null.so\n    a device file")));
}

TEST_F(CliTest, FileNamesAndPluginTextsAreEscaped) {
  fs::path extra = dir_ / "extra";
  fs::create_directory(extra);
  write_file(extra / "evil\x1b[2J\nname.so", "not a plugin");
  // A plugin whose note describes it with control characters (same length, so the note stays
  // well formed).
  std::string bytes = read_file(fixture_plugin("good_c"));
  const std::string from = "A pure C test plugin", to = "A \x1b[2J\aC test plugin";
  ASSERT_EQ(from.size(), to.size());
  for (size_t pos = bytes.find(from); pos != std::string::npos; pos = bytes.find(from, pos))
    bytes.replace(pos, from.size(), to);
  write_file(extra / "good_c.so", bytes);

  ProcessResult list = run({"plugins", "list", "--plugin-dir", extra.string()});
  EXPECT_THAT(list.out, HasSubstr("evil\\e[2J\\nname.so"));
  EXPECT_THAT(list.out, Not(HasSubstr("\x1b")));
  ProcessResult describe = run({"plugins", "describe", "good_c", "--plugin-dir", extra.string()});
  EXPECT_EQ(describe.exit_code, 0) << describe.err;
  EXPECT_THAT(describe.out, HasSubstr("A \\e[2J\\x07C test plugin"));
  EXPECT_THAT(describe.out, Not(HasSubstr("\x1b")));
}

TEST_F(CliTest, DescribeShowsTheSchema) {
  ProcessResult r = run({"plugins", "describe", "stop_at_step"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, AllOf(HasSubstr("stop_at_step"), HasSubstr("num_steps"),
                           HasSubstr("last_step"), HasSubstr("int"), HasSubstr("[hook.")));
  ProcessResult missing = run({"plugins", "describe", "no_such"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("no plugin with id 'no_such'"));
}

// The host's [hook.NAME] keys come from the config key table: every one, with its help.
TEST_F(CliTest, DescribeListsEveryHostOwnedHookKeyWithItsHelp) {
  for (const std::string id : {"stop_at_step", "progress_bar"}) {
    ProcessResult r = run({"plugins", "describe", id});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::size_t keys = 0;
    for (const ConfigKey& key : config_keys()) {
      if (!(key.sections & kHookSection)) continue;
      ++keys;
      EXPECT_THAT(r.out, HasSubstr("\n  " + std::string(key.name) + " ")) << id << ": " << key.name;
      EXPECT_THAT(r.out, HasSubstr(std::string(key.help))) << id << ": " << key.name;
    }
    EXPECT_EQ(keys, 30u);
  }
  // progress_bar declares a `mode` of its own, which then is its parameter, not the host's key.
  ProcessResult r = run({"plugins", "describe", "progress_bar"});
  EXPECT_THAT(r.out, HasSubstr("(default: the plugin's mode) (this plugin declares it: its "
                               "parameter above)"));
}

// What a confined hook of the plugin may touch beyond its run folder, from the note's needs.*.
TEST_F(CliTest, DescribeShowsWhatAConfinedHookNeeds) {
  const fs::path extra = dir_ / "extra";
  fs::create_directories(extra);
  copy_plugin(fixture_plugin("frozen_v1_2_c"), extra);
  copy_plugin(fixture_plugin("frozen_v1_2_cxx"), extra);
  ProcessResult r = run({"plugins", "describe", "frozen_v1_2_c", "--plugin-dir", extra.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\n  needs (when confined): read vocab/words.txt, /usr/share/dict, "
                               "the paths parameter 'inputs' names; write exports, the paths "
                               "parameter 'trace' names; network\n  granted by: the job's "
                               "configuration (a parameter's value, allow_read, allow_write, "
                               "allow_network, allow_processes, or grant = declared); what it does "
                               "not grant refuses the hook\n  ABI: 1.2\n"));
  r = run({"plugins", "describe", "frozen_v1_2_cxx", "--plugin-dir", extra.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\n  needs (when confined): read the paths parameter 'model' names; "
                               "write the paths parameter 'trace' names; processes\n"));
  r = run({"plugins", "describe", "history_saver"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out,
              HasSubstr("\n  needs (when confined): write the paths parameter 'path' names\n"));
  r = run({"plugins", "describe", "stop_at_step"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\n  needs (when confined): only its run folder\n  ABI: "));
}

TEST_F(CliTest, PluginsListNamesTheFileAndTheLineOfABadNeed) {
  const fs::path extra = dir_ / "extra";
  fs::create_directories(extra);
  const fs::path file = copy_plugin(fixture_plugin("needs_nul_path"), extra);
  ProcessResult r = run({"plugins", "list", "--plugin-dir", extra.string()});
  EXPECT_THAT(r.out + r.err, AllOf(HasSubstr(file.string()), HasSubstr("line 4 (needs.read=in...)"),
                                   HasSubstr("NUL byte")));
}

// ---- running jobs ----------------------------------------------------------------------------

const char* const kTrainingJob = R"([run]
run_dir = run
keep_checkpoints = 0
# every checkpoint asked for is written: the tests list them
checkpoint_wait = true

[workload]
name = linreg
epochs = 5

[hook.trace]
plugin = lifecycle_trace
path = trace.jsonl

[hook.history]
plugin = history_saver
every_n_steps = 1

[hook.checkpoints]
plugin = checkpoint_saver
save_steps = 5
order = 100
)";

TEST_F(CliTest, FullRunWritesCheckpointsHistoryAndSummary) {
  ProcessResult r = run({"run", "--config", config(kTrainingJob).string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, AllOf(HasSubstr("job completed"), HasSubstr("20 run"), HasSubstr("steps/s"),
                           HasSubstr("after_run"), HasSubstr("history")));
  EXPECT_THAT(r.out, HasSubstr("calls   total ms    mean us     p50 us     p99 us     max us"));
  EXPECT_THAT(r.err, AllOf(HasSubstr("hook order: trace (order 0), history (order 0), "
                                     "checkpoints (order 100)"),
                           HasSubstr("[workload] name = linreg")));
  EXPECT_EQ(checkpoint_steps(run_dir() / "checkpoints"), (std::vector<long>{0, 5, 10, 15, 20}));
  std::vector<long> rows = history_steps(run_dir() / "history.csv");
  ASSERT_EQ(rows.size(), 20u);
  EXPECT_EQ(rows.front(), 1);
  EXPECT_EQ(rows.back(), 20);
  const std::string trace = read_file(run_dir() / "trace.jsonl");
  EXPECT_EQ(trace_calls(trace, "after_run"), 20);
  EXPECT_THAT(trace, HasSubstr("completed"));
}

TEST_F(CliTest, RecoversFromAnAbortedStep) {
  ProcessResult r = run({"run", "--config", config(kTrainingJob).string(), "--set",
                         "workload.fail_at_step=7", "--set", "workload.fail_kind=aborted"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string trace = read_file(run_dir() / "trace.jsonl");
  EXPECT_EQ(trace_calls(trace, "begin"), 1);
  EXPECT_EQ(trace_calls(trace, "after_create_session"), 2);
  EXPECT_THAT(r.err, HasSubstr("recoverable error"));
  EXPECT_THAT(r.out, HasSubstr("job completed"));
}

TEST_F(CliTest, InjectedErrorFailsTheJobWithStatus1) {
  ProcessResult r = run({"run", "--config", config(kTrainingJob).string(), "--set",
                         "workload.fail_at_step=7", "--set", "workload.fail_kind=error"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("injected error at step 7"));
  EXPECT_THAT(r.out, HasSubstr("job failed"));
  const std::string trace = read_file(run_dir() / "trace.jsonl");
  EXPECT_THAT(trace, HasSubstr("failed"));
  // end() was still delivered; the saver's final request was not carried out, because a failed
  // job never writes a checkpoint: the newest stays the good one from step 5.
  EXPECT_EQ(trace_calls(trace, "end"), 1);
  EXPECT_EQ(checkpoint_steps(run_dir() / "checkpoints").back(), 5);
  EXPECT_THAT(r.err, AllOf(HasSubstr("not writing the checkpoint requested by hook 'checkpoints'"),
                           HasSubstr("the job failed")));
}

TEST_F(CliTest, ResumeSkipsACorruptNewestCheckpoint) {
  fs::path file = config(kTrainingJob);
  ASSERT_EQ(run({"run", "--config", file.string()}).exit_code, 0);
  // Flip one byte in the middle of the newest checkpoint (step 20).
  const fs::path newest = run_dir() / "checkpoints" / "model.ckpt-20";
  std::string bytes = read_file(newest);
  ASSERT_GT(bytes.size(), 20u);
  bytes[bytes.size() / 2] ^= 0x5a;
  write_file(newest, bytes);
  ProcessResult r = run({"run", "--config", file.string(), "--set", "workload.epochs=6"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err,
              AllOf(HasSubstr("skipping an unusable checkpoint"), HasSubstr("model.ckpt-20"),
                    HasSubstr("checksum mismatch"), HasSubstr("model.ckpt-15 at global step 15")));
  EXPECT_THAT(r.out, HasSubstr("global step 15 -> 24"));
  std::vector<long> rows = history_steps(run_dir() / "history.csv");
  EXPECT_EQ(rows.size(), 24u);
  EXPECT_EQ(rows.back(), 24);
}

TEST_F(CliTest, WhenNoCheckpointIsUsableTheJobRefusesToStartUnlessFresh) {
  fs::path file = config(kTrainingJob);
  ASSERT_EQ(run({"run", "--config", file.string()}).exit_code, 0);
  for (const auto& ckpt : list_checkpoints(run_dir() / "checkpoints")) {
    std::string bytes = read_file(ckpt);
    bytes[bytes.size() - 2] ^= 0x11;
    write_file(ckpt, bytes);
  }
  ProcessResult r = run({"run", "--config", file.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(
      r.err,
      AllOf(HasSubstr("no usable checkpoint in " + (run_dir() / "checkpoints").string()),
            HasSubstr("model.ckpt-20: checksum mismatch"),
            HasSubstr("model.ckpt-0: checksum mismatch"), HasSubstr("Start over with --fresh")));
  EXPECT_THAT(r.out, Not(HasSubstr("job completed")));
  ProcessResult fresh = run({"run", "--config", file.string(), "--fresh"});
  EXPECT_EQ(fresh.exit_code, 0) << fresh.err;
  EXPECT_THAT(fresh.out, HasSubstr("global step 0 -> 20"));
}

TEST_F(CliTest, FreshMovesThePreviousRunAsideAndStartsOver) {
  fs::path file = config(kTrainingJob);
  ASSERT_EQ(run({"run", "--config", file.string()}).exit_code, 0);
  ProcessResult r = run({"run", "--config", file.string(), "--fresh"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err,
              AllOf(HasSubstr("--fresh: moved the previous run to"), Not(HasSubstr("resuming"))));
  EXPECT_THAT(r.out, HasSubstr("global step 0 -> 20"));
  int moved = 0;
  for (const auto& e : fs::directory_iterator(dir_.path()))
    if (e.path().filename().string().rfind("run.old-", 0) == 0) {
      ++moved;
      EXPECT_TRUE(fs::exists(e.path() / "checkpoints" / "model.ckpt-20"));
    }
  EXPECT_EQ(moved, 1);
  EXPECT_EQ(history_steps(run_dir() / "history.csv").size(), 20u);
}

const char* const kEndlessJob = R"([run]
run_dir = run
keep_checkpoints = 3

[workload]
name = linreg
epochs = 0

[hook.history]
plugin = history_saver
every_n_steps = 1

[hook.checkpoints]
plugin = checkpoint_saver
save_steps = 50
order = 100
)";

TEST_F(CliTest, KilledJobResumesFromItsLastCheckpointWithoutDuplicatingHistory) {
  fs::path file = config(kEndlessJob);
  {
    Process job({"run", "--config", file.string()}, dir_.path());
    ASSERT_TRUE(wait_until([&] {
      auto steps = checkpoint_steps(run_dir() / "checkpoints");
      return !steps.empty() && steps.back() >= 100;
    }));
    job.signal(SIGKILL);
    EXPECT_EQ(job.wait().exit_code, 128 + SIGKILL);
  }
  // The killed job may have run (and recorded) many steps past its newest checkpoint on disk:
  // the step never waits for a save. The resumed job goes past both.
  const long killed_at = checkpoint_steps(run_dir() / "checkpoints").back();
  const std::vector<long> recorded = history_steps(run_dir() / "history.csv");
  const long last = std::max(killed_at, recorded.empty() ? 0L : recorded.back()) + 120;
  ProcessResult r = run({"run", "--config", file.string(), "--set", "hook.stop.plugin=stop_at_step",
                         "--set", "hook.stop.last_step=" + std::to_string(last)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("resuming from"));
  EXPECT_THAT(r.out, HasSubstr("-> " + std::to_string(last)));
  std::vector<long> rows = history_steps(run_dir() / "history.csv");
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.front(), 1);
  EXPECT_EQ(rows.back(), last);
  for (size_t i = 1; i < rows.size(); ++i) ASSERT_EQ(rows[i], rows[i - 1] + 1) << "row " << i;
  EXPECT_EQ(count_matches(read_file(run_dir() / "history.csv"), "step,"), 1) << "one header";
}

TEST_F(CliTest, SigtermFinishesTheStepAndWritesAFinalCheckpoint) {
  fs::path file = config(std::string(kEndlessJob) +
                         "\n[hook.trace]\nplugin = lifecycle_trace\npath = trace.jsonl\n");
  Process job({"run", "--config", file.string()}, dir_.path());
  ASSERT_TRUE(wait_until([&] {
    auto steps = checkpoint_steps(run_dir() / "checkpoints");
    return !steps.empty() && steps.back() >= 50;
  }));
  job.signal(SIGTERM);
  ProcessResult r = job.wait();
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
  const std::string trace = read_file(run_dir() / "trace.jsonl");
  EXPECT_EQ(trace_calls(trace, "end"), 1);
  EXPECT_THAT(trace, AllOf(HasSubstr("stopped"), HasSubstr("received SIGTERM")));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(-> (\d+)\))"))) << r.out;
  const long final_step = std::stol(m[1]);
  EXPECT_EQ(checkpoint_steps(run_dir() / "checkpoints").back(), final_step);
  EXPECT_EQ(history_steps(run_dir() / "history.csv").back(), final_step);
}

TEST_F(CliTest, FailingRerunsNeverReplaceTheNewestGoodCheckpoint) {
  // keep_checkpoints = 3, a checkpoint every 50 steps; each rerun fails at once.
  fs::path file = config(kEndlessJob);
  ASSERT_EQ(run({"run", "--config", file.string(), "--set", "workload.epochs=25"}).exit_code, 0);
  const std::vector<long> good = checkpoint_steps(run_dir() / "checkpoints");
  ASSERT_FALSE(good.empty());
  const fs::path newest = run_dir() / "checkpoints" / ("model.ckpt-" + std::to_string(good.back()));
  const std::string newest_bytes = read_file(newest);
  for (int rerun = 0; rerun < 5; ++rerun) {
    ProcessResult r = run({"run", "--config", file.string(), "--set", "workload.epochs=0", "--set",
                           "workload.fail_at_step=" + std::to_string(good.back() + 3), "--set",
                           "workload.fail_kind=error"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("resuming from " + newest.string()));
    EXPECT_THAT(r.err, HasSubstr("not writing the checkpoint requested by hook 'checkpoints'"));
  }
  EXPECT_EQ(checkpoint_steps(run_dir() / "checkpoints"), good);
  EXPECT_EQ(read_file(newest), newest_bytes);
}

TEST_F(CliTest, SigtermReachesAHookBlockedInBeforeRunThroughShouldStop) {
  // global_step_waiter waits (forever by default) for a step this job never reaches, polling
  // should_stop(): the signal must become a stop request while it is still inside before_run.
  fs::path file = config(std::string(kEndlessJob) +
                         "\n[hook.wait]\nplugin = global_step_waiter\nwait_until_step = 1000000\n"
                         "poll_secs = 0.02\n");
  Process job({"run", "--config", file.string()}, dir_.path());
  ASSERT_TRUE(wait_until([&] {
    return read_file(dir_ / ".stderr").find("Waiting for global step 1000000") != std::string::npos;
  }));
  job.signal(SIGTERM);
  ProcessResult r = job.wait(std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
  EXPECT_THAT(r.err, AllOf(HasSubstr("stop requested: received SIGTERM"),
                           HasSubstr("stop requested while waiting for global step 1000000")));
  EXPECT_THAT(r.out, HasSubstr("job stopped (received SIGTERM)"));
}

TEST_F(CliTest, ASecondSignalExitsAtOnceNamingTheHookCallThatWasRunning) {
  const fs::path plugins = dir_ / "fixtures";
  fs::create_directories(plugins);
  copy_plugin(fixture_plugin("scripted"), plugins);
  fs::path file = config(std::string(kEndlessJob) + "\n[hook.stuck]\nplugin = scripted\ntrace = " +
                         (dir_ / "stuck.txt").string() + "\nblock_in_before_secs = 60\n");
  Process job({"run", "--config", file.string(), "--plugin-dir", plugins.string()}, dir_.path());
  ASSERT_TRUE(wait_until(
      [&] { return read_file(dir_ / "stuck.txt").find("stuck before_run") != std::string::npos; }));
  job.signal(SIGTERM);
  ASSERT_TRUE(wait_until([&] {
    return read_file(dir_ / ".stderr").find("stop requested: received SIGTERM") !=
           std::string::npos;
  }));
  job.signal(SIGTERM);
  ProcessResult r = job.wait(std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 128 + SIGTERM);
  EXPECT_THAT(r.err, HasSubstr("hookhost: second SIGTERM while hook 'stuck' (plugin 'scripted') "
                               "in before_run at global step 0 runs: exiting at once with status "
                               "143"));
}

TEST_F(CliTest, FreshPutsThePreviousRunBackWhenAHookRefusesToBeCreated) {
  const fs::path plugins = dir_ / "fixtures";
  fs::create_directories(plugins);
  copy_plugin(fixture_plugin("scripted"), plugins);
  fs::path file = config(kTrainingJob);
  ASSERT_EQ(run({"run", "--config", file.string()}).exit_code, 0);
  const std::string history = read_file(run_dir() / "history.csv");
  ProcessResult r =
      run({"run", "--config", file.string(), "--fresh", "--plugin-dir", plugins.string(), "--set",
           "hook.broken.plugin=scripted", "--set", "hook.broken.trace=" + (dir_ / "t.txt").string(),
           "--set", "hook.broken.create_fail=true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, AllOf(HasSubstr("create refused as configured"),
                           HasSubstr("--fresh: the job did not start; the previous run is back")));
  for (const auto& e : fs::directory_iterator(dir_.path()))
    EXPECT_NE(e.path().filename().string().rfind("run.old-", 0), 0u) << e.path();
  EXPECT_EQ(read_file(run_dir() / "history.csv"), history);
  EXPECT_TRUE(fs::exists(run_dir() / "checkpoints" / "model.ckpt-20"));
}

TEST_F(CliTest, ASecondJobOnTheSameRunDirectoryIsRefusedNamingTheFirst) {
  fs::path file = config(std::string(kEndlessJob) +
                         "\n[hook.wait]\nplugin = global_step_waiter\nwait_until_step = 1000000\n"
                         "poll_secs = 0.02\n");
  Process first({"run", "--config", file.string()}, dir_.path());
  ASSERT_TRUE(wait_until([&] {
    return read_file(dir_ / ".stderr").find("Waiting for global step") != std::string::npos;
  }));
  const fs::path other = dir_ / "other";
  fs::create_directories(other);
  ProcessResult second = run_hookhost({"run", "--config", file.string()}, other);
  EXPECT_EQ(second.exit_code, 2);
  EXPECT_THAT(second.err, AllOf(HasSubstr("the run directory " + run_dir().string() +
                                          " is in use by another hookhost job (pid " +
                                          std::to_string(first.pid()) + ")"),
                                HasSubstr("Nothing was run")));
  first.signal(SIGTERM);
  EXPECT_EQ(first.wait().exit_code, 128 + SIGTERM);
  // Once the first job is gone, the directory is free again (the lock died with the process).
  ProcessResult third = run_hookhost({"run", "--config", file.string(), "--set",
                                      "hook.wait.enabled=false", "--set", "workload.epochs=1"},
                                     other);
  EXPECT_EQ(third.exit_code, 0) << third.err;
}

TEST_F(CliTest, AnEndFailureUnderFailMakesTheJobFailAfterEveryEnd) {
  const fs::path plugins = dir_ / "fixtures";
  fs::create_directories(plugins);
  copy_plugin(fixture_plugin("scripted"), plugins);
  fs::path file = config(std::string(kTrainingJob) +
                         "\n[hook.strict]\nplugin = scripted\norder = -5\non_error = fail\n"
                         "fail_in = end\ntrace = " +
                         (dir_ / "strict.txt").string() + "\n");
  ProcessResult r = run({"run", "--config", file.string(), "--plugin-dir", plugins.string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err,
              AllOf(HasSubstr("hook 'strict' (plugin 'scripted'"), HasSubstr("failed in end"),
                    HasSubstr("on_error=fail: the job fails once every hook had its end")));
  EXPECT_THAT(r.out, HasSubstr("job failed"));
  // The hooks after it in the order still got their end().
  EXPECT_EQ(trace_calls(read_file(run_dir() / "trace.jsonl"), "end"), 1);
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
