// hookhost ctl against real running jobs: attach, detach and set hooks at step boundaries, status
// while a sandboxed hook hangs, concurrent clients, refused users and requests, and a job killed
// after an attach that resumes with the attached hook and its state.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <regex>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "plugins/trust.hpp"
#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// A job slow enough to be steered: 5 ms per step, no end in sight but the stop asked for.
std::string slow_job(const std::string& extra = "") {
  return "[run]\nrun_dir = run\n"
         "[workload]\nname = linreg\nepochs = 0\nstep_delay_ms = 5\n"
         "[hook.stop]\nplugin = stop_at_step\nlast_step = 1000000\n" +
         extra;
}

class LiveControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root_ / "plugins");
    copy_plugin(fixture_plugin("scripted"), root_ / "plugins");
  }
  fs::path run_dir() const { return root_ / "run"; }
  fs::path trace() const { return root_ / "trace.txt"; }

  // Starts the job and waits until it answers hookhost ctl.
  std::unique_ptr<Process> start(const std::string& config) {
    write_file(root_ / "job.ini", config);
    auto job = std::make_unique<Process>(
        std::vector<std::string>{"run", "--config", (root_ / "job.ini").string(), "--plugin-dir",
                                 (root_ / "plugins").string()},
        root_.path());
    EXPECT_TRUE(
        wait_until([&] { return ctl({"status"}).exit_code == 0; }, std::chrono::seconds(60)))
        << read_file(root_ / ".stderr");
    return job;
  }

  // One hookhost ctl process, in a folder of its own (its output files are per folder).
  ProcessResult ctl(const std::vector<std::string>& request) {
    const fs::path cwd = root_ / ("ctl-" + std::to_string(next_client_++));
    fs::create_directories(cwd);
    std::vector<std::string> args = {"ctl", run_dir().string()};
    args.insert(args.end(), request.begin(), request.end());
    return run_hookhost(args, cwd);
  }

  std::vector<std::string> trace_lines(const std::string& prefix = "") const {
    if (!fs::exists(trace())) return {};
    return starting_with(lines_of(trace()), prefix);
  }
  size_t count_lines(const std::string& prefix) const { return trace_lines(prefix).size(); }

  // The global step a reply names ("... at global step N ...").
  static int64_t step_in(const std::string& reply) {
    std::smatch m;
    if (!std::regex_search(reply, m, std::regex("global step (\\d+)"))) return -1;
    return std::stoll(m[1]);
  }

  ProcessResult stop(Process& job) {
    EXPECT_EQ(ctl({"stop", "--reason", "test done"}).exit_code, 0);
    return job.wait();
  }

  TempDir root_;
  std::atomic<int> next_client_{0};
};

TEST_F(LiveControlTest, AnAttachedHookBeginsAtTheBoundaryAndRunsFromTheNextStepThenDetachEndsIt) {
  auto job = start(slow_job());
  const ProcessResult attached = ctl({"attach", "rec", "--plugin", "scripted", "--set",
                                      "trace=" + trace().string(), "--set", "fetch=loss"});
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  EXPECT_THAT(attached.out, HasSubstr("attached hook 'rec' (plugin 'scripted')"));
  const int64_t at = step_in(attached.out);
  ASSERT_GT(at, 0);
  ASSERT_TRUE(wait_until([&] { return count_lines("rec after_run") >= 3; }));
  const std::vector<std::string> lines = trace_lines("rec ");
  ASSERT_GE(lines.size(), 4u);
  // begin and after_create_session see the live step; the first step it sees is the next one.
  EXPECT_EQ(lines[0], "rec begin state=- live=" + std::to_string(at));
  EXPECT_EQ(lines[1], "rec after_create_session gs=" + std::to_string(at) + " creation=1");
  EXPECT_THAT(lines[2], HasSubstr("rec before_run gs=" + std::to_string(at) + " "));
  EXPECT_THAT(lines[3], AllOf(HasSubstr("rec after_run gs=" + std::to_string(at) + " "),
                              HasSubstr("values=loss:")));

  const ProcessResult detached = ctl({"detach", "rec"});
  ASSERT_EQ(detached.exit_code, 0) << detached.err;
  const int64_t off = step_in(detached.out);
  const size_t runs_at_detach = count_lines("rec after_run");
  const std::vector<std::string> after = trace_lines("rec ");
  ASSERT_GE(after.size(), 2u);
  EXPECT_EQ(after[after.size() - 2], "rec end outcome=detached cause=0 gs=" + std::to_string(off) +
                                         " reason=detached: by hookhost ctl");
  EXPECT_THAT(detached.out,
              HasSubstr("it had its end (outcome detached, reason \"detached: by hookhost ctl\")"));
  EXPECT_EQ(after.back(), "rec destroy");
  // Steps go on without it.
  const int64_t step_then = step_in(ctl({"status"}).out);
  ASSERT_TRUE(wait_until([&] { return step_in(ctl({"status"}).out) > step_then + 5; }));
  EXPECT_EQ(count_lines("rec after_run"), runs_at_detach);
  EXPECT_EQ(ctl({"detach", "rec"}).exit_code, 1);  // gone: nothing to detach

  const ProcessResult done = stop(*job);
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_THAT(done.out, HasSubstr("job stopped (hookhost ctl: test done)"));
  EXPECT_THAT(done.err, AllOf(HasSubstr("hookhost ctl: attached hook 'rec'"),
                              HasSubstr("hookhost ctl: detached hook 'rec'")));
  const std::string record = read_file(run_dir() / "run-record.jsonl");
  EXPECT_THAT(record, AllOf(HasSubstr("\"attach\""), HasSubstr("\"detach\"")));
  // The report's timeline shows both, in the order they happened.
  const std::string report = read_file(run_dir() / "report.html");
  const size_t attach_row = report.find("<tr class=\"kind-attach\">");
  const size_t detach_row = report.find("<tr class=\"kind-detach\">");
  ASSERT_NE(attach_row, std::string::npos);
  ASSERT_NE(detach_row, std::string::npos);
  EXPECT_LT(attach_row, detach_row);
  EXPECT_THAT(report.substr(detach_row, report.find("</tr>", detach_row) - detach_row),
              AllOf(HasSubstr("rec"), HasSubstr("outcome detached")));
  EXPECT_FALSE(fs::exists(run_dir() / "control.sock"));  // removed with the job
  const ProcessResult late = ctl({"status"});
  EXPECT_EQ(late.exit_code, 1);
  EXPECT_THAT(late.err, HasSubstr("no job is running in"));
}

TEST_F(LiveControlTest, SetRecreatesTheHookWithItsStateAndARefusalLeavesItRunningAsItWas) {
  auto job = start(slow_job("[hook.rec]\nplugin = scripted\ntrace = " + trace().string() + "\n"));
  ASSERT_TRUE(wait_until([&] { return count_lines("rec after_run") >= 3; }));

  // Checked like the configuration: a bad value never reaches the hook.
  const ProcessResult typo = ctl({"set", "rec.fail_at_iteration=soon"});
  EXPECT_EQ(typo.exit_code, 1);
  EXPECT_THAT(typo.err,
              AllOf(HasSubstr("hookhost ctl set hook.rec.fail_at_iteration=soon"),
                    HasSubstr("[hook.rec] fail_at_iteration"), HasSubstr("Nothing was changed")));
  EXPECT_EQ(count_lines("rec begin"), 1u);

  const ProcessResult set = ctl({"set", "rec.fetch=loss"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_THAT(set.out, HasSubstr("recreated with its saved state"));
  const std::vector<std::string> begins = trace_lines("rec begin");
  ASSERT_EQ(begins.size(), 2u);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(begins[1], m, std::regex("state=after_runs=(\\d+) live=(\\d+)")));
  const int64_t runs_before = std::stoll(m[1]);
  EXPECT_GE(runs_before, 3);
  EXPECT_EQ(std::stoll(m[2]), step_in(set.out));
  EXPECT_THAT(trace_lines("rec end").back(),
              HasSubstr("reason=detached: reconfigured by hookhost ctl: rec.fetch=loss"));
  ASSERT_TRUE(wait_until([&] {
    return !trace_lines("rec after_run").empty() &&
           trace_lines("rec after_run").back().find("values=loss:") != std::string::npos;
  }));

  // The plugin refuses the new value in create(): the caller reads why; the hook runs on.
  const ProcessResult refused = ctl({"set", "rec.create_fail=true"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, AllOf(HasSubstr("create refused as configured (create_fail=true)"),
                                 HasSubstr("runs on with its previous parameters")));
  const size_t runs = count_lines("rec after_run");
  ASSERT_TRUE(wait_until([&] { return count_lines("rec after_run") > runs + 3; }));
  EXPECT_THAT(trace_lines("rec after_run").back(), HasSubstr("values=loss:"));

  EXPECT_EQ(ctl({"set", "rec.plugin=other"}).exit_code, 1);
  EXPECT_EQ(ctl({"set", "nobody.fetch=loss"}).exit_code, 1);
  const ProcessResult done = stop(*job);
  EXPECT_EQ(done.exit_code, 0) << done.err;
}

// A set recreates the hook from the state its old instance held after its end: what it saved last.
TEST_F(LiveControlTest, SetHandsTheNewInstanceTheStateTheOldOneSavedInItsEnd) {
  auto job = start(slow_job("[hook.rec]\nplugin = scripted\ntrace = " + trace().string() +
                            "\nsave_in_end = true\n"));
  ASSERT_TRUE(wait_until([&] { return count_lines("rec after_run") >= 2; }));
  const ProcessResult set = ctl({"set", "rec.fetch=loss"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  const std::vector<std::string> begins = trace_lines("rec begin");
  ASSERT_EQ(begins.size(), 2u);
  EXPECT_THAT(begins[1],
              ::testing::MatchesRegex("rec begin state=after_runs=[0-9]+ ended live=[0-9]+"));
  const ProcessResult done = stop(*job);
  EXPECT_EQ(done.exit_code, 0) << done.err;
}

TEST_F(LiveControlTest, RefusedAttachesNameTheirCauseAndTheJobGoesOn) {
  auto job = start(slow_job());
  const ProcessResult failing = ctl({"attach", "bad", "--plugin", "scripted", "--set",
                                     "trace=" + trace().string(), "--set", "create_fail=true"});
  EXPECT_EQ(failing.exit_code, 1);
  EXPECT_THAT(failing.err, AllOf(HasSubstr("create refused as configured (create_fail=true)"),
                                 HasSubstr("not attached; the job goes on")));
  const ProcessResult unknown = ctl({"attach", "x", "--plugin", "no_such_plugin"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, AllOf(HasSubstr("hookhost ctl attach hook.x.plugin=no_such_plugin"),
                                 HasSubstr("unknown plugin 'no_such_plugin'")));
  const ProcessResult missing = ctl({"attach", "y", "--plugin", "scripted"});  // trace required
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("trace"));
  const ProcessResult taken = ctl({"attach", "stop", "--plugin", "stop_at_step"});
  EXPECT_EQ(taken.exit_code, 1);
  EXPECT_THAT(taken.err, HasSubstr("the configuration has [hook.stop]"));
  EXPECT_EQ(ctl({"attach", "z"}).exit_code, 2);               // usage: no --plugin
  EXPECT_EQ(ctl({"fly"}).exit_code, 2);                       // usage: no such request
  EXPECT_EQ(ctl({"stop", "--reason", "a\tb"}).exit_code, 1);  // a tab cannot travel
  const int64_t step = step_in(ctl({"status"}).out);
  ASSERT_TRUE(wait_until([&] { return step_in(ctl({"status"}).out) > step + 5; }));
  const ProcessResult done = stop(*job);
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_THAT(done.out, Not(HasSubstr("bad ")));
}

// A hook that saved no state is not said to be recreated with one (its name longer than a
// small-string buffer, in the request and in the answer).
TEST_F(LiveControlTest, SetOfAHookThatSavedNoStateSaysSo) {
  const std::string name = "logger_whose_name_is_longer_than_any_small_string_buffer";
  auto job = start(slow_job("[hook." + name +
                            "]\nplugin = logging_tensor\ntensors = loss\nevery_n_iter = 1000\n"));
  const ProcessResult set = ctl({"set", name + ".every_n_iter=500"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_THAT(set.out, AllOf(HasSubstr("set " + name + ".every_n_iter=500: hook '" + name +
                                       "' recreated (its old instance had saved no state) at "
                                       "global step "),
                             Not(HasSubstr("with its saved state"))));
  const ProcessResult done = stop(*job);
  EXPECT_EQ(done.exit_code, 0) << done.err;
}

// A full disk under the run record: the change is made and the client is told so, with the
// record's failure; never "queued" for a hook that already runs.
TEST_F(LiveControlTest, AChangeMadeWhileTheRunRecordCannotBeWrittenIsAnsweredAsMadeWithAWarning) {
  fs::create_directories(run_dir());
  fs::create_symlink("/dev/full", run_dir() / "run-record.jsonl");  // every write: ENOSPC
  auto job = start(slow_job());
  const ProcessResult attached =
      ctl({"attach", "rec", "--plugin", "scripted", "--set", "trace=" + trace().string()});
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  EXPECT_THAT(attached.out,
              AllOf(HasSubstr("attached hook 'rec' (plugin 'scripted')"),
                    HasSubstr("warning: the run record missed this change (cannot append to the "
                              "run record"),
                    HasSubstr("the change was made"), Not(HasSubstr("queued"))));
  ASSERT_TRUE(wait_until([&] { return count_lines("rec after_run") >= 2; }));
  const ProcessResult set = ctl({"set", "rec.fetch=loss"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_THAT(set.out, AllOf(HasSubstr("hook 'rec' recreated"),
                             HasSubstr("warning: the run record missed this change")));
  const ProcessResult detached = ctl({"detach", "rec"});
  ASSERT_EQ(detached.exit_code, 0) << detached.err;
  EXPECT_THAT(detached.out, AllOf(HasSubstr("detached hook 'rec'"),
                                  HasSubstr("warning: the run record missed this change")));
  EXPECT_EQ(trace_lines("rec end").size(), 2u);  // the set's old instance and the detached one
  const ProcessResult done = stop(*job);
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_THAT(done.err, HasSubstr("the run record missed a 'attach' event"));
}

TEST_F(LiveControlTest, ConcurrentClientsAreEachAnsweredAndChangesApplyInOrder) {
  auto job = start(slow_job());
  // Nine client processes at once, started from this thread (a fork beside other threads could
  // inherit a lock held).
  std::vector<std::unique_ptr<Process>> clients;
  for (int i = 0; i < 9; ++i) {
    const fs::path cwd = root_ / ("client-" + std::to_string(i));
    fs::create_directories(cwd);
    std::vector<std::string> args = {"ctl", run_dir().string()};
    if (i % 3 == 2) {
      const std::vector<std::string> attach = {"attach",   "rec" + std::to_string(i / 3),
                                               "--plugin", "scripted",
                                               "--set",    "trace=" + trace().string()};
      args.insert(args.end(), attach.begin(), attach.end());
    } else {
      args.push_back("status");
    }
    clients.push_back(std::make_unique<Process>(args, cwd));
  }
  for (auto& client : clients) {
    const ProcessResult r = client->wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  const ProcessResult status = ctl({"status"});
  EXPECT_THAT(status.out, AllOf(HasSubstr("rec0"), HasSubstr("rec1"), HasSubstr("rec2")));
  // Each began once, before any of its steps.
  for (int i = 0; i < 3; ++i) {
    const std::vector<std::string> lines = trace_lines("rec" + std::to_string(i) + " ");
    ASSERT_FALSE(lines.empty());
    EXPECT_THAT(lines[0], HasSubstr(" begin "));
  }
  EXPECT_EQ(stop(*job).exit_code, 0);
}

TEST_F(LiveControlTest, StatusAnswersWhileASandboxedHookHangsAndSaysWhere) {
  auto job = start(slow_job("[hook.stuck]\nplugin = scripted\nisolation = process\ntrace = " +
                            trace().string() + "\nblock_in_before_secs = 10\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const ProcessResult status = ctl({"status"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out,
              AllOf(HasSubstr("job: running, global step 0"), HasSubstr("the step is running"),
                    HasSubstr("no step has ended for"), HasSubstr("running: hook 'stuck'"),
                    HasSubstr("before_run")));
  // Answered while the call still blocks: the hook's trace has no after_run yet.
  EXPECT_EQ(count_lines("stuck after_run"), 0u);
  // A stop asked for now takes effect once the call returns.
  const ProcessResult done = stop(*job);
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_THAT(done.out, HasSubstr("job stopped (hookhost ctl: test done)"));
}

// A hook stuck in a call (in process) is detached once the call returns: the change waits for
// the step boundary, and the hook gets its end after the call it was in.
TEST_F(LiveControlTest, DetachingAHookStuckInACallTakesEffectWhenTheCallReturns) {
  auto job = start(slow_job("[hook.stuck]\nplugin = scripted\ntrace = " + trace().string() +
                            "\nblock_in_before_secs = 3\n"));
  ASSERT_TRUE(wait_until([&] { return count_lines("stuck before_run") >= 1; }));  // now blocked
  const ProcessResult detached = ctl({"detach", "stuck"});
  ASSERT_EQ(detached.exit_code, 0) << detached.err;
  EXPECT_THAT(detached.out, HasSubstr("detached hook 'stuck'"));
  const std::vector<std::string> lines = trace_lines("stuck ");
  ASSERT_GE(lines.size(), 5u);
  // The blocked before_run, its step's after_run, then the end: nothing cut short.
  EXPECT_THAT(lines[2], HasSubstr("stuck before_run gs=0 "));
  EXPECT_THAT(lines[3], HasSubstr("stuck after_run gs=0 "));
  EXPECT_THAT(lines[lines.size() - 2], HasSubstr("stuck end outcome=detached"));
  EXPECT_EQ(lines.back(), "stuck destroy");
  EXPECT_EQ(stop(*job).exit_code, 0);
}

// A sandboxed hook stuck in a call is not waited for: its runner (its own) is killed, the detach
// takes effect at the boundary the step then reaches, and on_crash = restart does not bring it
// back. It gets no end (its process is gone); the job and its other hooks go on.
TEST_F(LiveControlTest, DetachingASandboxedHookStuckInACallKillsItsRunner) {
  auto job =
      start(slow_job("[hook.stuck]\nplugin = scripted\nisolation = process\n"
                     "on_crash = restart\ntrace = " +
                     trace().string() + "\nblock_in_before_secs = 600\n"));
  ASSERT_TRUE(wait_until([&] { return count_lines("stuck before_run") >= 1; }));  // now blocked
  ASSERT_THAT(ctl({"status"}).out, HasSubstr("running: hook 'stuck'"));
  const ProcessResult detached = ctl({"detach", "stuck"});
  ASSERT_EQ(detached.exit_code, 0) << detached.err;
  // Answered with the change done, not "queued": the 600 s call did not hold it up.
  EXPECT_THAT(detached.out,
              AllOf(HasSubstr("detached hook 'stuck' at global step"),
                    HasSubstr("its runner was killed in the call it was stuck in: it had no end")));
  const int64_t off = step_in(detached.out);
  ASSERT_TRUE(wait_until([&] { return step_in(ctl({"status"}).out) > off + 5; }));
  const ProcessResult status = ctl({"status"});
  EXPECT_THAT(status.out, HasSubstr("detached (by hookhost ctl)"));
  // Its one before_run, cut short: no after_run, no end, and no restart's second begin.
  EXPECT_EQ(count_lines("stuck before_run"), 1u);
  EXPECT_EQ(count_lines("stuck after_run"), 0u);
  EXPECT_EQ(count_lines("stuck end"), 0u);
  EXPECT_EQ(count_lines("stuck begin"), 1u);
  const ProcessResult done = stop(*job);
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_THAT(done.out, HasSubstr("job stopped (hookhost ctl: test done)"));
  EXPECT_THAT(done.err,
              AllOf(HasSubstr("was killed by the host to detach it (hookhost ctl detach)"),
                    HasSubstr("its runner process was killed"), Not(HasSubstr("on_crash=restart")),
                    Not(HasSubstr("restarted"))));
}

// The same for an observer stuck behind the step, in its worker: the detach waits at the boundary
// for the worker's queue, and the stuck call there is ended by killing the hook's runner.
TEST_F(LiveControlTest, DetachingASandboxedObserverStuckBehindTheStepKillsItsRunner) {
  auto job =
      start(slow_job("[hook.behind]\nplugin = scripted\nisolation = process\n"
                     "mode = observe\non_crash = restart\ntrace = " +
                     trace().string() + "\nafter_run_sleep_ms = 600000\n"));
  ASSERT_TRUE(wait_until([&] { return count_lines("behind before_run") >= 1; }));
  const ProcessResult detached = ctl({"detach", "behind"});
  ASSERT_EQ(detached.exit_code, 0) << detached.err;
  EXPECT_THAT(detached.out,
              AllOf(HasSubstr("detached hook 'behind' at global step"),
                    HasSubstr("its runner was killed in the call it was stuck in: it had no end")));
  const int64_t off = step_in(detached.out);
  ASSERT_TRUE(wait_until([&] { return step_in(ctl({"status"}).out) > off + 5; }));
  EXPECT_EQ(count_lines("behind after_run"), 0u);
  EXPECT_EQ(count_lines("behind end"), 0u);
  EXPECT_EQ(count_lines("behind begin"), 1u);
  const ProcessResult done = stop(*job);
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_THAT(done.err, AllOf(HasSubstr("its after_run at global step 0 was ended"),
                              Not(HasSubstr("on_crash=restart"))));
}

// A runner that other hooks share (an isolation group) is not killed for one of them: the detach
// waits for the call to return, and the hook then gets its end as usual.
TEST_F(LiveControlTest, DetachingAHookStuckInAGroupsRunnerWaitsForTheCall) {
  auto job =
      start(slow_job("[hook.stuck]\nplugin = scripted\nisolation = process\n"
                     "isolation_group = shared\ntrace = " +
                     trace().string() + "\nblock_in_before_secs = 3\n"));
  ASSERT_TRUE(wait_until([&] { return count_lines("stuck before_run") >= 1; }));  // now blocked
  const ProcessResult detached = ctl({"detach", "stuck"});
  ASSERT_EQ(detached.exit_code, 0) << detached.err;
  EXPECT_THAT(detached.out, HasSubstr("it had its end (outcome detached"));
  const std::vector<std::string> lines = trace_lines("stuck ");
  ASSERT_GE(lines.size(), 5u);
  EXPECT_THAT(lines[3], HasSubstr("stuck after_run gs=0 "));  // the call was not cut short
  EXPECT_THAT(lines[lines.size() - 2], HasSubstr("stuck end outcome=detached"));
  const ProcessResult done = stop(*job);
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_THAT(done.err, Not(HasSubstr("was killed by the host")));
}

// docs/operations.md's ctl session, as written: each request of its first example is sent to a
// running job (its run directory in place of runs/demo), and each answer's first line reads as
// the page shows it, numbers aside. The attached logging_tensor logs the loss.
TEST_F(LiveControlTest, TheOperationsPageSessionRunsAsWritten) {
  const std::string page = read_file(fs::path(HOOKHOST_SOURCE_DIR) / "docs" / "operations.md");
  const size_t at = page.find("```\n$ hookhost ctl runs/demo ");
  ASSERT_NE(at, std::string::npos);
  const std::string block = page.substr(at + 4, page.find("```", at + 4) - at - 4);
  std::vector<std::pair<std::string, std::string>> session;  // request, first line of the answer
  for (const std::string& line : lines_of(block)) {
    if (line.starts_with("$ hookhost ctl runs/demo "))
      session.emplace_back(line.substr(std::strlen("$ hookhost ctl runs/demo ")), "");
    else if (!session.empty() && session.back().second.empty())
      session.back().second = line;
  }
  ASSERT_GE(session.size(), 6u);
  auto job = start(slow_job());
  const std::string dir = run_dir().string();
  for (const auto& [request, answer] : session) {
    std::vector<std::string> words;  // split as a shell would: "..." is one word
    std::smatch m;
    const std::regex word("\"([^\"]*)\"|(\\S+)");
    for (auto it = request.cbegin(); std::regex_search(it, request.cend(), m, word);
         it = m.suffix().first)
      words.push_back(m[1].matched ? m[1].str() : m[2].str());
    // The page's answer with its numbers, times and paths as patterns.
    const std::string page_answer = std::regex_replace(answer, std::regex("runs/demo"), dir);
    std::string pattern;
    for (size_t i = 0; i < page_answer.size(); ++i) {
      const char c = page_answer[i];
      const bool in_number =
          std::isdigit(static_cast<unsigned char>(c)) ||
          ((c == '.' || c == ':') && pattern.ends_with("[0-9.:]+") && i + 1 < page_answer.size() &&
           std::isdigit(static_cast<unsigned char>(page_answer[i + 1])));
      if (in_number) {
        if (!pattern.ends_with("[0-9.:]+")) pattern += "[0-9.:]+";
      } else if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos) {
        pattern += std::string("\\") + c;
      } else {
        pattern += c;
      }
    }
    const ProcessResult reply = ctl(words);
    ASSERT_EQ(reply.exit_code, 0) << request << "\n" << reply.err;
    const std::string first = reply.out.substr(0, reply.out.find('\n'));
    EXPECT_TRUE(std::regex_match(first, std::regex(pattern)))
        << request << "\n  page: " << answer << "\n  got:  " << first;
  }
  const ProcessResult done = job->wait();
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_THAT(done.out, HasSubstr("job stopped (hookhost ctl: enough for today)"));
  EXPECT_THAT(done.err, AllOf(HasSubstr("[loss_log] [info]"), HasSubstr("loss = ")));
}

// A run directory whose path is longer than a socket address holds (108 bytes), and a hook name
// far past any small-string buffer: the socket is reached through the open folder.
TEST_F(LiveControlTest, ALongRunDirectoryAndALongHookNameAreServed) {
  const std::string deep = "run/" + std::string(120, 'd') + "/" + std::string(60, 'e');
  ASSERT_GT((root_.path() / deep / "control.sock").string().size(), 108u);
  write_file(root_ / "long.ini", "[run]\nrun_dir = " + deep +
                                     "\n[workload]\nname = linreg\nepochs = 0\nstep_delay_ms = 5\n"
                                     "[hook.stop]\nplugin = stop_at_step\nlast_step = 1000000\n");
  Process job({"run", "--config", (root_ / "long.ini").string(), "--plugin-dir",
               (root_ / "plugins").string()},
              root_.path());
  const std::string dir = (root_.path() / deep).string();
  auto ctl_long = [&](std::vector<std::string> request) {
    request.insert(request.begin(), {"ctl", dir});
    const fs::path cwd = root_ / ("ctl-" + std::to_string(next_client_++));
    fs::create_directories(cwd);
    return run_hookhost(request, cwd);
  };
  ASSERT_TRUE(wait_until([&] { return ctl_long({"status"}).exit_code == 0; }));
  const std::string name = "a_hook_name_well_past_sixteen_bytes_" + std::string(160, 'n');
  const ProcessResult attached =
      ctl_long({"attach", name, "--plugin", "scripted", "--set", "trace=" + trace().string()});
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  ASSERT_TRUE(wait_until([&] { return count_lines(name + " after_run") >= 2; }));
  const std::string status = ctl_long({"status"}).out;
  EXPECT_THAT(status, HasSubstr(name));
  // The hook's rows keep every column and end where they should: the name's row has its callback,
  // calls, p50, p99 and max, and the next row starts on a line of its own.
  const std::regex row("^" + name + " +scripted +begin +1 +[0-9.]+ +[0-9.]+ +[0-9.]+$");
  bool found = false;
  for (const std::string& line : lines_of(status)) found = found || std::regex_match(line, row);
  EXPECT_TRUE(found) << status;
  EXPECT_THAT(status, HasSubstr("\n" + std::string(20, ' ') + " " + std::string(20, ' ') +
                                " after_create_session"));
  const ProcessResult set = ctl_long({"set", name + ".fetch=loss"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_EQ(count_lines(name + " begin state=after_runs="), 1u);  // recreated with its state
  ASSERT_EQ(ctl_long({"detach", name}).exit_code, 0);
  EXPECT_EQ(trace_lines(name + " ").back(), name + " destroy");
  EXPECT_EQ(ctl_long({"stop"}).exit_code, 0);
  EXPECT_EQ(job.wait().exit_code, 0);
}

// An attached sandboxed hook whose runner dies is restarted with its last saved state, as a hook
// from the file would be, and a later set of it keeps that state too.
TEST_F(LiveControlTest, AnAttachedSandboxedHookIsRestartedWithItsStateAfterItsRunnerDies) {
  auto job = start(slow_job());
  // The kill step must lie ahead of the attach, which a loaded machine can make slow: an attach
  // that came too late is detached, its trace removed, and the next looks further ahead.
  int64_t kill_at = 0;
  int64_t attached_at = 0;
  for (int64_t ahead = 150;; ahead *= 4) {
    kill_at = step_in(ctl({"status"}).out) + ahead;
    const ProcessResult attached =
        ctl({"attach", "boxed", "--plugin", "scripted", "--set", "isolation=process", "--set",
             "trace=" + trace().string(), "--set", "kill_at_step=" + std::to_string(kill_at),
             "--set", "kill_marker=" + (root_ / "killed").string()});
    ASSERT_EQ(attached.exit_code, 0) << attached.err;
    attached_at = step_in(attached.out);
    if (attached_at < kill_at) break;
    ASSERT_LT(ahead, 9600) << "the job passed every kill step before its attach";
    ASSERT_EQ(ctl({"detach", "boxed"}).exit_code, 0);
    fs::remove(trace());
  }
  ASSERT_TRUE(wait_until([&] { return count_lines("boxed begin") >= 2; }));
  EXPECT_TRUE(fs::exists(root_ / "killed"));
  const std::vector<std::string> begins = trace_lines("boxed begin");
  EXPECT_EQ(begins[0].rfind("boxed begin state=- ", 0), 0u) << begins[0];
  std::smatch m;
  ASSERT_TRUE(std::regex_search(begins[1], m, std::regex("state=after_runs=(\\d+)"))) << begins[1];
  // Its count up to the kill (one after_run a step from the attach's), not from zero.
  EXPECT_GE(std::stoll(m[1]), kill_at - attached_at - 1);
  ASSERT_TRUE(wait_until([&] {
    return count_lines("boxed after_run") > static_cast<size_t>(kill_at - attached_at) + 10;
  }));
  EXPECT_THAT(ctl({"status"}).out,
              HasSubstr("running, its runner was restarted 1 time (max_restarts = 3)"));
  const ProcessResult done = stop(*job);
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_THAT(done.err, HasSubstr("restarted with its last saved state"));
}

// ctl --help names the outcome a detach gives, as operations.md does.
// A plugin's own words in a reply reach the operator's terminal escaped: an end that fails when
// the hook is detached, and a begin that fails an attach.
TEST_F(LiveControlTest, APluginsMessageInAReplyIsEscapedForTheTerminal) {
  auto job = start(slow_job("[hook.rec]\nplugin = scripted\ntrace = " + trace().string() +
                            "\nfail_in = end\nfail_escape = true\n"));
  const ProcessResult detached = ctl({"detach", "rec"});
  ASSERT_EQ(detached.exit_code, 0) << detached.err;
  EXPECT_THAT(detached.out, AllOf(HasSubstr(", which failed: "),
                                  HasSubstr("scripted failure in end \\e]0;pwned\\x07")));
  EXPECT_EQ(detached.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(detached.out.find('\x07'), std::string::npos);
  const ProcessResult attached =
      ctl({"attach", "bad", "--plugin", "scripted", "--set", "trace=" + trace().string(), "--set",
           "fail_in=begin", "--set", "fail_escape=true"});
  EXPECT_EQ(attached.exit_code, 1);
  EXPECT_THAT(attached.err, AllOf(HasSubstr("failed at once and is disabled: "),
                                  HasSubstr("scripted failure in begin \\e]0;pwned\\x07")));
  EXPECT_EQ(attached.err.find('\x1b'), std::string::npos);
  EXPECT_EQ(attached.err.find('\x07'), std::string::npos);
  const ProcessResult done = stop(*job);
  EXPECT_EQ(done.exit_code, 0) << done.err;
}

// An attach loads the plugin file as it is now: a file swapped after the job started is the one
// attached, and a pinned SHA-256 of the old file refuses it.
TEST_F(LiveControlTest, AnAttachTakesThePluginFileAsItIsNowAndAPinRefusesASwappedOne) {
  const fs::path file = root_ / "plugins" / fixture_plugin("scripted").filename();
  const std::string original = sha256_of_file(file);
  auto job = start(slow_job());
  {  // swapped while the job runs: the same plugin with bytes appended (still a valid ELF file)
    std::ofstream out(file, std::ios::app | std::ios::binary);
    out << "swapped";
  }
  const std::string swapped = sha256_of_file(file);
  ASSERT_NE(swapped, original);
  const ProcessResult pinned = ctl({"attach", "pinned", "--plugin", "scripted", "--set",
                                    "trace=" + trace().string(), "--set", "sha256=" + original});
  EXPECT_EQ(pinned.exit_code, 1);
  EXPECT_THAT(pinned.err, AllOf(HasSubstr("has SHA-256 " + swapped),
                                HasSubstr("but the configuration pins " + original),
                                HasSubstr("Nothing was changed")));
  EXPECT_EQ(count_lines("pinned "), 0u);
  const ProcessResult current = ctl({"attach", "current", "--plugin", "scripted", "--set",
                                     "trace=" + trace().string(), "--set", "sha256=" + swapped});
  ASSERT_EQ(current.exit_code, 0) << current.err;
  ASSERT_TRUE(wait_until([&] { return count_lines("current after_run") >= 1; }));
  EXPECT_EQ(stop(*job).exit_code, 0);
}

TEST_F(LiveControlTest, TheSocketIsTheOwnersAndAnotherUserIsRefused) {
  auto job = start(slow_job());
  const fs::path socket = run_dir() / "control.sock";
  struct stat st {};
  ASSERT_EQ(::stat(socket.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, ::geteuid());
  if (::geteuid() != 0) {
    EXPECT_EQ(stop(*job).exit_code, 0);
    GTEST_SKIP() << "another user's connection needs root to become that user";
  }
  // Even with the socket's mode opened up (a mistake), SO_PEERCRED refuses another user.
  ASSERT_EQ(::chmod(root_.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(run_dir().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(socket.c_str(), 0666), 0);
  int reply_pipe[2];
  ASSERT_EQ(::pipe(reply_pipe), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(reply_pipe[0]);
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket.c_str(), sizeof address.sun_path - 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) ::_exit(4);
    // The job may refuse before it reads: no SIGPIPE for a write it no longer takes.
    (void)!::send(fd, "stop\n", 5, MSG_NOSIGNAL);
    char buffer[512];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) (void)!::write(reply_pipe[1], buffer, static_cast<size_t>(n));
    ::_exit(0);
  }
  ::close(reply_pipe[1]);
  std::string reply;
  char buffer[512];
  for (ssize_t n; (n = ::read(reply_pipe[0], buffer, sizeof buffer)) > 0;)
    reply.append(buffer, static_cast<size_t>(n));
  ::close(reply_pipe[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << WEXITSTATUS(status);
  EXPECT_THAT(reply, AllOf(HasSubstr("error\nrefused: this job answers only its own user"),
                           HasSubstr("not uid 65534")));
  // The refused stop did nothing: the job still runs.
  const int64_t step = step_in(ctl({"status"}).out);
  ASSERT_TRUE(wait_until([&] { return step_in(ctl({"status"}).out) > step + 3; }));
  EXPECT_EQ(stop(*job).exit_code, 0);
}

TEST_F(LiveControlTest, AJobKilledAfterAnAttachResumesWithTheAttachedHookAndItsState) {
  auto job = start(slow_job());
  ASSERT_EQ(ctl({"attach", "rec", "--plugin", "scripted", "--set", "trace=" + trace().string()})
                .exit_code,
            0);
  ASSERT_TRUE(wait_until([&] { return count_lines("rec after_run") >= 5; }));
  const ProcessResult saved = ctl({"checkpoint"});
  ASSERT_EQ(saved.exit_code, 0) << saved.err;
  EXPECT_THAT(saved.out, HasSubstr("wrote "));
  const int64_t at = step_in(saved.out);
  job->signal(SIGKILL);
  EXPECT_EQ(job->wait().exit_code, 128 + SIGKILL);
  // The after_runs it had counted up to the checkpoint: its lines up to that step.
  int64_t counted = 0;
  for (const auto& line : trace_lines("rec after_run gs=")) {
    const int64_t gs = std::stoll(line.substr(std::strlen("rec after_run gs=")));
    if (gs < at) ++counted;
  }

  auto resumed = start(slow_job());
  const std::vector<std::string> begins = trace_lines("rec begin");
  ASSERT_EQ(begins.size(), 2u);
  EXPECT_EQ(begins[1], "rec begin state=after_runs=" + std::to_string(counted) +
                           " live=" + std::to_string(at));
  const ProcessResult done = stop(*resumed);
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_THAT(done.err, HasSubstr("resuming with the live changes of the newest checkpoint: "
                                  "hook.rec.plugin=scripted, hook.rec.trace="));

  // Detached and saved again: the next resume runs without it.
  auto third = start(slow_job());
  ASSERT_EQ(ctl({"detach", "rec"}).exit_code, 0);
  // Attached again under its name, a hook starts without the state the resumed one was given.
  const size_t begins_resumed = count_lines("rec begin");
  ASSERT_EQ(ctl({"attach", "rec", "--plugin", "scripted", "--set", "trace=" + trace().string()})
                .exit_code,
            0);
  ASSERT_TRUE(wait_until([&] { return count_lines("rec begin") > begins_resumed; }));
  EXPECT_EQ(trace_lines("rec begin").back().rfind("rec begin state=- ", 0), 0u)
      << trace_lines("rec begin").back();
  ASSERT_EQ(ctl({"detach", "rec"}).exit_code, 0);
  ASSERT_EQ(ctl({"checkpoint"}).exit_code, 0);
  third->signal(SIGKILL);
  third->wait();
  auto fourth = start(slow_job());
  const size_t begins_before = count_lines("rec begin");
  const ProcessResult end = stop(*fourth);
  EXPECT_EQ(end.exit_code, 0) << end.err;
  EXPECT_EQ(count_lines("rec begin"), begins_before);
  EXPECT_THAT(end.out, Not(HasSubstr("  rec ")));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
