// hookhost ctl on a distributed job: real `mpirun -np 2 hookhost run` processes steered through
// the chief's run directory. Each change is made on every rank at one step boundary, which each
// rank's lifecycle_trace shows (its trace.jsonl in that rank's run folder).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <regex>

#include "mpi_launch.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::HasSubstr;
using ::testing::Not;

// Slow enough to be steered (5 ms a step), ended by hookhost ctl stop.
constexpr const char* kSlowJob =
    "[run]\ndistributed = mpi\nrun_dir = out\n"
    "[workload]\nepochs = 0\nstep_delay_ms = 5\n"
    "[hook.stop]\nplugin = stop_at_step\nlast_step = 1000000\n";

class MpiLiveControl : public ::testing::Test {
 protected:
  fs::path rank_dir(int rank) const {
    return rank == 0 ? dir_ / "out" : dir_ / "out" / ("rank-" + std::to_string(rank));
  }

  // Starts the 2-rank job and waits until the chief answers hookhost ctl.
  std::unique_ptr<Process> start(const std::string& config = kSlowJob) {
    write_file(dir_ / "job.ini", config);
    // Made in place: a Process copied would be killed with its temporary.
    auto job = std::make_unique<Process>(
        std::vector<std::string>{"--oversubscribe", "-np", "2", hookhost_binary().string(), "run",
                                 "--config", (dir_ / "job.ini").string()},
        dir_.path(), kMpiEnv, HOOKHOST_MPIEXEC);
    EXPECT_TRUE(wait_until([&] { return ctl({"status"}).exit_code == 0; }))
        << read_file(dir_ / ".stderr");
    return job;
  }

  // One hookhost ctl on the chief's run directory, in a folder of its own.
  ProcessResult ctl(const std::vector<std::string>& request) {
    const fs::path cwd = dir_ / ("ctl-" + std::to_string(next_client_++));
    fs::create_directories(cwd);
    std::vector<std::string> args = {"ctl", (dir_ / "out").string()};
    args.insert(args.end(), request.begin(), request.end());
    return run_hookhost(args, cwd);
  }

  // The lines of rank `rank`'s trace (lifecycle_trace's trace.jsonl) of hook `hook`.
  std::vector<std::string> trace(int rank, const std::string& hook = "lt") const {
    std::vector<std::string> lines;
    const fs::path file = rank_dir(rank) / "trace.jsonl";
    if (!fs::exists(file)) return lines;
    for (const std::string& line : lines_of(file))
      if (line.find("{\"instance\":\"" + hook + "\"") == 0) lines.push_back(line);
    return lines;
  }
  // The global steps of `callback` in those lines, in order.
  std::vector<int64_t> steps_of(int rank, const std::string& callback,
                                const std::string& hook = "lt") const {
    std::vector<int64_t> steps;
    const std::regex pattern("\"callback\":\"" + callback + "\",\"global_step\":(\\d+)");
    for (const std::string& line : trace(rank, hook)) {
      std::smatch m;
      if (std::regex_search(line, m, pattern)) steps.push_back(std::stoll(m[1]));
    }
    return steps;
  }
  std::optional<int64_t> first_step(int rank, const std::string& callback,
                                    const std::string& hook = "lt") const {
    const std::vector<int64_t> steps = steps_of(rank, callback, hook);
    if (steps.empty()) return std::nullopt;
    return steps.front();
  }
  std::optional<int64_t> last_step(int rank, const std::string& callback,
                                   const std::string& hook = "lt") const {
    const std::vector<int64_t> steps = steps_of(rank, callback, hook);
    if (steps.empty()) return std::nullopt;
    return steps.back();
  }
  // Both ranks' traces have `count` lines of `callback` or more.
  bool both_ran(const std::string& callback, std::size_t count, const std::string& hook = "lt") {
    return wait_until([&] {
      return steps_of(0, callback, hook).size() >= count &&
             steps_of(1, callback, hook).size() >= count;
    });
  }

  static int64_t step_in(const std::string& reply) {
    std::smatch m;
    if (!std::regex_search(reply, m, std::regex("global step (\\d+)"))) return -1;
    return std::stoll(m[1]);
  }

  TempDir dir_;
  int next_client_ = 0;
};

TEST_F(MpiLiveControl, AttachSetDetachAndStopAreMadeOnEveryRankAtOneBoundary) {
  auto job = start();
  const ProcessResult status = ctl({"status"});
  EXPECT_THAT(status.out, HasSubstr("distributed: 2 processes; this is the chief's view"));

  const ProcessResult attached = ctl({"attach", "lt", "--plugin", "lifecycle_trace"});
  ASSERT_EQ(attached.exit_code, 0) << attached.out << attached.err;
  EXPECT_THAT(attached.out, HasSubstr("on all 2 ranks: attached hook 'lt'"));
  const int64_t at = step_in(attached.out);
  ASSERT_TRUE(both_ran("after_run", 2));
  // Created at one boundary: both ranks' hook began there and saw its first step at once.
  EXPECT_EQ(first_step(0, "after_create_session"), at);
  EXPECT_EQ(first_step(1, "after_create_session"), at);
  EXPECT_EQ(first_step(0, "before_run"), at);
  EXPECT_EQ(first_step(1, "before_run"), at);

  const ProcessResult set = ctl({"set", "lt.fetch=loss"});
  ASSERT_EQ(set.exit_code, 0) << set.out << set.err;
  EXPECT_THAT(set.out, HasSubstr("on all 2 ranks: set lt.fetch=loss: hook 'lt' recreated"));
  const int64_t reset_at = step_in(set.out);
  const auto fetched_loss = [&](int rank) {
    for (const std::string& line : trace(rank))
      if (line.find("\"fetched\":{\"loss\"") != std::string::npos) return true;
    return false;
  };
  ASSERT_TRUE(wait_until([&] { return fetched_loss(0) && fetched_loss(1); }));
  // The old instance ended and the new one began at the same step on both ranks.
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(first_step(rank, "end"), reset_at) << "rank " << rank;
    EXPECT_EQ(last_step(rank, "after_create_session"), reset_at) << "rank " << rank;
  }

  const ProcessResult detached = ctl({"detach", "lt"});
  ASSERT_EQ(detached.exit_code, 0) << detached.out << detached.err;
  EXPECT_THAT(detached.out, HasSubstr("on all 2 ranks: detached hook 'lt'"));
  const int64_t off = step_in(detached.out);
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(last_step(rank, "end"), off) << "rank " << rank;
    EXPECT_THAT(trace(rank).back(), HasSubstr("\"outcome\":\"detached\"")) << "rank " << rank;
    EXPECT_EQ(last_step(rank, "after_run"), off - 1) << "rank " << rank;
  }

  // A stop through the chief stops every rank after the same step.
  ASSERT_EQ(ctl({"attach", "last", "--plugin", "lifecycle_trace"}).exit_code, 0);
  ASSERT_TRUE(both_ran("after_run", 1, "last"));
  const ProcessResult stopped = ctl({"stop", "--reason", "enough"});
  EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
  const ProcessResult r = job->wait();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(last_step(0, "end", "last").has_value());
  EXPECT_EQ(last_step(0, "end", "last"), last_step(1, "end", "last"));
  EXPECT_EQ(last_step(0, "after_run", "last"), last_step(1, "after_run", "last"));
  for (int rank = 0; rank < 2; ++rank)
    EXPECT_THAT(trace(rank, "last").back(), HasSubstr("hookhost ctl: enough")) << "rank " << rank;
  // The chief's run record keeps the changes.
  const std::string record = read_file(dir_ / "out" / "run-record.jsonl");
  EXPECT_THAT(record, HasSubstr("attached hook 'lt'"));
  EXPECT_THAT(record, HasSubstr("detached hook 'lt'"));
}

TEST_F(MpiLiveControl, AHookPlacedOnTheChiefIsAttachedThereAloneAndARefusedChangeGoesNowhere) {
  auto job = start();
  const ProcessResult refused =
      ctl({"attach", "bad", "--plugin", "lifecycle_trace", "--set", "no_such_key=1"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_THAT(refused.out + refused.err, HasSubstr("Nothing was changed."));
  // A set that widens a hook needs the operator's consent on every rank the hook runs on, here
  // rank 1 alone (the chief's check does not see the hook).
  const ProcessResult sandboxed = ctl({"attach", "sandboxed", "--plugin", "lifecycle_trace",
                                       "--set", "isolation=process", "--set", "ranks=1"});
  ASSERT_EQ(sandboxed.exit_code, 0) << sandboxed.out << sandboxed.err;
  EXPECT_THAT(sandboxed.out, HasSubstr("rank 1: attached hook 'sandboxed'"));
  const ProcessResult wider = ctl({"set", "sandboxed.isolation=in_process"});
  EXPECT_EQ(wider.exit_code, 2) << wider.out << wider.err;
  EXPECT_THAT(wider.out + wider.err,
              HasSubstr("rank 1: refused: this set widens what hook 'sandboxed' may do"));
  const ProcessResult consented = ctl({"set", "sandboxed.isolation=in_process", "--allow-widen"});
  EXPECT_EQ(consented.exit_code, 0) << consented.out << consented.err;
  EXPECT_THAT(consented.out, HasSubstr("rank 1: set sandboxed.isolation=in_process"));

  const ProcessResult attached =
      ctl({"attach", "lt", "--plugin", "lifecycle_trace", "--set", "ranks=chief"});
  ASSERT_EQ(attached.exit_code, 0) << attached.out << attached.err;
  EXPECT_THAT(attached.out, HasSubstr("rank 0: attached hook 'lt'"));
  EXPECT_THAT(attached.out, HasSubstr("rank 1: hook 'lt' is not placed there (its ranks)"));
  ASSERT_TRUE(wait_until([&] { return steps_of(0, "after_run").size() >= 2; }));
  const ProcessResult set = ctl({"set", "lt.fetch=loss"});
  EXPECT_EQ(set.exit_code, 0) << set.out << set.err;
  EXPECT_THAT(set.out, HasSubstr("rank 0: set lt.fetch=loss"));
  const ProcessResult moved = ctl({"set", "lt.ranks=all"});
  EXPECT_EQ(moved.exit_code, 1) << moved.out << moved.err;
  EXPECT_THAT(moved.out + moved.err, HasSubstr("set does not move a hook between processes"));
  const ProcessResult gone = ctl({"detach", "nobody"});
  EXPECT_EQ(gone.exit_code, 1) << gone.out << gone.err;

  ASSERT_EQ(ctl({"stop"}).exit_code, 0);
  const ProcessResult r = job->wait();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(trace(0, "bad").empty());
  EXPECT_TRUE(trace(1, "bad").empty());
  EXPECT_FALSE(trace(0).empty());
  EXPECT_TRUE(trace(1).empty());
  EXPECT_FALSE(fs::exists(rank_dir(1) / "control.sock"));
}

// The changes travel with the checkpoint: a resumed distributed job runs the hook attached
// before, on every rank.
TEST_F(MpiLiveControl, AResumedJobRunsTheHooksAttachedBeforeOnEveryRank) {
  auto job = start();
  ASSERT_EQ(ctl({"attach", "lt", "--plugin", "lifecycle_trace"}).exit_code, 0);
  ASSERT_TRUE(both_ran("after_run", 1));
  const ProcessResult saved = ctl({"checkpoint"});
  ASSERT_EQ(saved.exit_code, 0) << saved.out << saved.err;
  ASSERT_EQ(ctl({"stop"}).exit_code, 0);
  ASSERT_EQ(job->wait().exit_code, 0);
  const std::size_t begun = steps_of(0, "after_create_session").size();

  // Resumed: the attached hook runs again on both ranks, from the checkpoint's step.
  job = start();
  EXPECT_TRUE(wait_until([&] {
    return steps_of(0, "after_create_session").size() == begun + 1 &&
           steps_of(1, "after_create_session").size() == begun + 1;
  }));
  ASSERT_EQ(ctl({"stop"}).exit_code, 0);
  const ProcessResult r = job->wait();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("resuming with the live changes of the newest checkpoint"));
  EXPECT_EQ(first_step(1, "after_create_session"), first_step(0, "after_create_session"));
  EXPECT_EQ(last_step(1, "after_create_session"), step_in(saved.out));
  EXPECT_EQ(last_step(0, "after_create_session"), step_in(saved.out));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
