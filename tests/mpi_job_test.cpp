// Distributed jobs end to end: real `mpirun --oversubscribe -np N hookhost run` processes on the
// built-in linreg workload, checked through the files each rank's hooks write and the program's
// output. Open MPI refuses to run as root unless told; the two variables that allow it are set for
// the launched job only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <map>
#include <numeric>
#include <regex>
#include <sstream>

#include "mpi_launch.hpp"
#include "placement_fork.hpp"
#include "report/run_record.hpp"
#include "support/sanitizer.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::HasSubstr;

class MpiJob : public ::testing::Test {
 protected:
  ProcessResult mpirun(int ranks, const std::vector<std::string>& args) {
    return mpirun_hookhost(ranks, args, dir_.path());
  }
  ProcessResult single(const std::vector<std::string>& args) {
    std::vector<std::string> all = {"run"};
    all.insert(all.end(), args.begin(), args.end());
    return run_hookhost(all, dir_.path());
  }
  fs::path write_config(const std::string& name, const std::string& text) {
    write_file(dir_ / name, text);
    return dir_ / name;
  }
  // One scripted tracing hook per rank, each with its own trace file (trace-R.txt).
  static std::string trace_hooks(int ranks, const std::string& extra = {}) {
    std::string text;
    for (int r = 0; r < ranks; ++r)
      text += "[hook.trace" + std::to_string(r) +
              "]\nplugin = scripted\nranks = " + std::to_string(r) + "\ntrace = trace-" +
              std::to_string(r) + ".txt\n" + extra + "\n";
    return text;
  }
  std::vector<std::string> trace(int rank) const {
    return lines_of(dir_ / ("trace-" + std::to_string(rank) + ".txt"));
  }
  static std::string last_line_starting(const std::vector<std::string>& lines,
                                        const std::string& prefix) {
    std::string found;
    for (const auto& line : lines)
      if (line.find(prefix) != std::string::npos) found = line;
    return found;
  }
  // "end outcome=... reason=..." without the instance name, which differs per rank.
  static std::string end_line(const std::vector<std::string>& lines) {
    const std::string line = last_line_starting(lines, " end outcome=");
    const auto at = line.find("end outcome=");
    return at == std::string::npos ? std::string() : line.substr(at);
  }
  // The columns of a history CSV but the wall time, by step.
  static std::map<int64_t, std::vector<double>> history(const fs::path& file) {
    std::map<int64_t, std::vector<double>> rows;
    std::vector<std::string> lines = lines_of(file);
    if (lines.empty()) return rows;
    std::vector<std::string> header;
    std::stringstream head(lines[0]);
    for (std::string cell; std::getline(head, cell, ',');) header.push_back(cell);
    for (std::size_t i = 1; i < lines.size(); ++i) {
      std::stringstream row(lines[i]);
      std::vector<double> values;
      int64_t step = -1;
      std::size_t column = 0;
      for (std::string cell; std::getline(row, cell, ','); ++column) {
        if (column < header.size() && header[column] == "step") {
          step = std::stoll(cell);
        } else if (column < header.size() && header[column].find("time") == std::string::npos) {
          values.push_back(std::stod(cell));
        }
      }
      rows[step] = values;
    }
    return rows;
  }

  TempDir dir_;
};

// A test of a hook's request (a stop, a checkpoint, a failure) runs once with the request on the
// chief and once on another rank: the agreement must count every process alike.
class MpiJobRequestOnRank : public MpiJob, public ::testing::WithParamInterface<int> {
 protected:
  static std::string requesting_rank() { return std::to_string(GetParam()); }
};

std::string rank_name(const ::testing::TestParamInfo<int>& info) {
  return "Rank" + std::to_string(info.param);
}

TEST_P(MpiJobRequestOnRank, TwoRanksStopTogetherAtLastStepWithOneReason) {
  const fs::path config = write_config("job.ini",
                                       "[run]\ndistributed = mpi\nrun_dir = out\n"
                                       "[workload]\nepochs = 0\n"
                                       "[hook.stop]\nplugin = stop_at_step\n"
                                       "last_step = 30\nranks = " +
                                           requesting_rank() + "\n" + trace_hooks(2));
  const ProcessResult r =
      mpirun(2, {"--config", config.string(), "--plugin-dir", HOOKHOST_FIXTURE_DIR});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int rank = 0; rank < 2; ++rank) {
    const auto lines = trace(rank);
    EXPECT_THAT(last_line_starting(lines, " after_run gs="), HasSubstr("after_run gs=29 live=30"))
        << "rank " << rank;
    EXPECT_THAT(end_line(lines), HasSubstr("end outcome=stopped"));
    EXPECT_THAT(end_line(lines), HasSubstr("reached the step limit (last_step=30"));
    EXPECT_THAT(end_line(lines), HasSubstr("(rank " + requesting_rank() + ")"));
  }
  EXPECT_EQ(end_line(trace(0)), end_line(trace(1)));
  // The job's summary comes from the chief; the other rank prints one line.
  EXPECT_EQ(count_occurrences(r.out, "hookhost: job stopped"), 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("hookhost: rank 1: job stopped"));
  EXPECT_THAT(r.err, HasSubstr("[rank 1]"));
  // The agreement at the job's close passes the reason on without naming a second rank.
  EXPECT_FALSE(std::regex_search(r.out + r.err, std::regex(R"(\(rank \d+\) \(rank \d+\))")))
      << r.out << r.err;
}

// An observer (mode = observe) asks for a stop from its worker thread, behind the step, on one
// rank: every rank stops after the same step, at most queue + 1 steps after the step whose call
// asked (docs/observers.md), with the observer's reason, and every step queued to it still reaches
// it before its end.
TEST_P(MpiJobRequestOnRank, AnObserversStopOnOneRankStopsEveryRankWithinQueuePlusOneSteps) {
  const fs::path config = write_config(
      "job.ini",
      "[run]\ndistributed = mpi\nrun_dir = out\n[workload]\nepochs = 0\n"
      // Ends the job with another reason should the observer's stop be lost.
      "[hook.stop]\nplugin = stop_at_step\nlast_step = 200\n"
      "[hook.obs]\nplugin = scripted\nranks = " +
          requesting_rank() +
          "\ntrace = obs.txt\nmode = observe\nqueue = 3\nfetch = loss\nafter_run_sleep_ms = 5\n"
          "stop_at_iteration = 4\n\n" +
          trace_hooks(2));
  const ProcessResult r =
      mpirun(2, {"--config", config.string(), "--plugin-dir", HOOKHOST_FIXTURE_DIR});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto observer = lines_of(dir_ / "obs.txt");
  std::vector<int> delivered;
  for (const auto& line : starting_with(observer, "obs after_run gs="))
    delivered.push_back(std::stoi(line.substr(std::string("obs after_run gs=").size())));
  ASSERT_GE(delivered.size(), 5u) << r.err;
  // Asked in after_run of global step 4 (iteration 4): at most queue + 1 = 4 more steps ran.
  EXPECT_LE(delivered.back(), 4 + 3 + 1);
  std::vector<int> every_step(static_cast<std::size_t>(delivered.back()) + 1);
  std::iota(every_step.begin(), every_step.end(), 0);
  EXPECT_EQ(delivered, every_step);
  EXPECT_THAT(end_line(observer), HasSubstr("end outcome=stopped"));
  EXPECT_EQ(observer.back(), "obs destroy");
  for (int rank = 0; rank < 2; ++rank) {
    const auto lines = trace(rank);
    // Every rank ran the steps the observer saw, and no more.
    EXPECT_THAT(last_line_starting(lines, " after_run gs="),
                HasSubstr("after_run gs=" + std::to_string(delivered.back()) + " "))
        << "rank " << rank;
    EXPECT_THAT(end_line(lines), HasSubstr("end outcome=stopped"));
    EXPECT_THAT(end_line(lines),
                HasSubstr("hook 'obs': asked in after_run (rank " + requesting_rank() + ")"));
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines.back(), "trace" + std::to_string(rank) + " destroy");
  }
  EXPECT_EQ(end_line(trace(0)), end_line(trace(1)));
  EXPECT_EQ(count_occurrences(r.out, "hookhost: job stopped"), 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("hookhost: rank 1: job stopped"));
}

TEST_F(MpiJob, ChiefOnlyHooksWriteTheirOutputsOnce) {
  const fs::path config = write_config("job.ini",
                                       "[run]\ndistributed = mpi\nrun_dir = out\n"
                                       "checkpoint_wait = true\n"
                                       "[workload]\nepochs = 0\n"
                                       "[hook.stop]\nplugin = stop_at_step\nlast_step = 20\n"
                                       "[hook.checkpoint_saver]\nsave_steps = 10\n"
                                       "[hook.history_saver]\nevery_n_steps = 1\n"
                                       "[hook.summary_saver]\nsave_steps = 5\n");
  const ProcessResult r = mpirun(2, {"--config", config.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "out" / "checkpoints" / "model.ckpt-20"));
  EXPECT_TRUE(fs::exists(dir_ / "out" / "history.csv"));
  EXPECT_EQ(lines_of(dir_ / "out" / "history.csv").size(), 21u);  // the header and 20 steps
  // Rank 1 has a run directory of its own, and none of the chief's outputs in it.
  ASSERT_TRUE(fs::is_directory(dir_ / "out" / "rank-1"));
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "out" / "rank-1"))
    if (entry.path().filename() != ".hookhost.lock")
      ADD_FAILURE() << "rank 1 wrote " << entry.path();
  EXPECT_EQ(count_occurrences(r.err, "wrote checkpoint"), 3) << r.err;  // steps 0, 10 and 20
  // One run record for the job, the chief's (operations.md), naming the whole job.
  const RunRecord record = read_run_record(dir_ / "out" / kRunRecordFile);
  ASSERT_EQ(record.starts.size(), 1u);
  EXPECT_EQ(record.starts[0].rank, 0);
  EXPECT_EQ(record.starts[0].world, 2);
  ASSERT_EQ(record.costs.size(), 1u);
  EXPECT_EQ(record.costs[0].global_step, 20);
}

// A rank that dies ends the job (the launcher ends the others), and the restart resumes every rank
// from the chief's checkpoint (limits.md): no elastic membership, no step lost past it.
TEST_F(MpiJob, ARankThatDiesEndsTheJobAndTheRestartResumesFromTheChiefsCheckpoint) {
  const fs::path config =
      write_config("job.ini",
                   "[run]\ndistributed = mpi\nrun_dir = out\n[workload]\nepochs = 0\n"
                   "[hook.stop]\nplugin = stop_at_step\nlast_step = 20\n"
                   "[hook.checkpoint_saver]\nsave_steps = 5\n"
                   "[hook.killer]\nplugin = scripted\nranks = 1\ntrace = " +
                       (dir_ / "trace.txt").string() +
                       "\nkill_at_step = 7\nkill_marker = " + (dir_ / "killed").string() + "\n");
  const std::vector<std::string> args{"--config", config.string(), "--plugin-dir",
                                      HOOKHOST_FIXTURE_DIR};
  const ProcessResult died = mpirun(2, args);
  EXPECT_NE(died.exit_code, 0) << died.out << died.err;
  EXPECT_TRUE(fs::exists(dir_ / "killed"));
  EXPECT_TRUE(fs::exists(dir_ / "out" / "checkpoints" / "model.ckpt-5"));
  EXPECT_FALSE(fs::exists(dir_ / "out" / "checkpoints" / "model.ckpt-10"));
  EXPECT_FALSE(fs::exists(dir_ / "out" / "rank-1" / "checkpoints"));  // the chief's alone

  const ProcessResult again = mpirun(2, args);
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  for (const char* rank : {"[rank 0]", "[rank 1]"})
    EXPECT_THAT(again.err, HasSubstr(std::string(rank) + " [hookhost] [info] resuming from " +
                                     (dir_ / "out" / "checkpoints" / "model.ckpt-5").string() +
                                     " at global step 5"));
  EXPECT_THAT(again.out, HasSubstr("at global step 20"));
}

// Live control of a distributed job is the chief's: its run directory has the control socket, a
// rank's folder none, and hookhost ctl there says where to go (tests/mpi_live_control_test.cpp).
TEST_F(MpiJob, OnlyTheChiefsRunDirectoryTakesLiveControlAndCtlSaysSo) {
  const fs::path config = write_config("job.ini",
                                       "[run]\ndistributed = mpi\nrun_dir = out\n"
                                       "[workload]\nepochs = 0\nstep_delay_ms = 5\n"
                                       "[hook.stop]\nplugin = stop_at_step\nlast_step = 100000\n");
  Process job =
      mpirun_process(2, hookhost_binary(), {"run", "--config", config.string()}, dir_.path());
  ASSERT_TRUE(wait_until([&] { return fs::exists(dir_ / "out" / "rank-1" / ".hookhost.lock"); }));
  ASSERT_TRUE(wait_until([&] { return fs::exists(dir_ / "out" / "control.sock"); }));
  fs::create_directories(dir_ / "ctl");
  const ProcessResult ctl =
      run_hookhost({"ctl", (dir_ / "out" / "rank-1").string(), "status"}, dir_ / "ctl");
  EXPECT_EQ(ctl.exit_code, 1);
  EXPECT_THAT(ctl.err, HasSubstr("a rank folder of a distributed job, whose live control is the "
                                 "chief's run directory"));
  EXPECT_FALSE(fs::exists(dir_ / "out" / "rank-1" / "control.sock"));
  EXPECT_EQ(run_hookhost({"ctl", (dir_ / "out").string(), "stop"}, dir_ / "ctl").exit_code, 0);
  const ProcessResult r = job.wait();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("hookhost ctl: asked to stop"));
}

TEST_F(MpiJob, FourRanksHoldIdenticalModelsAndTrackOneProcess) {
  const std::string common =
      "[workload]\nepochs = 0\nbatch_size = 16\n"
      "[hook.stop]\nplugin = stop_at_step\nlast_step = 60\n"
      "[hook.history_saver]\nranks = all\nevery_n_steps = 1\ntensors = loss, bias, weights\n";
  const fs::path distributed =
      write_config("four.ini", "[run]\ndistributed = mpi\nrun_dir = four\n" + common);
  const fs::path alone = write_config("one.ini", "[run]\nrun_dir = one\n" + common);
  const ProcessResult four = mpirun(4, {"--config", distributed.string()});
  ASSERT_EQ(four.exit_code, 0) << four.err;
  const ProcessResult one = single({"--config", alone.string()});
  ASSERT_EQ(one.exit_code, 0) << one.err;

  const auto chief = history(dir_ / "four" / "history.csv");
  ASSERT_EQ(chief.size(), 60u);
  // Every replica made the same updates: its bias and weights equal the chief's, bit for bit.
  for (int rank = 1; rank < 4; ++rank)
    EXPECT_EQ(history(dir_ / "four" / ("rank-" + std::to_string(rank)) / "history.csv"), chief)
        << "rank " << rank;
  // The global batch is the same, summed in another order: the curve matches within rounding.
  const auto reference = history(dir_ / "one" / "history.csv");
  ASSERT_EQ(reference.size(), chief.size());
  for (const auto& [step, values] : reference) {
    ASSERT_EQ(chief.at(step).size(), values.size());
    for (std::size_t i = 0; i < values.size(); ++i)
      EXPECT_NEAR(chief.at(step)[i], values[i], 1e-5 * std::max(1.0, std::fabs(values[i])))
          << "step " << step << " column " << i;
  }
  EXPECT_LT(chief.rbegin()->second[0], chief.begin()->second[0]);  // it learned
}

TEST_P(MpiJobRequestOnRank, NanGuardOnOneRankFailsEveryRankCleanly) {
  // The NaN guard runs on one rank only; the whole job must still fail, every rank with
  // end(failed).
  const fs::path config = write_config("job.ini",
                                       "[run]\ndistributed = mpi\nrun_dir = out\n"
                                       "[workload]\nepochs = 0\nfail_at_step = 7\nfail_kind = nan\n"
                                       "[hook.nan]\nplugin = nan_tensor\nranks = " +
                                           requesting_rank() +
                                           "\non_error = fail\n"
                                           "[hook.stop]\nplugin = stop_at_step\nlast_step = 50\n" +
                                           trace_hooks(2));
  const ProcessResult r =
      mpirun(2, {"--config", config.string(), "--plugin-dir", HOOKHOST_FIXTURE_DIR});
  EXPECT_NE(r.exit_code, 0);
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_THAT(end_line(trace(rank)), HasSubstr("end outcome=failed")) << "rank " << rank;
    EXPECT_THAT(end_line(trace(rank)), HasSubstr("(rank " + requesting_rank() + ")"));
    EXPECT_THAT(end_line(trace(rank)), HasSubstr("gs=8"));  // both ended after step 8
  }
  EXPECT_EQ(end_line(trace(0)), end_line(trace(1)));
  EXPECT_THAT(r.out, HasSubstr("hookhost: job failed"));
}

TEST_P(MpiJobRequestOnRank, HookFailureBeforeTheStepOnOneRankCallsTheStepOffEverywhere) {
  // One rank's hook fails in before_run of iteration 5: that rank never runs the step, and the
  // other, already in the step's gradient allreduce, must not be left waiting.
  const fs::path config = write_config(
      "job.ini", "[run]\ndistributed = mpi\nrun_dir = out\n[workload]\nepochs = 0\n" +
                     trace_hooks(2) +
                     "[hook.breaker]\nplugin = scripted\nranks = " + requesting_rank() +
                     "\ntrace = breaker.txt\n"
                     "fail_in = before_run\nfail_at_iteration = 5\non_error = fail\n");
  const ProcessResult r =
      mpirun(2, {"--config", config.string(), "--plugin-dir", HOOKHOST_FIXTURE_DIR});
  EXPECT_NE(r.exit_code, 0);
  for (int rank = 0; rank < 2; ++rank) {
    const auto lines = trace(rank);
    EXPECT_THAT(last_line_starting(lines, " after_run gs="), HasSubstr("it=4")) << "rank " << rank;
    EXPECT_THAT(end_line(lines), HasSubstr("end outcome=failed"));
    EXPECT_THAT(end_line(lines), HasSubstr("scripted failure in before_run"));
    EXPECT_THAT(end_line(lines), HasSubstr("(rank " + requesting_rank() + ")"));
  }
}

TEST_F(MpiJob, SigtermToTheLauncherStopsEveryRankAfterTheSameStep) {
  const fs::path config = write_config("job.ini",
                                       "[run]\ndistributed = mpi\nrun_dir = out\n"
                                       "[workload]\nepochs = 0\n" +
                                           trace_hooks(2));
  Process job = mpirun_process(
      2, hookhost_binary(),
      {"run", "--config", config.string(), "--plugin-dir", HOOKHOST_FIXTURE_DIR}, dir_.path());
  ASSERT_TRUE(wait_until(
      [&] { return count_occurrences(read_file(dir_ / "trace-1.txt"), "after_run") > 20; }));
  job.signal(SIGTERM);
  const ProcessResult r = job.wait();
  for (int rank = 0; rank < 2; ++rank)
    EXPECT_THAT(end_line(trace(rank)), HasSubstr("end outcome=stopped"))
        << "rank " << rank << r.err;
  EXPECT_THAT(end_line(trace(0)), HasSubstr("received SIGTERM"));
  EXPECT_EQ(end_line(trace(0)), end_line(trace(1)));  // the same step and reason
}

TEST_P(MpiJobRequestOnRank, KillOneRankThenResumeEveryRankFromTheChiefsCheckpoint) {
  // The checkpoints are asked for on the requesting rank; the chief writes them.
  const std::string hooks =
      "[hook.checkpoint_saver]\nsave_steps = 10\nranks = " + requesting_rank() +
      "\n"
      "[hook.stop]\nplugin = stop_at_step\nlast_step = 40\n"
      "[hook.counter0]\nplugin = scripted\nranks = 0\ntrace = trace-0.txt\ntrace_create = true\n"
      "[hook.counter1]\nplugin = scripted\nranks = 1\ntrace = trace-1.txt\ntrace_create = true\n"
      "kill_at_step = 25\nkill_marker = killed\n";
  const fs::path config = write_config(
      "job.ini", "[run]\ndistributed = mpi\nrun_dir = out\n[workload]\nepochs = 0\n" + hooks);
  const std::vector<std::string> args = {"--config", config.string(), "--plugin-dir",
                                         HOOKHOST_FIXTURE_DIR};
  const ProcessResult killed = mpirun(2, args);
  EXPECT_NE(killed.exit_code, 0);  // Open MPI ends the whole job when a rank dies
  ASSERT_TRUE(fs::exists(dir_ / "killed"));
  ASSERT_TRUE(fs::exists(dir_ / "out" / "checkpoints" / "model.ckpt-20"));

  const ProcessResult resumed = mpirun(2, args);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(count_occurrences(resumed.err, "resuming from"), 2) << resumed.err;
  EXPECT_THAT(resumed.err, HasSubstr("at global step 20"));
  // Each rank's hook got its own state back: 20 after_run calls each, before the kill.
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_THAT(last_line_starting(trace(rank), "create state="), HasSubstr("after_runs=20"))
        << "rank " << rank;
    EXPECT_THAT(end_line(trace(rank)), HasSubstr("gs=40"));
  }
}

TEST_P(MpiJobRequestOnRank, AnEmbeddingMpiProgramKeepsItsOwnCommunicator) {
  // Three ranks; one asks for a stop after 10 steps: every rank runs step 11 and stops there, with
  // the same reason and the same model, and the program's own allreduces still add up.
  const ProcessResult r =
      mpirun_process(3, fs::path(HOOKHOST_BINARY_DIR) / "bin" / "mpi_embed_probe",
                     {"40", requesting_rank(), "10", (dir_ / "runs").string()}, dir_.path())
          .wait();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines;
  for (const auto& line : lines_of(r.out))
    if (line.rfind("rank ", 0) == 0) lines.push_back(line.substr(line.find(" steps ")));
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_THAT(lines[0], HasSubstr(" steps 11 global_step 11 outcome stopped "
                                  "reason <the embedding program asked (rank " +
                                  requesting_rank() + ")>"));
  EXPECT_THAT(lines[0], HasSubstr(" total 3"));  // 0 + 1 + 2 on the program's own communicator
  EXPECT_EQ(lines[1], lines[0]);                 // the same model state, bit for bit, on every rank
  EXPECT_EQ(lines[2], lines[0]);
}

TEST_F(MpiJob, OneRankUnderTheLauncherIsTheOneProcessJob) {
  const fs::path config = write_config("job.ini",
                                       "[run]\ndistributed = mpi\nrun_dir = out\n"
                                       "[workload]\nepochs = 2\n");
  const ProcessResult r = mpirun(1, {"--config", config.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out,
              HasSubstr("hookhost: job completed (end of data: end of data after 2 epochs)"));
  EXPECT_EQ(r.err.find("[rank"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "out" / "rank-1"));
}

TEST_F(MpiJob, LauncherAndConfigurationMustAgree) {
  const fs::path distributed =
      write_config("d.ini", "[run]\ndistributed = mpi\nrun_dir = out\n[workload]\nepochs = 1\n");
  const ProcessResult alone = single({"--config", distributed.string()});
  EXPECT_EQ(alone.exit_code, 2);
  EXPECT_THAT(alone.err, HasSubstr("d.ini:2: [run] distributed:"));
  EXPECT_THAT(alone.err, HasSubstr("not started by an MPI launcher"));

  const fs::path plain = write_config("p.ini", "[run]\nrun_dir = out\n[workload]\nepochs = 1\n");
  const ProcessResult launched = mpirun(2, {"--config", plain.string()});
  EXPECT_NE(launched.exit_code, 0);
  EXPECT_THAT(launched.err, HasSubstr("add 'distributed = mpi' to [run]"));
  EXPECT_FALSE(fs::exists(dir_ / "out"));  // nothing ran
}

TEST_F(MpiJob, RankOutsideTheJobIsAConfigurationErrorOnEveryRank) {
  const fs::path config = write_config("job.ini",
                                       "[run]\ndistributed = mpi\nrun_dir = out\n"
                                       "[workload]\nepochs = 1\n"
                                       "[hook.stop]\nplugin = stop_at_step\nlast_step = 5\n"
                                       "ranks = 0, 3\n");
  const ProcessResult r = mpirun(2, {"--config", config.string()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(count_occurrences(r.err,
                              "job.ini:9: [hook.stop] ranks: rank 3 does not exist: this "
                              "job runs 2 processes (ranks 0 to 1)"),
            2)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

// Where a hook runs when its section sets no `ranks` is what its plugin's note declares: the host
// knows no plugin by its id. Each fixture hook appends to a file in its process's run directory
// (rank 1's is out/rank-1).
TEST_F(MpiJob, APluginThatDeclaresChiefRunsOnTheChiefAloneAndAnUndeclaredOneOnEveryRank) {
  const fs::path config = write_config("job.ini",
                                       "[run]\ndistributed = mpi\nrun_dir = out\n"
                                       "[workload]\nepochs = 0\n"
                                       "[hook.stop]\nplugin = stop_at_step\nlast_step = 3\n"
                                       "[hook.declared]\nplugin = placed_chief\nfile = declared\n"
                                       "[hook.undeclared]\nplugin = placed_default\n"
                                       "file = undeclared\n"
                                       "[hook.everywhere]\nplugin = placed_chief\nranks = all\n"
                                       "file = everywhere\n"
                                       "[hook.moved]\nplugin = placed_chief\nranks = 1\n"
                                       "file = moved\n"
                                       "[hook.frozen]\nplugin = frozen_v1_0_c\n"
                                       "trace = frozen.txt\n");
  const ProcessResult r =
      mpirun(2, {"--config", config.string(), "--plugin-dir", HOOKHOST_FIXTURE_DIR});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path chief = dir_ / "out";
  const fs::path other = dir_ / "out" / "rank-1";
  auto calls = [](const fs::path& file) {
    std::vector<std::string> words;
    for (const std::string& line : lines_of(file))
      words.push_back(line.substr(line.rfind(' ') + 1));
    return words;
  };
  const std::vector<std::string> begin_and_end = {"begin", "end"};
  // Declared chief: the chief's folder only.
  EXPECT_EQ(calls(chief / "declared"), begin_and_end);
  EXPECT_FALSE(fs::exists(other / "declared"));
  // Declared nothing: every rank.
  EXPECT_EQ(calls(chief / "undeclared"), begin_and_end);
  EXPECT_EQ(calls(other / "undeclared"), begin_and_end);
  // The section's ranks overrides the declaration, either way.
  EXPECT_EQ(calls(chief / "everywhere"), begin_and_end);
  EXPECT_EQ(calls(other / "everywhere"), begin_and_end);
  EXPECT_FALSE(fs::exists(chief / "moved"));
  EXPECT_EQ(calls(other / "moved"), begin_and_end);
  // A plugin built against the frozen 1.0 headers declares nothing: both ranks trace into the one
  // file the job's folder holds.
  EXPECT_EQ(count_occurrences(read_file(dir_ / "frozen.txt"), "begin restored=0"), 2)
      << read_file(dir_ / "frozen.txt");
}

// A copy of a built-in renamed to another id keeps the built-in's placement: it is in the note.
TEST_F(MpiJob, AForkOfAChiefOnlyBuiltInUnderAnotherIdStillRunsOnTheChiefAlone) {
  const fs::path plugins = dir_ / "plugins";
  fs::create_directory(plugins);
  fs::permissions(plugins, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
  fork_plugin(builtin_plugin("history_saver"), plugins, "history_saver", "history_fork1");
  const fs::path config = write_config("job.ini",
                                       "[run]\ndistributed = mpi\nrun_dir = out\n"
                                       "[workload]\nepochs = 0\n"
                                       "[hook.stop]\nplugin = stop_at_step\nlast_step = 5\n"
                                       "[hook.history]\nplugin = history_fork1\n"
                                       "every_n_steps = 1\n");
  const ProcessResult r =
      mpirun(2, {"--config", config.string(), "--plugin-dir", plugins.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_of(dir_ / "out" / "history.csv").size(), 6u);  // the header and 5 steps
  EXPECT_FALSE(fs::exists(dir_ / "out" / "rank-1" / "history.csv"));
}

// The waiter itself says that it holds every process back (the host knows no plugin by its id):
// once per job, from whichever rank runs it, and from a renamed copy too; never in one process.
TEST_F(MpiJob, AGlobalStepWaiterInADistributedJobSaysOnceThatItHoldsBackEveryProcess) {
  const fs::path plugins = dir_ / "plugins";
  fs::create_directory(plugins);
  fs::permissions(plugins, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
  fork_plugin(builtin_plugin("global_step_waiter"), plugins, "global_step_waiter",
              "global_step_fork_1");
  const std::string warning = "a waiter that holds one process back holds back all of them";
  for (const std::string plugin : {"global_step_waiter", "global_step_fork_1"}) {
    for (const std::string ranks : {"all", "1"}) {
      SCOPED_TRACE(plugin + ", ranks = " + ranks);
      const fs::path config =
          write_config("job.ini",
                       "[run]\ndistributed = mpi\nrun_dir = out\n"
                       "[workload]\nepochs = 0\n"
                       "[hook.stop]\nplugin = stop_at_step\nlast_step = 2\n"
                       "[hook.wait]\nplugin = " +
                           plugin + "\nwait_until_step = 0\nranks = " + ranks + "\n");
      const ProcessResult r =
          mpirun(2, {"--config", config.string(), "--plugin-dir", plugins.string(), "--fresh"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(count_occurrences(r.err, warning), 1) << r.err;
    }
  }
  const fs::path alone = write_config("alone.ini",
                                      "[run]\nrun_dir = alone\n[workload]\nepochs = 0\n"
                                      "[hook.stop]\nplugin = stop_at_step\nlast_step = 2\n"
                                      "[hook.wait]\nplugin = global_step_waiter\n"
                                      "wait_until_step = 0\n");
  const ProcessResult r = single({"--config", alone.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count_occurrences(r.err, warning), 0) << r.err;
}

// Rank 0 is the chief; rank 1 is not.
INSTANTIATE_TEST_SUITE_P(OnEachKindOfRank, MpiJobRequestOnRank, ::testing::Values(0, 1), rank_name);

// MPI is started only by a job that says `distributed = mpi`: a job run without it never calls
// MPI_Init or MPI_Init_thread, although the program links the MPI library. A library preloaded into
// every process records the processes it was loaded into and their calls that initialise MPI.
TEST_F(MpiJob, OnlyADistributedJobInitialisesMpi) {
#if defined(HOOKHOST_ASAN)
  GTEST_SKIP() << "a library preloaded before the sanitizer's runtime is refused by it";
#endif
  const fs::path shim =
      fs::path(HOOKHOST_BINARY_DIR) / "tests" / "mpi_init_marker" / "libmpi_init_marker.so";
  ASSERT_TRUE(fs::exists(shim)) << shim;
  const fs::path marker = dir_ / "mpi-calls.txt";
  const std::vector<std::string> preload = {"LD_PRELOAD=" + shim.string(),
                                            "HOOKHOST_TEST_MPI_INIT_MARKER=" + marker.string()};
  auto lines_with = [&](const std::string& word) {
    size_t n = 0;
    for (const std::string& line : lines_of(marker)) n += line.starts_with(word + " ");
    return n;
  };

  const fs::path one = write_config("one.ini", "[run]\nrun_dir = one\n[workload]\nepochs = 1\n");
  const ProcessResult single =
      run_hookhost({"run", "--config", one.string()}, dir_.path(), preload);
  ASSERT_EQ(single.exit_code, 0) << single.err;
  EXPECT_EQ(lines_with("loaded hookhost"), 1u) << read_file(marker);  // the preload took
  EXPECT_EQ(lines_with("MPI_Init") + lines_with("MPI_Init_thread"), 0u) << read_file(marker);

  // The same job distributed, even on one process, initialises MPI once in each process.
  const fs::path two =
      write_config("two.ini", "[run]\ndistributed = mpi\nrun_dir = two\n[workload]\nepochs = 1\n");
  std::vector<std::string> env = kMpiEnv;
  env.insert(env.end(), preload.begin(), preload.end());
  for (const int ranks : {1, 2}) {
    SCOPED_TRACE(std::to_string(ranks) + " processes");
    fs::remove(marker);
    const ProcessResult r =
        Process({"--oversubscribe", "-np", std::to_string(ranks), hookhost_binary().string(), "run",
                 "--config", two.string(), "--fresh"},
                dir_.path(), env, HOOKHOST_MPIEXEC)
            .wait();
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(lines_with("loaded hookhost"), static_cast<size_t>(ranks)) << read_file(marker);
    EXPECT_EQ(lines_with("MPI_Init") + lines_with("MPI_Init_thread"), static_cast<size_t>(ranks))
        << read_file(marker);
  }
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
