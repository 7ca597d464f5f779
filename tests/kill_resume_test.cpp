// A job killed with SIGKILL at 20 different moments and resumed ends exactly like an uninterrupted
// one: the same final step and outcome, the same hook states (no step counted twice), the same
// history rows and the same TensorBoard scalars at the same steps. Checkpoints are written in the
// background, so a kill can land in the middle of a write: every checkpoint file a kill leaves
// must still verify, and the resumed job must start from the newest of them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>

#include "event_file_reader.hpp"
#include "plugin_files.hpp"
#include "process.hpp"
#include "storage/checkpoint.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::HasSubstr;
using ::testing::Not;

// Every stateful built-in hook, plus a recorder that counts its after_runs in its state and can
// kill the process once at a chosen step. `observers`: the hooks that only observe run behind the
// step (mode = observe), the recorder slowly, so the kill lands while steps wait in its queue.
// `sandboxed`: the observing built-ins also run in one runner (isolation_group), their steps one
// message each on the group's one worker; the recorder, which kills the job, stays in process.
std::string job_config(const fs::path& dir, int64_t kill_at, const std::string& kill_in,
                       bool observers = false, bool sandboxed = false) {
  const std::string recorder_observe = observers ? "mode = observe\nqueue = 16\n" : "";
  const std::string observe =
      recorder_observe +
      (sandboxed ? "isolation = process\nisolation_group = observers\n" : std::string());
  return "[run]\nrun_dir = run\nkeep_checkpoints = 0\n"
         "[workload]\nname = linreg\nepochs = 0\n"
         "[hook.stop]\nplugin = stop_at_step\nnum_steps = 120\n"
         "[hook.early]\nplugin = early_stopping\nmin_delta = 0.001\npatience = 40\n"
         "[hook.limit]\nplugin = time_limit\nmax_secs = 3600\n"
         "[hook.history]\nplugin = history_saver\nevery_n_steps = 3\ntensors = loss, weights\n" +
         observe + "[hook.rate]\nplugin = step_counter\nevery_n_steps = 10\nsummaries = true\n" +
         observe +
         "[hook.summaries]\nplugin = summary_saver\nsave_steps = 5\ntensors = loss, bias\n" +
         observe +
         "[hook.recorder]\nplugin = scripted\ntrace = " + (dir / "recorder.txt").string() +
         "\nkill_at_step = " + std::to_string(kill_at) + "\nkill_in = " + kill_in +
         "\nkill_marker = " + (dir / "killed").string() + "\n" +
         (observers ? recorder_observe +
                          "fetch = loss\nafter_run_sleep_ms = 1\nkill_by_context_step = true\n"
                    : "") +
         "[hook.checkpoints]\nplugin = checkpoint_saver\nsave_steps = 7\n";
}

struct Outcome {
  std::string summary_line;  // "job stopped (...)"
  int64_t first_step = -1;   // where the job started: the restored checkpoint's step, or 0
  int64_t final_step = -1;
  std::map<std::string, std::string> states;  // hook -> state bytes (time_limit's left out)
  std::vector<std::string> history;           // rows without the wall-time column
  std::map<std::pair<std::string, int64_t>, float> scalars;  // (tag, step) -> value
  std::set<int64_t> rate_steps;        // steps of global_step/sec (values are timings)
  std::vector<std::string> conflicts;  // one (tag, step) written with two values
};

Outcome outcome_of(const fs::path& dir, const ProcessResult& last) {
  Outcome o;
  std::smatch m;
  if (std::regex_search(last.out, m, std::regex(R"(hookhost: (job \w+ \([^\n]*\)))")))
    o.summary_line = m[1];
  if (std::regex_search(last.out, m, std::regex(R"(global step (\d+) -> (\d+)\))"))) {
    o.first_step = std::stoll(m[1]);
    o.final_step = std::stoll(m[2]);
  }
  const fs::path run = dir / "run";
  const auto newest = restore_latest_checkpoint(run / "checkpoints");
  if (newest && !newest->file.empty())
    for (const auto& [name, state] : newest->checkpoint.hook_states)
      if (name != "limit") o.states[name] = state.plugin_id + ":" + state.bytes;
  // A sandboxed hook's outputs are in its own run folder, <run_dir>/hooks/<instance>/.
  const fs::path history = fs::exists(run / "hooks" / "history")
                               ? run / "hooks" / "history" / "history.csv"
                               : run / "history.csv";
  const auto lines = lines_of(read_file(history));
  for (const auto& line : lines) {
    // step,wall_time,...: the wall time is the only column allowed to differ.
    const auto first = line.find(','), second = line.find(',', first + 1);
    o.history.push_back(line.substr(0, first) + line.substr(second));
  }
  std::vector<fs::path> files = event_files(run);
  for (const char* hook : {"rate", "summaries"})
    for (const fs::path& file : event_files(run / "hooks" / hook)) files.push_back(file);
  for (const auto& file : files)
    for (const Event& event : read_events(file))
      for (const auto& [tag, value] : event.scalars) {
        if (tag == "global_step/sec") {
          o.rate_steps.insert(event.step);
          continue;
        }
        auto [it, fresh] = o.scalars.emplace(std::make_pair(tag, event.step), value);
        if (!fresh && it->second != value)
          o.conflicts.push_back(tag + "@" + std::to_string(event.step));
      }
  return o;
}

// A resumed job ended as the uninterrupted one: outcome, step, states, rows, scalars.
void expect_same_end(const Outcome& got, const Outcome& reference) {
  EXPECT_EQ(got.summary_line, reference.summary_line);
  EXPECT_EQ(got.final_step, reference.final_step);
  EXPECT_EQ(got.states, reference.states);
  EXPECT_EQ(got.history, reference.history);
  EXPECT_EQ(got.scalars, reference.scalars);
  EXPECT_EQ(got.rate_steps, reference.rate_steps);
  EXPECT_TRUE(got.conflicts.empty()) << ::testing::PrintToString(got.conflicts);
}

ProcessResult run_job(const fs::path& dir, int64_t kill_at, const std::string& kill_in,
                      bool observers = false, bool sandboxed = false) {
  write_file(dir / "job.ini", job_config(dir, kill_at, kill_in, observers, sandboxed));
  const fs::path fixtures = dir / "fixtures";
  if (!fs::exists(fixtures / "scripted.so")) {
    fs::create_directories(fixtures);
    copy_plugin(fixture_plugin("scripted"), fixtures);
  }
  return run_hookhost({"run", "--config", (dir / "job.ini").string(), "--plugin-dir",
                       fixtures.string(), "--log-level", "warn"},
                      dir);
}

TEST(KillResume, TwentyKillsEachResumeToTheUninterruptedResult) {
  TempDir root;
  const fs::path ref_dir = root / "reference";
  fs::create_directories(ref_dir);
  const ProcessResult ref_run = run_job(ref_dir, -1, "after_run");
  ASSERT_EQ(ref_run.exit_code, 0) << ref_run.err;
  const Outcome reference = outcome_of(ref_dir, ref_run);
  ASSERT_GT(reference.final_step, 60) << reference.summary_line;
  ASSERT_EQ(reference.states.count("recorder"), 1u);
  EXPECT_EQ(reference.states.at("recorder"),
            "scripted:after_runs=" + std::to_string(reference.final_step));
  ASSERT_GT(reference.history.size(), 5u);
  ASSERT_FALSE(reference.scalars.empty());
  ASSERT_FALSE(reference.rate_steps.empty());
  EXPECT_TRUE(reference.conflicts.empty());

  // Before, at and after checkpoint steps (every 7), in before_run and in after_run.
  const std::vector<std::pair<int64_t, const char*>> kills = {
      {1, "after_run"},   {2, "before_run"},
      {6, "after_run"},   {7, "before_run"},
      {7, "after_run"},   {8, "before_run"},
      {10, "after_run"},  {13, "before_run"},
      {14, "after_run"},  {15, "after_run"},
      {20, "before_run"}, {21, "after_run"},
      {22, "before_run"}, {29, "after_run"},
      {35, "after_run"},  {36, "before_run"},
      {41, "after_run"},  {49, "before_run"},
      {50, "after_run"},  {reference.final_step - 1, "after_run"}};
  ASSERT_EQ(kills.size(), 20u);
  for (const auto& [step, callback] : kills) {
    SCOPED_TRACE("killed at global step " + std::to_string(step) + " in " + callback);
    const fs::path dir = root / ("kill-" + std::to_string(step) + "-" + callback);
    fs::create_directories(dir);
    const ProcessResult killed = run_job(dir, step, callback);
    ASSERT_EQ(killed.exit_code, 128 + SIGKILL) << killed.err;
    ASSERT_TRUE(fs::exists(dir / "killed"));
    // Whatever the kill interrupted, no checkpoint file is torn: each is complete or absent.
    const std::vector<fs::path> left = list_checkpoints(dir / "run" / "checkpoints");
    for (const auto& file : left) EXPECT_NO_THROW(read_checkpoint(file)) << file;
    const int64_t newest = left.empty() ? 0 : read_checkpoint(left.front()).global_step;
    const ProcessResult resumed = run_job(dir, step, callback);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    EXPECT_THAT(resumed.err + resumed.out, Not(HasSubstr("unusable checkpoint")));
    const Outcome got = outcome_of(dir, resumed);
    EXPECT_EQ(got.first_step, newest);  // resumed from the newest complete checkpoint
    expect_same_end(got, reference);
  }
}

// The same with the observing hooks behind the step: killed while the recorder's queue holds
// steps, the resumed job still ends as the uninterrupted one, because every checkpoint was taken
// after every queue drained (its hook states are its step's) and nothing is counted twice. Also
// with the observing built-ins sandboxed in one isolation group (one worker, one runner).
class KillResumeObservers : public ::testing::TestWithParam<bool> {};

TEST_P(KillResumeObservers, KilledDuringABacklogResumeToTheUninterruptedResult) {
  const bool sandboxed = GetParam();
  TempDir root;
  const fs::path ref_dir = root / "reference";
  fs::create_directories(ref_dir);
  const ProcessResult ref_run = run_job(ref_dir, -1, "after_run", true, sandboxed);
  ASSERT_EQ(ref_run.exit_code, 0) << ref_run.err;
  const Outcome reference = outcome_of(ref_dir, ref_run);
  ASSERT_GT(reference.final_step, 60) << reference.summary_line;
  EXPECT_EQ(reference.states.at("recorder"),
            "scripted:after_runs=" + std::to_string(reference.final_step));
  ASSERT_GT(reference.history.size(), 5u);
  // The observers' results match the hooks' run on the step.
  const fs::path step_dir = root / "on-the-step";
  fs::create_directories(step_dir);
  const ProcessResult step_run = run_job(step_dir, -1, "after_run", false);
  ASSERT_EQ(step_run.exit_code, 0) << step_run.err;
  const Outcome on_step = outcome_of(step_dir, step_run);
  EXPECT_EQ(on_step.states, reference.states);
  EXPECT_EQ(on_step.history, reference.history);
  EXPECT_EQ(on_step.scalars, reference.scalars);

  for (const int64_t step : {6, 14, 30, 50}) {
    SCOPED_TRACE("killed at global step " + std::to_string(step));
    const fs::path dir = root / ("kill-" + std::to_string(step));
    fs::create_directories(dir);
    const ProcessResult killed = run_job(dir, step, "after_run", true, sandboxed);
    ASSERT_EQ(killed.exit_code, 128 + SIGKILL) << killed.err;
    const std::vector<fs::path> left = list_checkpoints(dir / "run" / "checkpoints");
    for (const auto& file : left) {
      // Each checkpoint holds the recorder's state of exactly its step.
      const Checkpoint written = read_checkpoint(file);
      if (written.global_step == 0) continue;  // the first save, before any after_run
      ASSERT_EQ(written.hook_states.count("recorder"), 1u) << file;
      EXPECT_EQ(written.hook_states.at("recorder").bytes,
                "after_runs=" + std::to_string(written.global_step));
    }
    const ProcessResult resumed = run_job(dir, step, "after_run", true, sandboxed);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    const Outcome got = outcome_of(dir, resumed);
    expect_same_end(got, reference);
  }
}

INSTANTIATE_TEST_SUITE_P(InProcessAndSandboxedGroup, KillResumeObservers, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "SandboxedInOneGroup" : "InProcess";
                         });

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
