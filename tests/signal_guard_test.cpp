// The host keeps the handlers of SIGINT, SIGTERM and the fatal signals: a plugin that replaces them
// has the change undone after create() and the non-step calls (the runtime's snapshots, in any
// embedding program), and refused when it is made in the hookhost program (its sigaction/signal
// interposer), per-step calls included; either way the log names the hook.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <hookhost/host/discovery.hpp>
#include <hookhost/host/loader.hpp>
#include <hookhost/host/runtime.hpp>
#include <sstream>

#include "process.hpp"
#include "runtime/signal_guard.hpp"
#include "test_support.hpp"
#include "testing/scripted_workload.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

void marker_handler(int) {}

// Installs a recognisable SIGINT/SIGTERM handler for the test and puts the previous ones back.
class OwnHandlers {
 public:
  OwnHandlers() {
    struct sigaction sa {};
    sa.sa_handler = &marker_handler;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &previous_int_);
    ::sigaction(SIGTERM, &sa, &previous_term_);
  }
  ~OwnHandlers() {
    ::sigaction(SIGINT, &previous_int_, nullptr);
    ::sigaction(SIGTERM, &previous_term_, nullptr);
  }
  static bool in_place() {
    struct sigaction now_int {
    }, now_term{};
    ::sigaction(SIGINT, nullptr, &now_int);
    ::sigaction(SIGTERM, nullptr, &now_term);
    return now_int.sa_handler == &marker_handler && now_term.sa_handler == &marker_handler;
  }

 private:
  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
};

TEST(SignalDispositions, RestoreChangesPutsBackOnlyWhatChanged) {
  OwnHandlers own;
  const SignalDispositions before = SignalDispositions::snapshot();
  EXPECT_TRUE(before.restore_changes().empty());
  ::signal(SIGTERM, SIG_IGN);
  const std::vector<int> changed = before.restore_changes();
  EXPECT_EQ(changed, std::vector<int>{SIGTERM});
  EXPECT_EQ(signal_names(changed), "SIGTERM");
  EXPECT_TRUE(OwnHandlers::in_place());
  EXPECT_FALSE(is_guarded_signal(SIGUSR1));
  EXPECT_TRUE(is_guarded_signal(SIGSEGV));
}

// The runtime without the program's interposer: the snapshot around each non-step call.
class RuntimeSnapshots : public ::testing::TestWithParam<const char*> {};

TEST_P(RuntimeSnapshots, AHandlerAPluginInstallsIsUndoneAndNamed) {
  const std::string callback = GetParam();
  OwnHandlers own;
  TempDir dir;
  const fs::path plugins = dir / "plugins";
  fs::create_directories(plugins);
  const fs::path file = copy_plugin(fixture_plugin("faulty"), plugins);
  const DiscoveryResult found = discover_plugins({plugins});
  const DiscoveredPlugin* d = found.find("faulty");
  ASSERT_NE(d, nullptr);
  auto plugin = load_plugin(*d);

  std::ostringstream log;
  RuntimeOptions options;
  options.logger = std::make_shared<spdlog::logger>(
      "hookhost", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  options.run_dir = dir / "run";
  detail::Script script;
  script.end_of_data_step = 4;  // steps 1..3
  ScriptedWorkload session(script);
  {
    Runtime runtime(session, options);
    runtime.add_hook(plugin, HookSettings{"grabby", 0, FailurePolicy::disable},
                     resolve_params(plugin->metadata(), "grabby",
                                    {{"behaviour", "install_handlers"},
                                     {"callback", callback},
                                     {"trace", (dir / "trace.txt").string()}}));
    EXPECT_EQ(runtime.run_to_end().outcome, Outcome::completed);
  }
  EXPECT_TRUE(OwnHandlers::in_place());
  EXPECT_THAT(read_file(dir / "trace.txt"), HasSubstr("installed handlers"));
  EXPECT_THAT(log.str(), AllOf(HasSubstr("hook 'grabby' (plugin 'faulty', "),
                               HasSubstr("replaced the handler of SIGINT, SIGTERM in " + callback),
                               HasSubstr("the host's handler is restored")))
      << log.str();
}

INSTANTIATE_TEST_SUITE_P(NonStepCalls, RuntimeSnapshots,
                         ::testing::Values("create", "begin", "after_create_session", "end"));

// The program: refused when made, in a per-step call too, and SIGTERM still stops the job.
TEST(SignalInterposer, APluginCannotTakeSigtermFromTheProgram) {
  TempDir dir;
  const fs::path plugins = dir / "plugins";
  fs::create_directories(plugins);
  const fs::path file = copy_plugin(fixture_plugin("faulty"), plugins);
  const fs::path trace = dir / "trace.txt";
  write_file(dir / "job.ini",
             "[run]\nrun_dir = run\n\n[workload]\nname = linreg\nepochs = 0\n\n"
             "[hook.grabby]\nplugin = faulty\nbehaviour = install_handlers\ncallback = before_run\n"
             "at_step = 2\ntrace = " +
                 trace.string() + "\n");
  Process job({"run", "--config", (dir / "job.ini").string(), "--plugin-dir", plugins.string()},
              dir.path());
  ASSERT_TRUE(
      wait_until([&] { return read_file(trace).find("installed handlers") != std::string::npos; }));
  job.signal(SIGTERM);
  const ProcessResult r = job.wait();
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
  EXPECT_THAT(r.out, HasSubstr("job stopped"));
  EXPECT_THAT(r.err, AllOf(HasSubstr("hook 'grabby' (plugin 'faulty', " + file.string() +
                                     ") in before_run at global step 2 called sigaction(SIGTERM): "
                                     "refused"),
                           HasSubstr("called signal(SIGINT): refused"),
                           Not(HasSubstr("replaced the handler"))))
      << r.err;
}

// The deadly variant: handlers that never return, then a segfault. Refused, the crash is named
// and ends the process instead of hanging it.
TEST(SignalInterposer, AHangingHandlerCannotSwallowACrash) {
  TempDir dir;
  const fs::path plugins = dir / "plugins";
  fs::create_directories(plugins);
  const fs::path file = copy_plugin(fixture_plugin("faulty"), plugins);
  write_file(dir / "job.ini",
             "[run]\nrun_dir = run\n\n[workload]\nname = linreg\nepochs = 2\n\n"
             "[hook.grabby]\nplugin = faulty\nbehaviour = signal_handler\ncallback = after_run\n"
             "at_step = 2\n");
  const ProcessResult r = run_hookhost(
      {"run", "--config", (dir / "job.ini").string(), "--plugin-dir", plugins.string()},
      dir.path());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, AllOf(HasSubstr("called signal(SIGSEGV): refused"),
                           HasSubstr("hookhost: SIGSEGV (signal 11) while hook 'grabby' (plugin "
                                     "'faulty', " +
                                     file.string() + ") in after_run")))
      << r.err;
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
