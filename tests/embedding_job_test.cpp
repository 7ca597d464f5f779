// A Job from a configuration file around the embedder's own session (JobOptions::session), driven
// by the embedder's loop through Job::runtime(): what the Python package's MonitoredSession is
// built on, reached through the installed header alone.
#include <hookhost/host/job.hpp>

#include <hookhost/host/checkpoint.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "report/run_record.hpp"
#include "counting_session.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

JobOptions options_for(const fs::path& ini, Session& session) {
  JobOptions options;
  options.config = load_job_config(ini, {"run.log_level=off"});
  options.session = &session;
  options.builtin_plugin_dir = HOOKHOST_BUILTIN_DIR;
  return options;
}

TEST(EmbeddingJob, HooksFromAFileRunAroundTheProgramsSessionAndItsLoop) {
  TempDir dir;
  write_file(dir.path() / "job.ini",
             "[run]\nrun_dir = run\n[hook.stop]\nplugin = stop_at_step\nlast_step = 5\n"
             "[hook.saver]\nplugin = checkpoint_saver\nsave_steps = 2\n");
  CountingSession session;
  {
    Job job(options_for(dir.path() / "job.ini", session));
    Runtime& runtime = job.runtime();
    ASSERT_TRUE(runtime.start());
    while (!runtime.should_stop()) runtime.run({"loss"});
    const JobResult result = runtime.close();
    EXPECT_EQ(result.outcome, Outcome::stopped);
    EXPECT_EQ(result.global_step, 5);
    EXPECT_EQ(&job.session(), &session);
  }
  EXPECT_EQ(session.runs, 5);
  EXPECT_TRUE(fs::exists(dir.path() / "run" / "checkpoints" / "model.ckpt-5"));  // the final save
  // The same run record hookhost run writes (operations.md): the start, the checkpoints, and the
  // cost line, written when the job was destroyed.
  const RunRecord record = read_run_record(dir.path() / "run" / kRunRecordFile);
  ASSERT_EQ(record.starts.size(), 1u);
  EXPECT_FALSE(record.starts[0].resume);
  EXPECT_THAT(record.starts[0].configuration, HasSubstr("[hook.stop] plugin = stop_at_step"));
  std::size_t checkpoints = 0;
  for (const auto& e : record.events) checkpoints += e.kind == "checkpoint";
  EXPECT_GE(checkpoints, 3u);  // steps 0, 2, 4 and the final 5
  ASSERT_EQ(record.costs.size(), 1u);
  EXPECT_EQ(record.costs[0].outcome, "stopped");
  EXPECT_EQ(record.costs[0].global_step, 5);

  // A new job in the same run directory resumes the session before any hook is created: at the
  // limit already, the loop runs no step.
  CountingSession resumed;
  Job again(options_for(dir.path() / "job.ini", resumed));
  EXPECT_EQ(resumed.global_step(), 5);
  ASSERT_TRUE(again.runtime().start());
  while (!again.runtime().should_stop()) again.runtime().run();
  EXPECT_EQ(resumed.runs, 0);
}

// Job::control: an embedder's own thread makes the changes hookhost ctl makes; the loop's thread
// carries them out at its step boundaries, and a change still waiting when the job closes is
// answered too.
TEST(EmbeddingJob, ControlFromAnotherThreadChangesTheHooksAtStepBoundaries) {
  TempDir dir;
  write_file(dir.path() / "job.ini", "[run]\nrun_dir = run\n");
  const fs::path trace = dir.path() / "trace.jsonl";
  CountingSession session;
  Job job(options_for(dir.path() / "job.ini", session));
  Runtime& runtime = job.runtime();
  ASSERT_TRUE(runtime.start());
  std::atomic<bool> done{false};
  ControlReply attached, refused, detached;
  std::thread operator_thread([&] {
    attached =
        job.control({"attach", "late", "lifecycle_trace", "path=" + trace.string(), "fetch=loss"});
    refused = job.control({"attach", "late", "lifecycle_trace", "path=" + trace.string()});
    detached = job.control({"detach", "late"});
    done = true;
  });
  while (!done) runtime.run({"loss"});
  operator_thread.join();
  EXPECT_TRUE(attached.ok) << attached.text;
  EXPECT_THAT(attached.text, HasSubstr("attached hook 'late'"));
  EXPECT_FALSE(refused.ok);
  EXPECT_THAT(refused.text, HasSubstr("a hook named 'late' runs already"));
  EXPECT_TRUE(detached.ok) << detached.text;
  const std::string calls = read_file(trace);
  EXPECT_LT(calls.find("\"begin\""), calls.find("\"after_run\""));
  EXPECT_NE(calls.find("\"end\""), std::string::npos);
  EXPECT_THAT(calls, HasSubstr("detached: by hookhost ctl"));

  // A change posted when no further step comes is answered at close(), before the end.
  std::thread late_operator([&] { attached = job.control({"stop", "from the operator"}); });
  late_operator.join();  // a stop is answered at once
  EXPECT_TRUE(attached.ok);
  EXPECT_TRUE(runtime.should_stop());
  const JobResult result = runtime.close();
  EXPECT_EQ(result.reason, "hookhost ctl: from the operator");
  EXPECT_FALSE(job.control({"status"}).text.empty());
  EXPECT_FALSE(job.control({"attach", "x", "lifecycle_trace"}).ok);  // the job has ended
}

TEST(EmbeddingJob, TheLoopsOwnEndIsACompletedJob) {
  TempDir dir;
  write_file(dir.path() / "job.ini", "[run]\nrun_dir = run\n");
  CountingSession session;
  Job job(options_for(dir.path() / "job.ini", session));
  ASSERT_TRUE(job.runtime().start());
  for (int i = 0; i < 3; ++i) job.runtime().run();
  job.runtime().complete("the data ran out");
  const JobResult result = job.runtime().close();
  EXPECT_EQ(result.outcome, Outcome::completed);
  EXPECT_EQ(result.reason, "the data ran out");
  EXPECT_EQ(result.global_step, 3);
}

TEST(EmbeddingJob, AWorkloadSectionIsRefusedWithItsLine) {
  TempDir dir;
  write_file(dir.path() / "job.ini", "[run]\nrun_dir = run\n\n[workload]\nname = linreg\n");
  CountingSession session;
  try {
    Job job(options_for(dir.path() / "job.ini", session));
    FAIL() << "a [workload] section was accepted";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("job.ini:4"), HasSubstr("[workload] is not used"),
                                HasSubstr("remove the section")));
  }
  EXPECT_FALSE(fs::exists(dir.path() / "run"));  // nothing was started
}

// A session with a part of its state of its own per process (Session::save_rank_state, what the
// Python package's TorchRandomState is in a torch.distributed job): a checkpoint's entry
// hookhost:rank-workload goes back to the session on resume, and to no hook.
class RankPartSession final : public Session {
 public:
  void create(int) override {}
  int64_t global_step() const override { return step_; }
  std::vector<std::string> fetchable() const override { return {}; }
  std::vector<std::string> feedable() const override { return {}; }
  StepResult run(const std::vector<std::string>&, const TensorMap&) override {
    ++step_;
    return {};
  }
  std::string save_state() const override { return std::to_string(step_); }
  void restore_state(std::string_view bytes) override { step_ = std::stoll(std::string(bytes)); }
  std::optional<std::string> save_rank_state() const override { return "mine"; }
  void restore_rank_state(std::string_view bytes) override { restored.emplace(bytes); }
  std::optional<std::string> restored;

 private:
  int64_t step_ = 0;
};

TEST(EmbeddingJob, AProcessesPartOfTheWorkloadStateGoesBackToTheSessionOnResumeAndToNoHook) {
  TempDir dir;
  write_file(dir.path() / "job.ini",
             "[run]\nrun_dir = run\n[hook.stop]\nplugin = stop_at_step\nlast_step = 5\n");
  Checkpoint saved;
  saved.global_step = 3;
  saved.workload_state = "3";
  saved.hook_states["hookhost:rank-workload"] = SavedHookState{"hookhost", 1, "generator@3"};
  write_checkpoint(dir.path() / "run" / "checkpoints", "model.ckpt", saved, 5);

  RankPartSession session;
  JobOptions options = options_for(dir.path() / "job.ini", session);
  std::ostringstream log;
  options.logger = std::make_shared<spdlog::logger>(
      "hookhost", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  options.logger->set_level(spdlog::level::debug);
  Job job(std::move(options));
  EXPECT_EQ(session.global_step(), 3);
  EXPECT_EQ(session.restored, "generator@3");
  ASSERT_TRUE(job.runtime().start());
  while (!job.runtime().should_stop()) job.runtime().run();
  EXPECT_EQ(job.runtime().close().global_step, 5);
  // Not offered to the hooks as an instance's state (which start() would name as unconfigured).
  EXPECT_THAT(log.str(), HasSubstr("resuming from")) << log.str();
  EXPECT_THAT(log.str(), Not(HasSubstr("rank-workload"))) << log.str();
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
