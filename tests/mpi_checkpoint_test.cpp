// Checkpoints of distributed jobs end to end: real `mpirun --oversubscribe -np N hookhost run`
// processes on the built-in linreg workload. Whichever process asks, the chief writes one file for
// the job; every process learns where the chief's newest checkpoint is; a job resumes with another
// number of processes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <hookhost/host/checkpoint.hpp>
#include <map>

#include "mpi_launch.hpp"
#include "plugins/trust.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::HasSubstr;

class MpiCheckpoint : public ::testing::Test {
 protected:
  ProcessResult mpirun(int ranks, const fs::path& config) {
    return mpirun_hookhost(
        ranks, {"--config", config.string(), "--plugin-dir", HOOKHOST_FIXTURE_DIR}, dir_.path());
  }
  fs::path write_config(const std::string& name, const std::string& text) {
    write_file(dir_ / name, text);
    return dir_ / name;
  }
  fs::path checkpoint(int64_t step) const {
    return dir_ / "out" / "checkpoints" / ("model.ckpt-" + std::to_string(step));
  }
  // What a checkpoint_probe's line says after "last=": "STEP path=PATH" or "none".
  static std::string last_written(const std::string& line) {
    const auto at = line.find(" last=");
    return at == std::string::npos ? std::string() : line.substr(at + 6);
  }
  // A scripted hook on rank R that traces its creation and restored state into trace-R.txt.
  static std::string counter(int rank) {
    const std::string r = std::to_string(rank);
    return "[hook.counter" + r + "]\nplugin = scripted\nranks = " + r + "\ntrace = trace-" + r +
           ".txt\ntrace_create = true\n";
  }

  TempDir dir_;
};

// The rank whose hook makes the request: the chief, or another process.
class MpiCheckpointRequestOnRank : public MpiCheckpoint, public ::testing::WithParamInterface<int> {
 protected:
  static std::string requesting_rank() { return std::to_string(GetParam()); }
};

TEST_P(MpiCheckpointRequestOnRank, CheckpointSaverWritesEveryTenthStep) {
  const fs::path config = write_config(
      "job.ini",
      "[run]\ndistributed = mpi\nrun_dir = out\ncheckpoint_wait = true\nkeep_checkpoints = 0\n"
      "[workload]\nepochs = 0\n"
      "[hook.stop]\nplugin = stop_at_step\nlast_step = 30\n"
      "[hook.checkpoint_saver]\nsave_steps = 10\nranks = " +
          requesting_rank() + "\n");
  const ProcessResult r = mpirun(2, config);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const int64_t step : {0, 10, 20, 30})
    EXPECT_TRUE(fs::exists(checkpoint(step))) << "step " << step << "\n" << r.err;
  EXPECT_EQ(count_occurrences(r.err, "wrote checkpoint"), 4) << r.err;
  // Only the chief writes, and it names who asked.
  EXPECT_FALSE(fs::exists(dir_ / "out" / "rank-1" / "checkpoints"));
  if (GetParam() != 0) {
    EXPECT_EQ(count_occurrences(r.err, "(requested by a hook on another process)"), 4) << r.err;
  }
}

TEST_P(MpiCheckpointRequestOnRank, LastWrittenNamesTheChiefsCheckpointOnEveryRank) {
  // The probe on the requesting rank asks at steps 5 and 10. The chief waits for the save of
  // step 5 before it snapshots step 10, so by the boundary after step 11 every process has been
  // told about step 5, whatever the speed of the disk.
  std::string hooks;
  for (int rank = 0; rank < 2; ++rank)
    hooks += "[hook.probe" + std::to_string(rank) +
             "]\nplugin = checkpoint_probe\nranks = " + std::to_string(rank) + "\ntrace = probe-" +
             std::to_string(rank) + ".txt\n" + (rank == GetParam() ? "request_at = 5, 10\n" : "");
  const fs::path config = write_config(
      "job.ini",
      "[run]\ndistributed = mpi\nrun_dir = out\ncheckpoint_wait = true\n[workload]\nepochs = 0\n"
      "[hook.stop]\nplugin = stop_at_step\nlast_step = 20\n" +
          hooks);
  const ProcessResult r = mpirun(2, config);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(fs::exists(checkpoint(5))) << r.err;
  ASSERT_TRUE(fs::exists(checkpoint(10))) << r.err;

  std::map<int, std::string> told_about_5;  // by rank: what last_written said of step 5
  for (int rank = 0; rank < 2; ++rank) {
    const auto lines = lines_of(dir_ / ("probe-" + std::to_string(rank) + ".txt"));
    ASSERT_FALSE(lines.empty()) << "rank " << rank;
    bool seen_a_checkpoint = false;
    for (const auto& line : lines) {
      const std::string said = last_written(line);
      ASSERT_FALSE(said.empty()) << line;
      if (said == "none") {
        // Never again once a checkpoint was named: the newest only moves forward.
        EXPECT_FALSE(seen_a_checkpoint) << "rank " << rank << ": " << line;
        continue;
      }
      seen_a_checkpoint = true;
      EXPECT_TRUE(said.rfind("5 path=", 0) == 0 || said.rfind("10 path=", 0) == 0) << line;
      if (said.rfind("5 path=", 0) == 0) told_about_5[rank] = said.substr(7);
    }
    // By the before_run of step 12 (global step 11 before it) every process knows step 5.
    const auto step_12 = std::find_if(lines.begin(), lines.end(), [](const std::string& line) {
      return line.rfind("before_run gs=11 ", 0) == 0;
    });
    ASSERT_NE(step_12, lines.end()) << "rank " << rank;
    EXPECT_NE(last_written(*step_12), "none") << "rank " << rank << ": " << *step_12;
    EXPECT_NE(last_written(lines.back()), "none") << "rank " << rank << ": " << lines.back();
  }
  // Both name the one file the chief wrote.
  ASSERT_EQ(told_about_5.size(), 2u);
  EXPECT_EQ(told_about_5[1], told_about_5[0]);
  EXPECT_TRUE(fs::equivalent(dir_ / told_about_5[0], checkpoint(5))) << told_about_5[0];
}

TEST_P(MpiCheckpointRequestOnRank, ARecoveryWritesAPendingCheckpointOfTheRestoredState) {
  // The probe asks in before_run of the step whose session aborts (global step 15). The request is
  // still pending when the session is recreated: it must be taken once the newest checkpoint
  // (step 10) is restored, not of the freshly reset workload at step 0.
  const fs::path config = write_config(
      "job.ini",
      "[run]\ndistributed = mpi\nrun_dir = out\ncheckpoint_wait = true\nkeep_checkpoints = 0\n"
      "[workload]\nepochs = 0\nfail_at_step = 15\nfail_kind = aborted\n"
      "[hook.stop]\nplugin = stop_at_step\nlast_step = 20\n"
      "[hook.checkpoint_saver]\nsave_steps = 10\n"
      "[hook.probe]\nplugin = checkpoint_probe\nranks = " +
          requesting_rank() + "\ntrace = probe.txt\nrequest_in = before_run\nrequest_at = 15\n");
  const ProcessResult r = mpirun(2, config);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_THAT(r.err, HasSubstr("recovery: restored"));
  // Step 0 is written once, when the first session is created.
  EXPECT_EQ(count_occurrences(r.err, "model.ckpt-0 (requested by"), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("model.ckpt-10 (requested by")) << r.err;
  EXPECT_TRUE(fs::exists(checkpoint(20)));
}

TEST_P(MpiCheckpointRequestOnRank, AnObserversRequestsAreWrittenByTheChiefWithTheStepsTheyName) {
  // A probe observer on the requesting rank asks in after_run of live global steps 5 and 105: the
  // first while its before_run still runs on the training thread (it fetches nothing, so that
  // lasts its first 100 calls), the second with both its calls on its worker thread, behind the
  // step. Both ranks also run a scripted observer that saves its after_run count. A request is
  // taken at the first boundary after it was made, the training thread never more than queue + 1
  // steps ahead of the worker; the queues drain first, so the chief's file holds every rank's
  // observer state of exactly the step it names.
  const auto job = [&](int last_step) {
    std::string hooks;
    for (int rank = 0; rank < 2; ++rank) {
      const std::string r = std::to_string(rank);
      hooks += "[hook.probe" + r + "]\nplugin = checkpoint_probe\nranks = " + r +
               "\ntrace = probe-" + r + ".txt\nmode = observe\nqueue = 2\n" +
               (rank == GetParam() ? "request_at = 5, 105\n" : "") + counter(rank) +
               "mode = observe\nqueue = 2\nfetch = loss\nafter_run_sleep_ms = 1\n";
    }
    return write_config("job.ini",
                        "[run]\ndistributed = mpi\nrun_dir = out\ncheckpoint_wait = true\n"
                        "keep_checkpoints = 0\n[workload]\nepochs = 0\n"
                        "[hook.stop]\nplugin = stop_at_step\nlast_step = " +
                            std::to_string(last_step) + "\n" + hooks);
  };
  const ProcessResult r = mpirun(2, job(120));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Two checkpoints for the job, in the chief's folder, oldest first.
  std::vector<fs::path> files = list_checkpoints(dir_ / "out" / "checkpoints");
  std::reverse(files.begin(), files.end());
  ASSERT_EQ(files.size(), 2u) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out" / "rank-1" / "checkpoints"));
  EXPECT_EQ(count_occurrences(r.err, "wrote checkpoint"), 2) << r.err;
  std::vector<int64_t> steps;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const int64_t asked_at = i == 0 ? 5 : 105;
    const Checkpoint saved = read_checkpoint(files[i]);
    const int64_t step = saved.global_step;
    steps.push_back(step);
    EXPECT_EQ(files[i], checkpoint(step));
    EXPECT_GE(step, asked_at);
    EXPECT_LE(step, asked_at + 2 + 1);
    EXPECT_THAT(r.err,
                HasSubstr("model.ckpt-" + std::to_string(step) + " (requested by " +
                          (GetParam() == 0 ? "hook 'probe0': probe at " + std::to_string(asked_at)
                                           : std::string("a hook on another process")) +
                          ")"));
    // Each rank's observer had seen every step up to this one, and no more (rank 1's state is
    // under "NAME@1").
    const std::string count = "after_runs=" + std::to_string(step);
    ASSERT_EQ(saved.hook_states.count("counter0"), 1u) << files[i];
    ASSERT_EQ(saved.hook_states.count("counter1@1"), 1u) << files[i];
    EXPECT_EQ(saved.hook_states.at("counter0").bytes, count) << files[i];
    EXPECT_EQ(saved.hook_states.at("counter1@1").bytes, count) << files[i];
    // Each tagged with the build of the plugin its process loaded, rank 1's sent with its state.
    const std::string build = sha256_of_file(fixture_plugin("scripted"));
    EXPECT_EQ(saved.hook_states.at("counter0").plugin_build, build) << files[i];
    EXPECT_EQ(saved.hook_states.at("counter1@1").plugin_build, build) << files[i];
  }
  for (int rank = 0; rank < 2; ++rank) {
    const auto lines = lines_of(dir_ / ("trace-" + std::to_string(rank) + ".txt"));
    ASSERT_GE(lines.size(), 2u) << "rank " << rank;
    EXPECT_THAT(lines[lines.size() - 2], HasSubstr("end outcome=stopped")) << "rank " << rank;
    EXPECT_THAT(lines[lines.size() - 2], HasSubstr("gs=120"));
    EXPECT_THAT(lines.back(), HasSubstr("destroy"));
    // What a probe is told names one of the chief's files, if anything yet (they are written in
    // the background: not when it is told).
    for (const auto& line : lines_of(dir_ / ("probe-" + std::to_string(rank) + ".txt"))) {
      const std::string said = last_written(line);
      ASSERT_FALSE(said.empty()) << line;
      if (said == "none") continue;
      const int64_t step = std::stoll(said);
      ASSERT_NE(std::find(steps.begin(), steps.end(), step), steps.end()) << line;
      EXPECT_TRUE(fs::equivalent(dir_ / said.substr(said.find("path=") + 5), checkpoint(step)))
          << line;
    }
  }

  // The job resumes from the newest on every rank, each observer with its count of that step.
  const ProcessResult resumed = mpirun(2, job(130));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(count_occurrences(resumed.err, "resuming from"), 2) << resumed.err;
  EXPECT_THAT(resumed.err, HasSubstr("at global step " + std::to_string(steps[1])));
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<std::string> states;
    for (const auto& line : lines_of(dir_ / ("trace-" + std::to_string(rank) + ".txt")))
      if (line.find(" create state=") != std::string::npos) states.push_back(line);
    ASSERT_EQ(states.size(), 1u) << "rank " << rank;
    EXPECT_THAT(states[0], HasSubstr("create state=after_runs=" + std::to_string(steps[1])))
        << "rank " << rank;
  }
}

INSTANTIATE_TEST_SUITE_P(OnEachKindOfRank, MpiCheckpointRequestOnRank, ::testing::Values(0, 1),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "Rank" + std::to_string(info.param);
                         });

// The number of processes of the resumed job.
class MpiCheckpointResume : public MpiCheckpoint, public ::testing::WithParamInterface<int> {};

TEST_P(MpiCheckpointResume, AJobOfTwoProcessesResumesWithAnotherNumber) {
  const int resumed_ranks = GetParam();
  const std::string common =
      "[run]\ndistributed = mpi\nrun_dir = out\ncheckpoint_wait = true\n[workload]\nepochs = 0\n"
      "[hook.checkpoint_saver]\nsave_steps = 10\n";
  const fs::path first =
      write_config("first.ini", common + "[hook.stop]\nplugin = stop_at_step\nlast_step = 20\n" +
                                    counter(0) + counter(1));
  const ProcessResult two = mpirun(2, first);
  ASSERT_EQ(two.exit_code, 0) << two.err;
  ASSERT_TRUE(fs::exists(checkpoint(20)));

  std::string hooks;
  for (int rank = 0; rank < resumed_ranks; ++rank) hooks += counter(rank);
  const fs::path second = write_config(
      "second.ini", common + "[hook.stop]\nplugin = stop_at_step\nlast_step = 40\n" + hooks);
  const ProcessResult resumed = mpirun(resumed_ranks, second);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(count_occurrences(resumed.err, "resuming from"), resumed_ranks) << resumed.err;
  EXPECT_THAT(resumed.err, HasSubstr("at global step 20"));
  for (int rank = 0; rank < resumed_ranks; ++rank) {
    const auto lines = lines_of(dir_ / ("trace-" + std::to_string(rank) + ".txt"));
    std::vector<std::string> states;  // one "create state=..." line per creation that had one
    for (const auto& line : lines)
      if (line.find(" create state=") != std::string::npos) states.push_back(line);
    if (rank < 2) {
      // Its own state from the run of two: 20 after_runs; created twice, restored once.
      ASSERT_EQ(states.size(), 1u) << "rank " << rank;
      EXPECT_THAT(states[0], HasSubstr("after_runs=20"));
    } else {
      EXPECT_TRUE(states.empty()) << "rank " << rank << " had no saved state: " << states[0];
      EXPECT_EQ(count_occurrences(read_file(dir_ / ("trace-" + std::to_string(rank) + ".txt")),
                                  " create\n"),
                1);
    }
    EXPECT_THAT(lines.back(), HasSubstr("destroy"));
    ASSERT_GE(lines.size(), 2u);
    EXPECT_THAT(lines[lines.size() - 2], HasSubstr("end outcome=stopped"));
    EXPECT_THAT(lines[lines.size() - 2], HasSubstr("gs=40"));
  }
  EXPECT_TRUE(fs::exists(checkpoint(40)));
}

INSTANTIATE_TEST_SUITE_P(FewerAndMore, MpiCheckpointResume, ::testing::Values(1, 3),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "Processes";
                         });

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
