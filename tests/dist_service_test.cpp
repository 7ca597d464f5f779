// hh.dist/1 end to end: real `mpirun --oversubscribe -np N hookhost run` jobs whose dist_probe
// hooks (tests/fixtures/dist_probe) write what the service answered to their run directories,
// plus a job of one process and the [run] collective_timeout_ms key. Open MPI refuses to run as
// root unless told; the variables that allow it are set for the launched job only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "hookhost/host/config.hpp"
#include "mpi_launch.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::HasSubstr;
using ::testing::Not;

// "key=value key=value" -> map; words without '=' are skipped.
std::map<std::string, std::string> fields_of(const std::string& line) {
  std::map<std::string, std::string> out;
  std::istringstream in(line);
  for (std::string word; in >> word;)
    if (auto eq = word.find('='); eq != std::string::npos)
      out[word.substr(0, eq)] = word.substr(eq + 1);
  return out;
}

class DistService : public ::testing::Test {
 protected:
  ProcessResult mpirun(int ranks, const fs::path& config) {
    return mpirun_hookhost(
        ranks, {"--config", config.string(), "--plugin-dir", HOOKHOST_FIXTURE_DIR}, dir_.path());
  }
  fs::path write_config(const std::string& text) {
    write_file(dir_ / "job.ini", text);
    return dir_ / "job.ini";
  }
  // The run directory of a job rank: the chief's, or rank-N inside it.
  fs::path run_dir(int rank) const {
    return rank == 0 ? dir_ / "out" : dir_ / "out" / ("rank-" + std::to_string(rank));
  }
  // A sandboxed (so confined) hook named "boxed" writes in its own run folder.
  std::vector<std::string> probe(int rank, const std::string& file = "dist.txt") const {
    const fs::path boxed = run_dir(rank) / "hooks" / "boxed" / file;
    return lines_of(fs::exists(boxed) ? boxed : run_dir(rank) / file);
  }

  // Every process of an N-process job saw its rank, the world size and the chief; the mean of the
  // loss is the mean of the processes' losses; each op over rank + 1 gives the exact result.
  void expect_collectives(int ranks, const std::string& file = "dist.txt") {
    std::map<std::string, std::vector<double>> losses;  // by step line prefix
    std::map<std::string, std::vector<double>> means;
    for (int rank = 0; rank < ranks; ++rank) {
      const auto lines = probe(rank, file);
      SCOPED_TRACE("rank " + std::to_string(rank) + " " + file);
      for (const char* where : {"create", "begin"}) {
        const auto found = starting_with(lines, std::string(where) + " rank=");
        ASSERT_EQ(found.size(), 1u);
        const auto f = fields_of(found[0]);
        EXPECT_EQ(f.at("rank"), std::to_string(rank));
        EXPECT_EQ(f.at("world"), std::to_string(ranks));
        EXPECT_EQ(f.at("chief"), rank == 0 ? "1" : "0");
      }
      EXPECT_EQ(starting_with(lines, "begin barrier ok").size(), 1u);
      EXPECT_EQ(starting_with(lines, "error").size(), 0u);
      const auto steps = starting_with(lines, "step=");
      const auto ops = starting_with(lines, "ops ");
      ASSERT_EQ(steps.size(), 3u);
      ASSERT_EQ(ops.size(), 3u);
      for (const auto& line : steps) {
        const auto f = fields_of(line);
        losses[f.at("step")].push_back(std::stod(f.at("loss")));
        means[f.at("step")].push_back(std::stod(f.at("mean")));
      }
      double sum = 0, min = 1, max = ranks;
      for (int r = 0; r < ranks; ++r) sum += r + 1;
      for (const auto& line : ops) {
        const auto f = fields_of(line);
        EXPECT_EQ(std::stod(f.at("sum")), sum) << line;
        EXPECT_EQ(std::stod(f.at("mean")), sum / ranks) << line;
        EXPECT_EQ(std::stod(f.at("min")), min) << line;
        EXPECT_EQ(std::stod(f.at("max")), max) << line;
        // The last rank's values, everywhere.
        EXPECT_EQ(f.at("bcast"),
                  std::to_string(100 + ranks - 1) + "," + std::to_string(200 + ranks - 1))
            << line;
      }
      EXPECT_EQ(starting_with(lines, "end barrier ok outcome=stopped").size(), 1u);
    }
    ASSERT_EQ(losses.size(), 3u);
    for (const auto& [step, values] : losses) {
      ASSERT_EQ(values.size(), static_cast<std::size_t>(ranks));
      double sum = 0;
      for (double v : values) sum += v;
      for (double mean : means[step]) {
        EXPECT_DOUBLE_EQ(mean, sum / ranks) << "step " << step;
        EXPECT_EQ(mean, means[step][0]) << "every process holds the same result";
      }
    }
  }

  static std::string job(const std::string& run, const std::string& hooks) {
    return "[run]\nrun_dir = out\n" + run +
           "[workload]\nepochs = 0\n"
           "[hook.stop]\nplugin = stop_at_step\nlast_step = 3\n" +
           hooks;
  }

  TempDir dir_;
};

TEST_F(DistService, TwoProcessesAverageTheLossAndAgreeOnEveryOp) {
  const ProcessResult r =
      mpirun(2, write_config(job("distributed = mpi\n", "[hook.avg]\nplugin = dist_probe\n")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_collectives(2);
}

TEST_F(DistService, FourProcessesAndAHookOnSomeRanksRankedInJobOrder) {
  const ProcessResult r = mpirun(
      4, write_config(job("distributed = mpi\n",
                          "[hook.avg]\nplugin = dist_probe\n"
                          "[hook.some]\nplugin = dist_probe\nranks = 3,1\nout = some.txt\n")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_collectives(4);
  // The group of ranks 1 and 3: group ranks 0 and 1 in the job's order, neither the chief.
  for (const auto& [job_rank, group_rank] : {std::pair{1, 0}, std::pair{3, 1}}) {
    const auto lines = probe(job_rank, "some.txt");
    const auto begin = starting_with(lines, "begin rank=");
    ASSERT_EQ(begin.size(), 1u) << "job rank " << job_rank;
    EXPECT_EQ(begin[0], "begin rank=" + std::to_string(group_rank) + " world=2 chief=0");
    for (const auto& line : starting_with(lines, "ops "))
      EXPECT_THAT(line, HasSubstr("sum=3 mean=1.5 min=1 max=2 bcast=101,201"));
    EXPECT_EQ(starting_with(lines, "ops ").size(), 3u);
  }
  EXPECT_FALSE(fs::exists(run_dir(0) / "some.txt"));
  EXPECT_FALSE(fs::exists(run_dir(2) / "some.txt"));
}

// The rank that calls a collective alone: the chief, or another process.
class DistServiceAloneOnRank : public DistService, public ::testing::WithParamInterface<int> {};

TEST_P(DistServiceAloneOnRank, ACallOnOneRankAloneFailsNamingHookAndCallbackAndTheJobEnds) {
  const int alone = GetParam();
  const std::string mode = alone == 0
                               ? "mode = chief_only\n"
                               : "mode = alone\nalone_rank = " + std::to_string(alone) + "\n";
  const ProcessResult r =
      mpirun(2, write_config(job("distributed = mpi\ncollective_timeout_ms = 500\n",
                                 "[hook.avg]\nplugin = dist_probe\n" + mode)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(starting_with(probe(1 - alone), "error ").empty());
  const auto errors = starting_with(probe(alone), "error ");
  ASSERT_EQ(errors.size(), 4u) << r.err;  // three after_run calls and the one in end
  const std::string first = errors[0];
  EXPECT_THAT(first, HasSubstr("status=1: hh.dist/1 allreduce: hook 'avg' (plugin 'dist_probe') "
                               "in after_run at global step "));
  EXPECT_THAT(first, HasSubstr(": the other processes did not join within 500 ms (a collective "
                               "must be called by every process running the hook, in the same "
                               "callback)"));
  // Later calls fail at once, naming the call that made the service unusable.
  for (std::size_t i = 1; i < errors.size(); ++i) {
    EXPECT_THAT(errors[i], HasSubstr("refused, the service is unusable for this hook since "
                                     "hh.dist/1 allreduce in after_run at global step "));
    EXPECT_THAT(errors[i], Not(HasSubstr("did not join")));
  }
  EXPECT_THAT(errors[3], HasSubstr("hh.dist/1 allreduce: hook 'avg' (plugin 'dist_probe') in end"));
  // The host logs the failure once, and every process ends the job normally.
  EXPECT_EQ(count_occurrences(r.err, "did not join within 500 ms"), 1) << r.err;
  for (int rank = 0; rank < 2; ++rank)
    EXPECT_EQ(starting_with(probe(rank), "end outcome=stopped").size(), 1u) << "rank " << rank;
  EXPECT_THAT(r.out, HasSubstr("hookhost: job stopped"));
  EXPECT_THAT(r.out, HasSubstr("hookhost: rank 1: job stopped"));
}

INSTANTIATE_TEST_SUITE_P(OnEachKindOfRank, DistServiceAloneOnRank, ::testing::Values(0, 1),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "Rank" + std::to_string(info.param);
                         });

TEST_F(DistService, CallsWithDifferentCountsFailOnEveryProcessWithoutWaiting) {
  // A long timeout: the mismatch is found by the agreement that starts every call, not by waiting.
  const ProcessResult r =
      mpirun(2, write_config(job("distributed = mpi\ncollective_timeout_ms = 600000\n",
                                 "[hook.avg]\nplugin = dist_probe\nmode = uneven\n")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const auto errors = starting_with(probe(rank), "error ");
    ASSERT_EQ(errors.size(), 4u);
    EXPECT_THAT(errors[0], HasSubstr("hh.dist/1 allreduce: hook 'avg' (plugin 'dist_probe') in "
                                     "after_run at global step 1: the processes running the hook "
                                     "called it differently: another count (1 and 2)"));
    for (std::size_t i = 1; i < errors.size(); ++i)
      EXPECT_THAT(errors[i], HasSubstr("refused, the service is unusable for this hook since "
                                       "hh.dist/1 allreduce in after_run at global step 1 failed"));
    EXPECT_EQ(starting_with(probe(rank), "end outcome=stopped").size(), 1u);
  }
}

TEST_F(DistService, OneProcessIsAGroupOfOneAndCreateIsNoLifecycleCall) {
  const fs::path config =
      write_config(job("", "[hook.avg]\nplugin = dist_probe\nprobe_create = true\n"));
  const ProcessResult r = run_hookhost(
      {"run", "--config", config.string(), "--plugin-dir", HOOKHOST_FIXTURE_DIR}, dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = probe(0);
  EXPECT_EQ(starting_with(lines, "begin rank=0 world=1 chief=1").size(), 1u);
  const auto create_error = starting_with(lines, "error create");
  ASSERT_EQ(create_error.size(), 1u);
  EXPECT_THAT(create_error[0], HasSubstr("status=1: hh.dist/1 allreduce: outside the instance's "
                                         "lifecycle calls"));
  EXPECT_THAT(r.err, HasSubstr("plugin misbehaving: hh.dist/1 allreduce outside the instance's "
                               "lifecycle calls"));
  const auto steps = starting_with(lines, "step=");
  ASSERT_EQ(steps.size(), 3u);
  for (const auto& line : steps) {
    const auto f = fields_of(line);
    EXPECT_EQ(f.at("mean"), f.at("loss")) << "the mean of one value is the value";
  }
  for (const auto& line : starting_with(lines, "ops "))
    EXPECT_EQ(line, "ops sum=1 mean=1 min=1 max=1 bcast=100,200");
  EXPECT_EQ(starting_with(lines, "ops ").size(), 3u);
  EXPECT_EQ(starting_with(lines, "end barrier ok outcome=stopped").size(), 1u);
}

TEST_F(DistService, AnObserversCollectivesAreRefusedAndTheJobGoesOn) {
  const fs::path config = write_config(job("", "[hook.avg]\nplugin = dist_probe_observer\non_error = continue\n"));
  const ProcessResult r = run_hookhost(
      {"run", "--config", config.string(), "--plugin-dir", HOOKHOST_FIXTURE_DIR}, dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = probe(0);
  const auto errors = starting_with(lines, "error allreduce");
  ASSERT_EQ(errors.size(), 3u) << r.err;  // one per step: its after_run on the worker
  for (const auto& line : errors)
    EXPECT_THAT(line, HasSubstr("hh.dist/1 allreduce: from an observer (mode = observe)"));
  EXPECT_TRUE(starting_with(lines, "ops ").empty());
  EXPECT_THAT(r.err, HasSubstr("plugin misbehaving: hh.dist/1 allreduce from an observer"));
}

TEST_F(DistService, ASandboxedHookGetsTheSameResults) {
  const ProcessResult r =
      mpirun(2, write_config(job("distributed = mpi\n",
                                 "[hook.avg]\nplugin = dist_probe\n"
                                 "[hook.boxed]\nplugin = dist_probe\nisolation = process\n"
                                 "out = boxed.txt\n")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_collectives(2, "boxed.txt");
  // Line for line what the in-process hook saw: the same means of the same losses.
  for (int rank = 0; rank < 2; ++rank)
    EXPECT_EQ(starting_with(probe(rank, "boxed.txt"), "step="), starting_with(probe(rank), "step="))
        << "rank " << rank;
}

TEST(DistServiceConfig, CollectiveTimeoutIsAPositiveNumberOfMilliseconds) {
  EXPECT_EQ(load_job_config(std::nullopt, {}).collective_timeout_ms, 60000u);
  EXPECT_EQ(load_job_config(std::nullopt, {"run.collective_timeout_ms=250"}).collective_timeout_ms,
            250u);
  try {
    load_job_config(std::nullopt, {"run.collective_timeout_ms=0"});
    ADD_FAILURE() << "0 was accepted";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[run] collective_timeout_ms: must be an integer between 1 "
                                    "and 86400000 (how long hh.dist/1 waits for the other "
                                    "processes); got '0'"));
  }
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
