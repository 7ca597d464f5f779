// Live changes (Job::control, what hookhost ctl sends) around an embedder's loop, whose step
// boundaries the test holds: two sets queued before one boundary, no descriptor kept once a change
// ran, hooks attached or recreated in an isolation group, reports() read from another thread while
// hooks come and go, and a resume whose newest checkpoint is skipped.
#include <hookhost/host/checkpoint.hpp>
#include <hookhost/host/job.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <string>
#include <thread>

#include "counting_session.hpp"
#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// hookhost-runner processes this process started that still run (a zombie is not counted).
size_t runner_children() {
  size_t n = 0;
  const std::string self = std::to_string(::getpid());
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;  // gone meanwhile
    const size_t open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state, ppid;
    rest >> state >> ppid;
    if (ppid == self && state != "Z" &&
        stat.substr(open + 1, close - open - 1) == "hookhost-runner")
      ++n;
  }
  return n;
}

class LiveChanges : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root_ / "plugins");
    fs::create_directories(root_ / "traces");
    copy_plugin(fixture_plugin("scripted"), root_ / "plugins");
  }
  // Beside the run directory, not above it: a grant of its folder does not cover the run's.
  fs::path trace() const { return root_ / "traces" / "trace.txt"; }
  fs::path run_dir() const { return root_ / "run"; }
  std::vector<std::string> trace_lines(const std::string& prefix) const {
    if (!fs::exists(trace())) return {};
    return starting_with(lines_of(trace()), prefix);
  }
  // Trace lines that are exactly `line`.
  size_t count_lines(const std::string& line) const {
    const std::vector<std::string> lines = trace_lines(line);
    return static_cast<size_t>(std::count(lines.begin(), lines.end(), line));
  }
  // [hook.NAME] of the scripted fixture, tracing to trace(), with `extra` lines.
  std::string hook(const std::string& name, const std::string& extra = "") const {
    return "[hook." + name + "]\nplugin = scripted\ntrace = " + trace().string() + "\n" + extra;
  }
  std::unique_ptr<Job> make_job(const std::string& hooks, Session& session) {
    write_file(root_ / "job.ini", "[run]\nrun_dir = run\n" + hooks);
    JobOptions options;
    options.config = load_job_config(root_ / "job.ini", {"run.log_level=off"});
    options.session = &session;
    options.plugin_dirs = {root_ / "plugins"};
    options.builtin_plugin_dir = HOOKHOST_BUILTIN_DIR;
    return std::make_unique<Job>(std::move(options));
  }
  // The requests, one after another on an operator's thread (each posted once the one before was
  // answered), while this thread runs steps.
  static std::vector<ControlReply> control(Job& job,
                                           const std::vector<std::vector<std::string>>& requests) {
    std::vector<ControlReply> replies(requests.size());
    std::atomic<bool> done{false};
    std::thread operator_thread([&] {
      for (size_t i = 0; i < requests.size(); ++i) replies[i] = job.control(requests[i]);
      done = true;
    });
    while (!done) job.runtime().run({"loss"});
    operator_thread.join();
    return replies;
  }
  std::vector<std::string> attach(const std::string& name, const std::vector<std::string>& keys) {
    std::vector<std::string> words = {"attach", name, "scripted", "trace=" + trace().string()};
    words.insert(words.end(), keys.begin(), keys.end());
    return words;
  }

  TempDir root_;
};

// Two sets of one hook wait for the same boundary: the second is made on top of the first, so
// the hook runs with both, and the checkpoint (what a resume recreates) says the same.
TEST_F(LiveChanges, TwoSetsQueuedBeforeOneBoundaryBothApplyAndTheCheckpointSaysWhatRan) {
  CountingSession session;
  auto job = make_job(hook("rec"), session);
  Runtime& runtime = job->runtime();
  ASSERT_TRUE(runtime.start());
  runtime.run({"loss"});
  ControlReply first, second;
  std::thread a([&] { first = job->control({"set", "rec.fetch=loss"}); });
  const bool one_waits = wait_until([&] { return runtime.progress().changes_waiting == 1; });
  std::thread b([&] { second = job->control({"set", "rec.trace_create=true"}); });
  const bool two_wait = wait_until([&] { return runtime.progress().changes_waiting == 2; });
  runtime.run({"loss"});  // one boundary runs both
  a.join();
  b.join();
  ASSERT_TRUE(one_waits && two_wait);
  ASSERT_TRUE(first.ok) << first.text;
  ASSERT_TRUE(second.ok) << second.text;
  runtime.run({"loss"});
  runtime.run({"loss"});
  // The instance now running traced its creation (the second set) and fetches loss (the first).
  EXPECT_EQ(count_lines("rec create"), 1u);
  const std::vector<std::string> runs = trace_lines("rec after_run");
  ASSERT_FALSE(runs.empty());
  EXPECT_THAT(runs.back(), HasSubstr("values=loss:"));

  runtime.request_checkpoint("test");
  runtime.run({"loss"});
  runtime.close();
  auto newest = restore_latest_checkpoint(run_dir() / "checkpoints");
  ASSERT_TRUE(newest && !newest->file.empty());
  const std::string changes = newest->checkpoint.hook_states.at("hookhost:live-changes").bytes;
  EXPECT_EQ(changes, "hook.rec.fetch=loss\nhook.rec.trace_create=true");
  const std::string record = read_file(run_dir() / "run-record.jsonl");
  EXPECT_THAT(record,
              AllOf(HasSubstr("set rec.fetch=loss"), HasSubstr("set rec.trace_create=true")));
  job.reset();

  // A resume recreates what ran: both changes.
  CountingSession again;
  auto resumed = make_job(hook("rec"), again);
  ASSERT_TRUE(resumed->runtime().start());
  resumed->runtime().run({"loss"});
  EXPECT_EQ(count_lines("rec create"), 2u);
  EXPECT_THAT(trace_lines("rec after_run").back(), HasSubstr("values=loss:"));
}

// A set or an attach, applied or refused, keeps nothing open once its change ran: a sandboxed
// hook's plan holds a private copy of its plugin file.
TEST_F(LiveChanges, SetsAndRefusedAttachesLeaveNoDescriptorOpen) {
  CountingSession session;
  auto job = make_job(hook("rec", "isolation = process\n"), session);
  ASSERT_TRUE(job->runtime().start());
  // Once, so whatever a first change opens for good is open before the count.
  for (const ControlReply& r : control(*job, {{"set", "rec.fetch=loss"}}))
    ASSERT_TRUE(r.ok) << r.text;
  const size_t before = open_descriptors();
  const std::vector<ControlReply> replies =
      control(*job, {{"set", "rec.trace_create=true"},
                     {"set", "rec.trace_create=false"},
                     {"set", "rec.fetch=loss"},
                     attach("bad", {"isolation=process", "create_fail=true"}),
                     attach("typo", {"isolation=process", "fail_at_iteration=soon"}),
                     {"set", "rec.fail_at_iteration=soon"}});
  ASSERT_EQ(replies.size(), 6u);
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(replies[i].ok) << replies[i].text;
  EXPECT_FALSE(replies[3].ok);
  EXPECT_THAT(replies[3].text, HasSubstr("create refused as configured"));
  EXPECT_FALSE(replies[4].ok);
  EXPECT_FALSE(replies[5].ok);
  job->runtime().run({"loss"});
  // A retired runner's last descriptor may close a moment after its change ran (the sanitizer
  // suite saw one still open, about one run in ten); none may stay open.
  wait_until([&] { return open_descriptors() == before; }, std::chrono::seconds(5));
  EXPECT_EQ(open_descriptors(), before);
  EXPECT_THAT(trace_lines("rec after_run").back(), HasSubstr("values=loss:"));
}

// A hook attached or recreated into an isolation group joins the group's runner process, as a
// configured member does; one its confined runner cannot take is refused, saying why.
TEST_F(LiveChanges, AHookAttachedOrSetInAnIsolationGroupJoinsItsRunner) {
  CountingSession session;
  auto job = make_job(hook("a", "isolation = process\nisolation_group = g\n") +
                          hook("b", "isolation = process\nisolation_group = g\n") +
                          hook("o",
                               "isolation = process\nisolation_group = open\nconfine = off\n"
                               "mode = observe\n"),
                      session);
  ASSERT_TRUE(job->runtime().start());
  job->runtime().run({"loss"});
  ASSERT_EQ(runner_children(), 2u);

  // A member recreated with new values joins the runner its group still has.
  auto replies = control(*job, {{"set", "a.fetch=loss"}});
  ASSERT_TRUE(replies[0].ok) << replies[0].text;
  EXPECT_EQ(runner_children(), 2u);

  // The confined runner was confined when it started: a new member's own folder lies outside.
  replies = control(*job, {attach("c", {"isolation=process", "isolation_group=g"}),
                           attach("d", {"isolation=process", "isolation_group=g", "confine=off"})});
  EXPECT_FALSE(replies[0].ok);
  EXPECT_THAT(replies[0].text, AllOf(HasSubstr("hook 'c' cannot join isolation_group 'g' while "
                                               "the job runs"),
                                     HasSubstr("The hook was not attached")));
  EXPECT_FALSE(replies[1].ok);
  EXPECT_THAT(replies[1].text, HasSubstr("share isolation_group 'g', one process, but are given "
                                         "different confine"));
  EXPECT_EQ(runner_children(), 2u);

  // An unconfined group takes new members, an observer too.
  replies = control(
      *job,
      {attach("q", {"isolation=process", "isolation_group=open", "confine=off", "mode=observe"})});
  ASSERT_TRUE(replies[0].ok) << replies[0].text;
  EXPECT_EQ(runner_children(), 2u);
  replies = control(
      *job,
      {attach("p", {"isolation=process", "isolation_group=open", "confine=off", "fetch=loss"})});
  ASSERT_TRUE(replies[0].ok) << replies[0].text;
  EXPECT_EQ(runner_children(), 2u);
  for (int i = 0; i < 3; ++i) job->runtime().run({"loss"});
  EXPECT_THAT(trace_lines("p after_run").back(), HasSubstr("values=loss:"));
  EXPECT_THAT(trace_lines("a after_run").back(), HasSubstr("values=loss:"));
  for (const HookReport& r : job->reports())
    EXPECT_FALSE(r.disabled) << r.instance_name << ": " << r.failure;
  const JobResult result = job->runtime().close();
  EXPECT_EQ(result.outcome, Outcome::stopped) << result.reason;
  EXPECT_EQ(trace_lines("q end").size(), 1u);
}

// A detached hook whose runner was lost gets its end in a fresh runner while its max_restarts
// allow, as at the job's end; with none left it gets none, and the reply says why.
TEST_F(LiveChanges, ADetachedHookWhoseRunnerWasLostGetsItsEndInAFreshRunner) {
  const std::string lost = "isolation = process\non_crash = disable\nkill_at_step = 2\n";
  CountingSession session;
  auto job = make_job(hook("boxed", lost) + hook("spent", lost + "max_restarts = 0\n"), session);
  ASSERT_TRUE(job->runtime().start());
  for (int i = 0; i < 5; ++i) job->runtime().run({"loss"});
  for (const HookReport& r : job->reports()) {
    EXPECT_TRUE(r.disabled) << r.instance_name;  // its runner killed itself at step 2
    EXPECT_THAT(r.failure, HasSubstr("runner process")) << r.instance_name;
  }
  const std::vector<ControlReply> replies =
      control(*job, {{"detach", "boxed"}, {"detach", "spent"}});
  ASSERT_TRUE(replies[0].ok) << replies[0].text;
  EXPECT_THAT(replies[0].text,
              HasSubstr("it had its end (outcome failed, reason \"this hook was disabled: "));
  ASSERT_TRUE(replies[1].ok) << replies[1].text;
  EXPECT_THAT(replies[1].text, HasSubstr("its runner was lost and its 0 restarts are used up "
                                         "(max_restarts): it had no end"));
  const std::vector<std::string> ends = trace_lines("boxed end ");
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_THAT(ends[0], HasSubstr("boxed end outcome=failed"));
  EXPECT_TRUE(trace_lines("spent end ").empty());
}

// `hookhost ctl detach` tells a hook the outcome its plugin knows: a plugin built before ABI 1.6
// (no HH_OUTCOME_DETACHED) gets HH_OUTCOME_STOPPED with stop cause HH_STOP_CAUSE_HOST, and a hook
// its failures disabled gets HH_OUTCOME_FAILED with the reason it was disabled
// (docs/operations.md).
TEST_F(LiveChanges, ADetachedHookIsToldStoppedByTheHostBeforeAbi1_6AndFailedWhenDisabled) {
  copy_plugin(fixture_plugin("frozen_v1_5_c"), root_ / "plugins");
  const fs::path old_trace = root_ / "traces" / "old.txt";
  CountingSession session;
  auto job =
      make_job("[hook.old]\nplugin = frozen_v1_5_c\ntrace = " + old_trace.string() + "\n" +
                   hook("bad", "fail_in = after_run\nfail_at_iteration = 1\n") + hook("fine"),
               session);
  ASSERT_TRUE(job->runtime().start());
  for (int i = 0; i < 3; ++i) job->runtime().run({"loss"});
  for (const HookReport& r : job->reports())
    EXPECT_EQ(r.disabled, r.instance_name == "bad") << r.instance_name << ": " << r.failure;

  const std::vector<ControlReply> replies =
      control(*job, {{"detach", "old"}, {"detach", "bad"}, {"detach", "fine"}});
  ASSERT_EQ(replies.size(), 3u);
  for (const ControlReply& r : replies) ASSERT_TRUE(r.ok) << r.text;
  EXPECT_THAT(replies[0].text,
              HasSubstr("it had its end (outcome stopped, reason \"detached: by hookhost ctl\")"));
  EXPECT_THAT(replies[1].text, HasSubstr("it had its end (outcome failed, reason \"this hook was "
                                         "disabled: after_run failed"));
  EXPECT_THAT(replies[2].text,
              HasSubstr("it had its end (outcome detached, reason \"detached: by hookhost ctl\")"));

  // What each end() received: the 1.5 plugin traces its stop cause (4: HH_STOP_CAUSE_HOST).
  const std::vector<std::string> old_lines = lines_of(old_trace);
  ASSERT_GE(old_lines.size(), 2u);
  EXPECT_EQ(old_lines[old_lines.size() - 2], "end outcome=stopped cause=4") << read_file(old_trace);
  EXPECT_EQ(old_lines.back(), "destroy");
  const std::vector<std::string> bad_ends = trace_lines("bad end ");
  ASSERT_EQ(bad_ends.size(), 1u);
  EXPECT_THAT(bad_ends[0], AllOf(HasSubstr("bad end outcome=failed cause=0 "),
                                 HasSubstr("reason=this hook was disabled: after_run failed")));
  const std::vector<std::string> fine_ends = trace_lines("fine end ");
  ASSERT_EQ(fine_ends.size(), 1u);
  EXPECT_THAT(fine_ends[0], AllOf(HasSubstr("fine end outcome=detached cause=0 "),
                                  HasSubstr("reason=detached: by hookhost ctl")));
  job->runtime().close();
  EXPECT_EQ(trace_lines("bad end ").size(), 1u);  // no second end at the job's end
  EXPECT_EQ(count_occurrences(read_file(old_trace), "end outcome="), 1);
}

// reports() from another thread while changes add and detach hooks at the boundaries.
TEST_F(LiveChanges, ReportsAreReadFromAnotherThreadWhileHooksComeAndGo) {
  CountingSession session;
  auto job = make_job(hook("rec"), session);
  ASSERT_TRUE(job->runtime().start());
  std::atomic<bool> done{false};
  std::atomic<bool> saw_extra{false};
  std::atomic<int> reads{0};
  std::thread reader([&] {
    while (!done) {
      for (const HookReport& r : job->reports())
        if (r.instance_name == "extra" && !r.detached) saw_extra = true;
      ++reads;
    }
  });
  std::vector<std::vector<std::string>> requests;
  for (int i = 0; i < 6; ++i) {
    requests.push_back(attach("extra", {i % 2 ? "mode=observe" : "fetch=loss"}));
    requests.push_back({"detach", "extra"});
  }
  const std::vector<ControlReply> replies = control(*job, requests);
  done = true;
  reader.join();
  for (const ControlReply& r : replies) EXPECT_TRUE(r.ok) << r.text;
  EXPECT_GT(reads.load(), 0);
  EXPECT_TRUE(saw_extra.load());
  size_t detached = 0;
  for (const HookReport& r : job->reports()) detached += r.instance_name == "extra" && r.detached;
  EXPECT_EQ(detached, 6u);
}

// The resume skips the newest checkpoint (its workload state disagrees with its step) and takes
// the one before: the live changes applied are that one's.
TEST_F(LiveChanges, AResumeTakesTheLiveChangesOfTheCheckpointItResumesFrom) {
  const fs::path dir = run_dir() / "checkpoints";
  fs::create_directories(dir);
  Checkpoint taken{
      5, "5", {{"hookhost:live-changes", {"hookhost", 1, "hook.rec.trace_create=true"}}}};
  write_checkpoint(dir, "model.ckpt", taken, 0);
  Checkpoint skipped{9, "7", {{"hookhost:live-changes", {"hookhost", 1, "hook.rec.fetch=loss"}}}};
  write_checkpoint(dir, "model.ckpt", skipped, 0);

  CountingSession session;
  auto job = make_job(hook("rec"), session);
  EXPECT_EQ(session.global_step(), 5);
  ASSERT_TRUE(job->runtime().start());
  job->runtime().run({"loss"});
  EXPECT_EQ(count_lines("rec create"), 1u);  // trace_create=true, from model.ckpt-5
  const std::vector<std::string> runs = trace_lines("rec after_run");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_THAT(runs[0], Not(HasSubstr("values=loss")));  // not model.ckpt-9's fetch=loss
  // What the job saves next carries the changes it runs with.
  job->runtime().request_checkpoint("test");
  job->runtime().run({"loss"});
  job->runtime().close();
  std::vector<fs::path> written = list_checkpoints(dir);
  std::erase_if(written, [&](const fs::path& f) {
    return f.filename() == "model.ckpt-5" || f.filename() == "model.ckpt-9";
  });
  ASSERT_FALSE(written.empty());
  EXPECT_EQ(read_checkpoint(written.front()).hook_states.at("hookhost:live-changes").bytes,
            "hook.rec.trace_create=true");
}

}  // namespace HOOKHOST_TEST_FILE
using namespace HOOKHOST_TEST_FILE;
}  // namespace
}  // namespace hookhost::testing
