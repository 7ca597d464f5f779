// The out-of-process tier with real plugin files and real runner processes: hooks that crash,
// exit, hang, flood and lie are contained and named, the other hooks get every call in order, a
// lost hook gets no further call, a restart brings it back with its state, and a well-behaved
// hook produces exactly what it produces in process. No test asserts a duration.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <hookhost/host/discovery.hpp>
#include <hookhost/host/loader.hpp>
#include <hookhost/host/runtime.hpp>
#include <hookhost/host/tensor.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "process.hpp"
#include "sandbox/process_dispatch.hpp"
#include "sandbox/protocol.hpp"
#include "sandbox/shared_values.hpp"
#include "sandbox/view_codec.hpp"
#include "test_support.hpp"
#include "testing/scripted_workload.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr auto kHangTimeout = std::chrono::milliseconds(300);
// Generous: only a hook that hangs on purpose should ever reach it.
constexpr auto kCalmTimeout = std::chrono::milliseconds(30000);

// A string tensor of the given elements.
Tensor strings(const std::vector<std::string>& items) {
  std::vector<hh_str> views;
  for (const auto& s : items) views.push_back(hh_str{s.data(), s.size()});
  const int64_t shape[1] = {static_cast<int64_t>(items.size())};
  hh_tensor v;
  hh_tensor_init(&v);
  v.name = "";
  v.dtype = HH_DTYPE_STRING;
  v.rank = 1;
  v.shape = shape;
  v.data = views.data();
  v.byte_size = views.size() * sizeof(hh_str);
  return Tensor::from_view(v);
}

// The script of the sandbox tests' workload: steps 1..5, a loss of 10/step, plus a string fetch
// ("tag") and a string feed ("note").
detail::Script sandbox_script() {
  detail::Script script;
  script.end_of_data_step = 6;
  script.values["loss"] = [](int64_t step) { return Value(10.0f / static_cast<float>(step)); };
  script.values["tag"] = [](int64_t step) {
    return Value(strings({"step-" + std::to_string(step), std::string("x\0y", 3)}));
  };
  script.feedable.insert("note");
  return script;
}

// A log sink whose text can be read while runner threads may still be logging.
class CapturingSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::string text() {
    std::lock_guard lock(mutex_);
    return text_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    text_.append(formatted.data(), formatted.size());
  }
  void flush_() override {}

 private:
  std::string text_;
};

// A runtime over the scripted workload with fixture plugins copied into a temporary folder.
class Sandbox {
 public:
  Sandbox() {
    fs::create_directories(plugin_dir());
    fs::create_directories(run_dir());
    for (const char* name : {"faulty", "faulty_constructor", "faulty_throw", "c_recorder"})
      copy_plugin(fixture_plugin(name), plugin_dir());
    found_ = discover_plugins({plugin_dir()});
    for (const auto& r : found_.rejected) ADD_FAILURE() << r.file << ": " << r.reason;
    sink_->set_pattern("[%n] [%l] %v");
  }

  std::vector<SessionRun> runs;  // one per run() call of the workload
  ScriptedWorkload session{sandbox_script(), &runs};
  std::string pin;  // the SHA-256 a plugin built with `load` false must have (empty: none)
  uint32_t max_restarts = 3;

  const fs::path& root() const { return dir_.path(); }
  fs::path plugin_dir() const { return dir_ / "plugins"; }
  fs::path run_dir() const { return dir_ / "run"; }
  fs::path trace() const { return dir_ / "trace.txt"; }
  std::vector<std::string> trace_lines() const { return lines_of(trace()); }
  std::string log() { return sink_->text(); }

  Runtime& runtime() {
    if (!runtime_) {
      RuntimeOptions options;
      options.logger = std::make_shared<spdlog::logger>("hookhost", sink_);
      options.logger->set_level(spdlog::level::debug);
      options.run_dir = run_dir();
      options.recovery_backoff = std::chrono::milliseconds(1);
      runtime_ = std::make_unique<Runtime>(session, options);
    }
    return *runtime_;
  }

  const DiscoveredPlugin& discovered(const std::string& id) {
    const DiscoveredPlugin* p = found_.find(id);
    if (!p) throw std::runtime_error("plugin '" + id + "' was not discovered");
    return *p;
  }

  std::multimap<std::string, std::string> faulty_params(const std::string& behaviour,
                                                        const std::string& callback,
                                                        int at_step = 2) const {
    return {{"behaviour", behaviour},
            {"callback", callback},
            {"at_step", std::to_string(at_step)},
            {"trace", trace().string()}};
  }

  // A process-isolated instance through the runtime's factory add_hook. For plugins that must
  // never run in this process, `load` false builds the LoadedPlugin from discovery alone.
  ProcessDispatch* add_sandboxed(const std::string& instance, const std::string& plugin_id,
                                 const std::multimap<std::string, std::string>& raw,
                                 SandboxOptions options = {},
                                 FailurePolicy policy = FailurePolicy::disable, bool load = true,
                                 CrashPolicy on_crash = CrashPolicy::disable,
                                 std::shared_ptr<RunnerGroup> group = nullptr) {
    std::shared_ptr<const LoadedPlugin> plugin;
    if (load) {
      plugin = load_plugin(discovered(plugin_id));
    } else {
      const DiscoveredPlugin& d = discovered(plugin_id);
      plugin = std::make_shared<LoadedPlugin>(d.file, d.metadata, nullptr, pin);
    }
    const ResolvedParams params = resolve_params(plugin->metadata(), instance, raw);
    ProcessDispatch* made = nullptr;
    HookSettings settings;
    settings.instance_name = instance;
    settings.on_error = policy;
    settings.on_crash = on_crash;  // these tests look at one loss; restarts are the runtime's
    settings.max_restarts = max_restarts;
    runtime().add_hook(plugin->metadata().id, 1, settings, [&](const hh_host& host) {
      auto dispatch = make_process_dispatch(*plugin, instance, params, host, options, group);
      made = dynamic_cast<ProcessDispatch*>(dispatch.get());
      return dispatch;
    });
    return made;
  }

  void add_in_process(const std::string& instance, const std::string& plugin_id,
                      const std::multimap<std::string, std::string>& raw,
                      FailurePolicy policy = FailurePolicy::disable) {
    auto plugin = load_plugin(discovered(plugin_id));
    runtime().add_hook(plugin, HookSettings{instance, 0, policy},
                       resolve_params(plugin->metadata(), instance, raw));
  }

  void add_recorder(const std::string& instance) {
    add_in_process(instance, "c_recorder", {{"trace", trace().string()}});
  }

  const HookReport& report(const std::string& instance) {
    reports_ = runtime().reports();
    for (const auto& r : reports_)
      if (r.instance_name == instance) return r;
    throw std::runtime_error("no hook " + instance);
  }

  // Ends the runtime: end() and destroy() delivered, runners gone.
  void finish() { runtime_.reset(); }

 private:
  TempDir dir_;
  DiscoveryResult found_;
  std::shared_ptr<CapturingSink> sink_ = std::make_shared<CapturingSink>();
  std::unique_ptr<Runtime> runtime_;
  std::vector<HookReport> reports_;
};

SandboxOptions with_timeout(std::chrono::milliseconds timeout) {
  SandboxOptions options;
  options.call_timeout = timeout;
  return options;
}

bool process_gone(pid_t pid) {
  return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH;
}

// What the in-process recorder sees in a job of `steps` steps that reaches its end of data.
std::vector<std::string> full_recorder_trace(const std::string& name, int steps) {
  std::vector<std::string> lines = {name + " begin",
                                    name + " after_create_session gs=0 creation=1"};
  for (int k = 0; k < steps; ++k) {
    lines.push_back(name + " before_run gs=" + std::to_string(k) + " it=" + std::to_string(k));
    lines.push_back(name + " after_run gs=" + std::to_string(k) + " live=" + std::to_string(k + 1) +
                    " it=" + std::to_string(k) + " values=");
  }
  // The before_run of the step that found the end of data.
  lines.push_back(name + " before_run gs=" + std::to_string(steps) +
                  " it=" + std::to_string(steps));
  lines.push_back(name + " end outcome=completed gs=" + std::to_string(steps) +
                  " reason=end of data: the script has no data for step " +
                  std::to_string(steps + 1));
  return lines;
}

// ---- deadly behaviours x callbacks --------------------------------------------------------------

struct Deadly {
  std::string behaviour;
  std::string callback;
};

void PrintTo(const Deadly& d, std::ostream* os) {
  *os << d.behaviour << " in " << d.callback;
}

std::string expected_death(const std::string& behaviour) {
  if (behaviour == "abort") return "was killed by signal 6 (SIGABRT, Aborted)";
  if (behaviour == "segv" || behaviour == "thread_crash" || behaviour == "write_values")
    return "was killed by signal 11 (SIGSEGV, Segmentation fault)";
  if (behaviour == "exit3") return "exited with status 3";
  if (behaviour == "_exit0") return "exited with status 0 in the middle of a call";
  if (behaviour == "close_channel") return "closed its channel and was killed";
  return "did not answer within call_timeout_ms = 300 and was killed";
}

// The trace line of the call in which the hook dies.
std::string fatal_call_line(const std::string& callback) {
  if (callback == "before_run" || callback == "after_run") return "bad " + callback + " gs=2";
  return "bad " + callback;
}

class SandboxDeadlyTest : public ::testing::TestWithParam<Deadly> {};

TEST_P(SandboxDeadlyTest, ContainedNamedAndTheOtherHookGetsEveryCall) {
  const Deadly& param = GetParam();
  Sandbox sandbox;
  sandbox.max_restarts = 0;  // one loss, and no fresh runner for end (tested on its own below)
  ProcessDispatch* bad =
      sandbox.add_sandboxed("bad", "faulty", sandbox.faulty_params(param.behaviour, param.callback),
                            with_timeout(kHangTimeout));
  ASSERT_NE(bad, nullptr);
  sandbox.add_recorder("rec");
  const pid_t pid = bad->runner_pid();

  const JobResult result = sandbox.runtime().run_to_end();

  // The job is not taken down.
  EXPECT_EQ(result.outcome, Outcome::completed) << result.reason;
  EXPECT_EQ(result.steps_run, 5);
  // The failed call names what happened, in the report and in the log.
  const HookReport& report = sandbox.report("bad");
  const std::string death = "the hook's runner process (pid " + std::to_string(pid) + ") " +
                            expected_death(param.behaviour);
  EXPECT_EQ(report.failure, param.callback + " failed: " + death);
  EXPECT_EQ(report.disabled, param.callback != "end");
  EXPECT_NE(sandbox.log().find("failed in " + param.callback), std::string::npos);
  EXPECT_NE(sandbox.log().find(death), std::string::npos) << sandbox.log();
  // The runner is gone and reaped; every later call fails at once and says so.
  EXPECT_TRUE(bad->runner_lost());
  EXPECT_TRUE(process_gone(pid));
  const CallResult later = bad->begin();
  EXPECT_EQ(later.status, HH_ERROR_FATAL);
  EXPECT_TRUE(later.runner_lost);
  EXPECT_EQ(later.message, "not called: " + death + " earlier");

  sandbox.finish();
  const auto trace = sandbox.trace_lines();
  // The other hook received every call, in order.
  EXPECT_EQ(starting_with(trace, "rec "), full_recorder_trace("rec", 5));
  // The lost hook got nothing after the call it died in.
  const auto bad_lines = starting_with(trace, "bad ");
  ASSERT_FALSE(bad_lines.empty());
  EXPECT_EQ(bad_lines.back().rfind(fatal_call_line(param.callback), 0), 0u)
      << ::testing::PrintToString(bad_lines);
  EXPECT_EQ(std::count_if(bad_lines.begin(), bad_lines.end(),
                          [&](const std::string& l) {
                            return l.rfind(fatal_call_line(param.callback), 0) == 0;
                          }),
            1);
}

std::vector<Deadly> deadly_cases() {
  std::vector<Deadly> cases;
  for (const char* behaviour : {"abort", "segv", "exit3", "_exit0", "loop", "sleep", "thread_crash",
                                "signal_handler", "close_channel"})
    for (const char* callback : {"begin", "after_create_session", "before_run", "after_run", "end"})
      cases.push_back({behaviour, callback});
  cases.push_back({"write_values", "after_run"});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Faults, SandboxDeadlyTest, ::testing::ValuesIn(deadly_cases()),
                         [](const ::testing::TestParamInfo<Deadly>& info) {
                           std::string name = info.param.behaviour + "_in_" + info.param.callback;
                           name.erase(std::remove(name.begin(), name.end(), '_'), name.end());
                           return name;
                         });

// ---- the same hook in process and in a runner ---------------------------------------------------

struct Observed {
  JobResult result;
  std::vector<std::string> trace;
  std::vector<std::string> log;  // without debug lines (the runner's start is logged at debug)
  std::vector<std::vector<std::string>> fetches;
  std::vector<std::string> feeds;
  std::map<std::string, std::string> states;
  std::string failure;
  bool disabled = false;
};

std::string describe(const TensorMap& feeds) {
  std::string out;
  for (const auto& [name, t] : feeds) {
    out += name + ":" + hh_dtype_name(t.dtype()) + "[";
    if (t.dtype() == HH_DTYPE_STRING)
      for (const auto& s : t.strings()) out += "'" + s + "'";
    else
      for (size_t i = 0; i < t.element_count(); ++i) out += std::to_string(t.as_double(i)) + " ";
    out += "] ";
  }
  return out;
}

Observed observe(bool sandboxed, const std::string& behaviour, const std::string& callback,
                 int at_step, FailurePolicy policy = FailurePolicy::disable) {
  Sandbox sandbox;
  const auto params = sandbox.faulty_params(behaviour, callback, at_step);
  if (sandboxed)
    sandbox.add_sandboxed("hook", "faulty", params, with_timeout(kCalmTimeout), policy);
  else
    sandbox.add_in_process("hook", "faulty", params, policy);
  Observed o;
  o.result = sandbox.runtime().run_to_end();
  // Each run has its own temporary folder: compare everything else.
  const auto same_folder = [&](std::string text) {
    const std::string root = sandbox.root().string();
    for (size_t at; (at = text.find(root)) != std::string::npos;)
      text.replace(at, root.size(), "DIR");
    return text;
  };
  o.result.reason = same_folder(o.result.reason);
  o.states = sandbox.runtime().hook_states();
  o.failure = same_folder(sandbox.report("hook").failure);
  o.disabled = sandbox.report("hook").disabled;
  sandbox.finish();
  o.trace = sandbox.trace_lines();
  for (const auto& line : lines_of(sandbox.log()))
    if (line.find("] [debug] ") == std::string::npos) o.log.push_back(same_folder(line));
  for (const SessionRun& run : sandbox.runs) {
    o.fetches.push_back(run.fetched);
    o.feeds.push_back(describe(run.fed));
  }
  return o;
}

struct Twin {
  std::string behaviour;
  std::string callback;
  int at_step;
  FailurePolicy policy;
};

void PrintTo(const Twin& t, std::ostream* os) {
  *os << t.behaviour << " in " << t.callback << " at step " << t.at_step
      << ", on_error=" << policy_name(t.policy);
}

class SandboxTwinTest : public ::testing::TestWithParam<Twin> {};

TEST_P(SandboxTwinTest, SameCallsValuesFeedsStateAndLogAsInProcess) {
  const Twin& t = GetParam();
  const Observed in_process = observe(false, t.behaviour, t.callback, t.at_step, t.policy);
  const Observed sandboxed = observe(true, t.behaviour, t.callback, t.at_step, t.policy);
  EXPECT_EQ(sandboxed.trace, in_process.trace);
  EXPECT_EQ(sandboxed.log, in_process.log);
  EXPECT_EQ(sandboxed.fetches, in_process.fetches);
  EXPECT_EQ(sandboxed.feeds, in_process.feeds);
  EXPECT_EQ(sandboxed.states, in_process.states);
  EXPECT_EQ(sandboxed.failure, in_process.failure);
  EXPECT_EQ(sandboxed.disabled, in_process.disabled);
  EXPECT_EQ(sandboxed.result.outcome, in_process.result.outcome);
  EXPECT_EQ(sandboxed.result.reason, in_process.result.reason);
  EXPECT_EQ(sandboxed.result.steps_run, in_process.result.steps_run);
  // The runs did something worth comparing.
  EXPECT_GT(in_process.trace.size(), 5u);
  if (t.behaviour == "big_data") {
    EXPECT_EQ(starting_with(sandboxed.trace, "hook big state "),
              std::vector<std::string>{"hook big state put=0 get=0 same=1 size=8388608 small=1 "
                                       "needed=8388608"});
    EXPECT_EQ(std::count_if(sandboxed.log.begin(), sandboxed.log.end(),
                            [](const std::string& l) {
                              return l.find("LLL... [cut at 65536 of 65636 bytes]") !=
                                     std::string::npos;
                            }),
              1);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Behaviours, SandboxTwinTest,
    ::testing::Values(Twin{"ok", "none", 0, FailurePolicy::disable},
                      Twin{"error", "before_run", 2, FailurePolicy::disable},
                      Twin{"fatal", "after_run", 1, FailurePolicy::keep_going},
                      Twin{"status42", "after_create_session", 0, FailurePolicy::keep_going},
                      Twin{"unterminated", "after_run", 3, FailurePolicy::disable},
                      Twin{"error", "end", 0, FailurePolicy::fail},
                      Twin{"garbage_fetch", "before_run", 2, FailurePolicy::keep_going},
                      Twin{"stale_request", "none", 0, FailurePolicy::disable},
                      Twin{"thread_services", "after_run", 1, FailurePolicy::disable},
                      Twin{"big_data", "after_create_session", 0, FailurePolicy::disable}),
    [](const ::testing::TestParamInfo<Twin>& info) {
      std::string name = info.param.behaviour + "_in_" + info.param.callback;
      name.erase(std::remove(name.begin(), name.end(), '_'), name.end());
      return name;
    });

// An exception that escapes the raw ABI (no SDK) in any callback: the same HH_ERROR and words in
// a runner as in process, and the other hook gets every call.
TEST(SandboxTest, AnExceptionThroughTheRawAbiIsTheSameErrorInBothTiers) {
  for (const char* what : {"std", "int"}) {
    for (const char* callback :
         {"begin", "after_create_session", "before_run", "after_run", "end"}) {
      SCOPED_TRACE(std::string(what) + " in " + callback);
      std::string failure[2];
      for (const bool sandboxed : {false, true}) {
        Sandbox sandbox;
        const std::multimap<std::string, std::string> params = {{"what", what},
                                                                {"callback", callback}};
        if (sandboxed)
          sandbox.add_sandboxed("thrower", "faulty_throw", params, with_timeout(kCalmTimeout));
        else
          sandbox.add_in_process("thrower", "faulty_throw", params);
        sandbox.add_recorder("rec");
        EXPECT_EQ(sandbox.runtime().run_to_end().outcome, Outcome::completed);
        failure[sandboxed] = sandbox.report("thrower").failure;
        // on_error = disable; after end() there is nothing left to disable.
        EXPECT_EQ(sandbox.report("thrower").disabled, std::string(callback) != "end");
        sandbox.finish();
        EXPECT_EQ(starting_with(sandbox.trace_lines(), "rec "), full_recorder_trace("rec", 5));
      }
      const std::string expected = std::string(what) == "int"
                                       ? "unknown exception escaped the plugin"
                                       : std::string(
                                             "exception escaped the plugin: faulty_throw: "
                                             "thrown in ") +
                                             callback;
      EXPECT_NE(failure[0].find(expected), std::string::npos) << failure[0];
      EXPECT_EQ(failure[1], failure[0]);
    }
  }
}

TEST(SandboxTest, OkHookSeesNumericAndStringValuesAndFeedsBoth) {
  const Observed o = observe(true, "ok", "none", 0);
  EXPECT_EQ(o.result.outcome, Outcome::completed);
  EXPECT_FALSE(o.disabled) << o.failure;
  const auto after = starting_with(o.trace, "hook after_run gs=0 ");
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0],
            "hook after_run gs=0 live=1 values=loss:f32[10],weights:f32[1 2 3],"
            "tag:string['step-1' 'x\\x00y']");
  ASSERT_FALSE(o.feeds.empty());
  EXPECT_EQ(o.feeds[0],
            "learning_rate:f32[0.050000 ] note:string['alpha''be" + std::string(1, '\0') + "ta'] ");
  EXPECT_EQ(o.states.at("hook"), "after_runs=5");
}

// ---- create ---------------------------------------------------------------------------------

std::string config_error(const std::function<void()>& add) {
  try {
    add();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(SandboxTest, CreateFailureIsTheSameConfigErrorAsInProcess) {
  Sandbox a, b;
  const std::string in_process =
      config_error([&] { a.add_in_process("bad", "faulty", a.faulty_params("error", "create")); });
  const std::string sandboxed =
      config_error([&] { b.add_sandboxed("bad", "faulty", b.faulty_params("error", "create")); });
  EXPECT_NE(in_process.find("faulty: error as configured"), std::string::npos) << in_process;
  // Same text, but for the temporary folder each copy lives in.
  EXPECT_EQ(sandboxed.substr(sandboxed.find(".so)")), in_process.substr(in_process.find(".so)")));
}

TEST(SandboxTest, RunnerDyingInCreateIsAConfigErrorNamingTheSignal) {
  Sandbox sandbox;
  const std::string error = config_error(
      [&] { sandbox.add_sandboxed("bad", "faulty", sandbox.faulty_params("segv", "create")); });
  EXPECT_NE(error.find("hook 'bad' (plugin 'faulty', "), std::string::npos) << error;
  EXPECT_NE(error.find("was killed by signal 11 (SIGSEGV, Segmentation fault) during create()"),
            std::string::npos)
      << error;
}

TEST(SandboxTest, PluginWhoseConstructorCrashesNeverReachesTheHost) {
  Sandbox sandbox;
  // Built from discovery only: this plugin is never loaded into the test process.
  const std::string error = config_error([&] {
    sandbox.add_sandboxed("bad", "faulty_constructor", {}, {}, FailurePolicy::disable, false);
  });
  EXPECT_NE(error.find("was killed by signal 11 (SIGSEGV, Segmentation fault) while loading the "
                       "plugin"),
            std::string::npos)
      << error;
}

TEST(SandboxTest, MissingRunnerProgramIsAClearConfigError) {
  Sandbox sandbox;
  SandboxOptions options;
  options.runner_program = sandbox.run_dir() / "no-such-runner";
  const std::string error = config_error([&] {
    sandbox.add_sandboxed("bad", "faulty", sandbox.faulty_params("ok", "none"), options);
  });
  EXPECT_NE(error.find("cannot start the sandbox: hookhost-runner was not found"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("no-such-runner"), std::string::npos) << error;
}

TEST(SandboxTest, RunnerIsFoundNextToTheProgramOrOnPath) {
  std::string tried;
  const fs::path runner = find_runner_program({}, &tried);
  ASSERT_FALSE(runner.empty()) << tried;
  EXPECT_EQ(runner.filename(), "hookhost-runner");
}

TEST(SandboxTest, RunnerHangingInCreateIsKilledAtTheTimeout) {
  Sandbox sandbox;
  const std::string error = config_error([&] {
    sandbox.add_sandboxed("bad", "faulty", sandbox.faulty_params("loop", "create"),
                          with_timeout(kHangTimeout));
  });
  EXPECT_NE(error.find("did not answer within call_timeout_ms = 300 during create() and was "
                       "killed"),
            std::string::npos)
      << error;
}

TEST(SandboxTest, DestroyThatHangsIsCutShortAndTheRunnerReaped) {
  Sandbox sandbox;
  ProcessDispatch* hook = sandbox.add_sandboxed(
      "bad", "faulty", sandbox.faulty_params("sleep", "destroy"), with_timeout(kHangTimeout));
  const pid_t pid = hook->runner_pid();
  EXPECT_EQ(sandbox.runtime().run_to_end().outcome, Outcome::completed);
  sandbox.finish();
  EXPECT_NE(sandbox.log().find("the hook's runner process (pid " + std::to_string(pid) +
                               ") did not answer within call_timeout_ms = 300 during destroy() "
                               "and was killed"),
            std::string::npos)
      << sandbox.log();
  EXPECT_TRUE(process_gone(pid));
  EXPECT_EQ(starting_with(sandbox.trace_lines(), "bad ").back(), "bad destroy");
}

// ---- the call result itself -------------------------------------------------------------------

TEST(SandboxTest, LostCallReturnsFatalWithRunnerLostAndLaterCallsDoNotBlock) {
  Sandbox sandbox;
  ProcessDispatch* hook =
      sandbox.add_sandboxed("bad", "faulty", sandbox.faulty_params("segv", "begin"));
  ASSERT_NE(hook, nullptr);
  const pid_t pid = hook->runner_pid();
  // Straight to the dispatcher, as the runtime would call it.
  const CallResult r = hook->begin();
  EXPECT_EQ(r.status, HH_ERROR_FATAL);
  EXPECT_TRUE(r.runner_lost);
  EXPECT_EQ(r.message, "the hook's runner process (pid " + std::to_string(pid) +
                           ") was killed by signal 11 (SIGSEGV, Segmentation fault)");
  for (int i = 0; i < 3; ++i) {
    hh_end_info info{};
    info.struct_size = HH_END_INFO_SIZE;
    info.outcome = HH_OUTCOME_FAILED;
    info.reason = "test";
    const CallResult again = hook->end(info);
    EXPECT_EQ(again.status, HH_ERROR_FATAL);
    EXPECT_TRUE(again.runner_lost);
  }
  EXPECT_EQ(hook->destroy(), "");
  EXPECT_TRUE(process_gone(pid));
}

// ---- restart --------------------------------------------------------------------------------

// What happens to the installed plugin file while its hook's runner is down.
enum class FileChange { kept, swapped, truncated, deleted };

void PrintTo(FileChange change, std::ostream* os) {
  const char* names[] = {"kept", "swapped", "truncated", "deleted"};
  *os << names[static_cast<int>(change)];
}

// Swapped: the same plugin (id, version, parameters) from other bytes, written over the file.
void change_file(const fs::path& file, FileChange change) {
  switch (change) {
    case FileChange::kept: break;
    case FileChange::swapped:
      fs::copy_file(fs::path(HOOKHOST_FIXTURE_DIR) / "impostor" / "faulty_impostor.so", file,
                    fs::copy_options::overwrite_existing);
      break;
    case FileChange::truncated: fs::resize_file(file, fs::file_size(file) / 2); break;
    case FileChange::deleted: fs::remove(file); break;
  }
}

class SandboxRestartTest : public ::testing::TestWithParam<FileChange> {};

// Every restart opens the bytes checked (and pinned: load_plugin's hash) at the start, whatever
// became of the installed file.
TEST_P(SandboxRestartTest, RestartBringsTheHookBackWithItsSavedStateFromTheVerifiedBytes) {
  Sandbox sandbox;
  sandbox.max_restarts = 0;  // the restart is this test's own, after the job
  ProcessDispatch* hook =
      sandbox.add_sandboxed("bad", "faulty", sandbox.faulty_params("segv", "after_run", 2));
  const pid_t first = hook->runner_pid();
  const JobResult result = sandbox.runtime().run_to_end();
  EXPECT_EQ(result.outcome, Outcome::completed);
  ASSERT_TRUE(hook->runner_lost());
  // after_run saved "after_runs=3" (steps 0, 1, 2) before dying in step 2's after_run.
  EXPECT_EQ(sandbox.runtime().hook_states().at("bad"), "after_runs=3");

  change_file(sandbox.plugin_dir() / "faulty.so", GetParam());
  std::string why;
  ASSERT_TRUE(hook->restart(&why)) << why;
  EXPECT_FALSE(hook->runner_lost());
  EXPECT_NE(hook->runner_pid(), first);
  EXPECT_TRUE(process_gone(first));
  // The restarted instance answers calls again (step 4 is not where it crashes).
  hh_run_context ctx{};
  ctx.struct_size = HH_RUN_CONTEXT_SIZE;
  ctx.global_step = 4;
  hh_run_values none{};
  none.struct_size = HH_RUN_VALUES_SIZE;
  none.tensor_stride = sizeof(hh_tensor);
  const CallResult r = hook->after_run(ctx, none);
  EXPECT_TRUE(r.ok()) << r.message;
  const pid_t second = hook->runner_pid();
  sandbox.finish();
  EXPECT_TRUE(process_gone(second));

  const auto lines = starting_with(sandbox.trace_lines(), "bad ");
  const auto creates = starting_with(lines, "bad create ");
  ASSERT_EQ(creates.size(), 2u);
  EXPECT_EQ(creates[0], "bad create behaviour=segv callback=after_run state=(none)");
  EXPECT_EQ(creates[1], "bad create behaviour=segv callback=after_run state=after_runs=3");
  // create, begin and after_create_session replayed after the crash, then the new call, then a
  // polite destroy at the end.
  const auto restart_at = std::find(lines.begin(), lines.end(), creates[1]);
  ASSERT_NE(restart_at, lines.end());
  EXPECT_EQ(std::vector<std::string>(restart_at, lines.end()),
            (std::vector<std::string>{creates[1], "bad begin publish=1",
                                      "bad after_create_session gs=0 creation=1",
                                      "bad after_run gs=4 live=5 values=", "bad destroy"}));
}

INSTANTIATE_TEST_SUITE_P(InstalledFile, SandboxRestartTest,
                         ::testing::Values(FileChange::kept, FileChange::swapped,
                                           FileChange::truncated, FileChange::deleted),
                         [](const auto& info) {
                           std::ostringstream name;
                           PrintTo(info.param, &name);
                           return name.str();
                         });

TEST(SandboxTest, FileSwappedBeforeTheRunnerStartsIsRefusedByThePin) {
  Sandbox sandbox;
  const fs::path file = sandbox.plugin_dir() / "faulty.so";
  sandbox.pin = private_plugin_copy(sandbox.discovered("faulty"))->sha256();
  change_file(file, FileChange::swapped);
  const std::string error = config_error([&] {
    sandbox.add_sandboxed("bad", "faulty", sandbox.faulty_params("ok", "none"), {},
                          FailurePolicy::disable, false);
  });
  EXPECT_NE(error.find("hook 'bad' (plugin 'faulty', " + file.string() + ")"), std::string::npos)
      << error;
  EXPECT_NE(error.find("not the approved " + sandbox.pin), std::string::npos) << error;
  EXPECT_TRUE(sandbox.trace_lines().empty());
}

TEST(SandboxTest, PinnedHookStartsFromItsPrivateCopy) {
  Sandbox sandbox;
  sandbox.pin = private_plugin_copy(sandbox.discovered("faulty"))->sha256();
  ProcessDispatch* hook = sandbox.add_sandboxed(
      "calm", "faulty", sandbox.faulty_params("ok", "none"), {}, FailurePolicy::disable, false);
  ASSERT_NE(hook, nullptr);
  // The installed file goes away at once: nothing reads it again.
  fs::remove(sandbox.plugin_dir() / "faulty.so");
  EXPECT_EQ(sandbox.runtime().run_to_end().outcome, Outcome::completed);
  sandbox.finish();
  const auto lines = starting_with(sandbox.trace_lines(), "calm ");
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), "calm destroy");
}

// Sets an environment variable for one test; restores the old value (or its absence) after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// A runner inherits PATH, HOME, LANG and TZ, descriptors 0-4 and the plugin's private copy, and
// dies with the host.
TEST(SandboxTest, RunnerStartsCleanAndDiesWithTheHost) {
  ScopedEnv python("PYTHONPATH", "/somewhere");
  ScopedEnv preload("LD_LIBRARY_PATH", "/elsewhere");
  ScopedEnv lang("LANG", "C.UTF-8");
  Sandbox sandbox;
  // A descriptor of the host's own without close-on-exec: it must not reach the runner.
  const int leaked = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(leaked, 0);
  ProcessDispatch* hook =
      sandbox.add_sandboxed("probe", "faulty", sandbox.faulty_params("describe_process", "none"));
  ::close(leaked);
  ASSERT_NE(hook, nullptr);
  std::set<std::string> names;
  std::map<int, std::string> fds;
  std::string pdeathsig;
  for (const std::string& line : starting_with(sandbox.trace_lines(), "probe ")) {
    if (line.rfind("probe env ", 0) == 0) {
      names.insert(line.substr(10, line.find('=') - 10));
    } else if (line.rfind("probe fd ", 0) == 0) {
      const std::string rest = line.substr(9);
      fds[std::stoi(rest)] = rest.substr(rest.find(' ') + 1);
    } else if (line.rfind("probe pdeathsig ", 0) == 0) {
      pdeathsig = line.substr(16);
    }
  }
  std::set<std::string> expected = {"LANG"};
  for (const char* name : {"PATH", "HOME", "TZ"})
    if (std::getenv(name)) expected.insert(name);
  EXPECT_EQ(names, expected);
  // 0-2, the channel, the side channel, the confined runner's violation pipe, the plugin's copy.
  ASSERT_EQ(fds.size(), 7u);
  for (int fd = 0; fd <= 5; ++fd) EXPECT_EQ(fds.count(fd), 1u) << fd;
  EXPECT_EQ(fds[0], "/dev/null");
  EXPECT_EQ(fds[3].rfind("socket:", 0), 0u) << fds[3];
  EXPECT_EQ(fds[4].rfind("socket:", 0), 0u) << fds[4];
  EXPECT_EQ(fds[5].rfind("pipe:", 0), 0u) << fds[5];
  EXPECT_EQ(std::prev(fds.end())->second.rfind("/memfd:faulty.so", 0), 0u)
      << std::prev(fds.end())->second;
  EXPECT_EQ(pdeathsig, std::to_string(SIGKILL));
}

// ---- end after a lost runner ---------------------------------------------------------------

// Killed in the last step with on_crash = disable: end still reaches it, in a fresh runner made
// from the verified bytes (the installed file was swapped meanwhile), with the saved state.
TEST(SandboxTest, AHookWhoseRunnerWasLostInTheLastStepStillGetsItsEnd) {
  Sandbox sandbox;
  ProcessDispatch* hook =
      sandbox.add_sandboxed("bad", "faulty", sandbox.faulty_params("segv", "after_run", 4));
  ASSERT_NE(hook, nullptr);
  change_file(sandbox.plugin_dir() / "faulty.so", FileChange::swapped);
  EXPECT_EQ(sandbox.runtime().run_to_end().outcome, Outcome::completed);
  sandbox.finish();
  const auto lines = starting_with(sandbox.trace_lines(), "bad ");
  const auto creates = starting_with(lines, "bad create ");
  ASSERT_EQ(creates.size(), 2u);
  EXPECT_EQ(creates[1], "bad create behaviour=segv callback=after_run state=after_runs=5");
  const auto ends = starting_with(lines, "bad end ");
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].rfind("bad end outcome=failed gs=", 0), 0u) << ends[0];
  EXPECT_NE(ends[0].find("this hook was disabled: after_run failed: the hook's runner process"),
            std::string::npos)
      << ends[0];
  EXPECT_EQ(lines.back(), "bad destroy");
  EXPECT_NE(sandbox.log().find("hook 'bad' restarted with its last saved state to receive end()"),
            std::string::npos)
      << sandbox.log();
}

TEST(SandboxTest, AHookWithNoRestartLeftGetsNoEndAndTheLogSaysSo) {
  Sandbox sandbox;
  sandbox.max_restarts = 0;
  ProcessDispatch* hook =
      sandbox.add_sandboxed("bad", "faulty", sandbox.faulty_params("segv", "after_run", 4));
  ASSERT_NE(hook, nullptr);
  EXPECT_EQ(sandbox.runtime().run_to_end().outcome, Outcome::completed);
  sandbox.finish();
  const auto lines = starting_with(sandbox.trace_lines(), "bad ");
  EXPECT_EQ(starting_with(lines, "bad create ").size(), 1u);
  EXPECT_TRUE(starting_with(lines, "bad end ").empty());
  EXPECT_NE(sandbox.log().find("hook 'bad' gets no end(): its runner was lost and its 0 restarts "
                               "are used up (max_restarts)"),
            std::string::npos)
      << sandbox.log();
}

// ---- isolation groups -----------------------------------------------------------------------

TEST(SandboxTest, MembersOfAGroupShareOneRunnerAndRestartIntoTheSameNewOne) {
  Sandbox sandbox;
  sandbox.max_restarts = 0;  // the restarts are this test's own, after the job
  auto group = make_runner_group("pair", SandboxOptions{});
  ProcessDispatch* bad =
      sandbox.add_sandboxed("bad", "faulty", sandbox.faulty_params("segv", "after_run", 2), {},
                            FailurePolicy::disable, true, CrashPolicy::disable, group);
  ProcessDispatch* calm =
      sandbox.add_sandboxed("calm", "faulty", sandbox.faulty_params("ok", "after_run"), {},
                            FailurePolicy::disable, true, CrashPolicy::disable, group);
  const pid_t shared = bad->runner_pid();
  EXPECT_EQ(calm->runner_pid(), shared);
  const JobResult result = sandbox.runtime().run_to_end();
  EXPECT_EQ(result.outcome, Outcome::completed);
  EXPECT_TRUE(bad->runner_lost());
  EXPECT_TRUE(calm->runner_lost());
  EXPECT_TRUE(process_gone(shared));
  const std::string log = sandbox.log();
  EXPECT_NE(log.find("the runner process of isolation group 'pair' (pid " + std::to_string(shared) +
                     ") was killed by signal 11"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("while hook 'bad' was running"), std::string::npos) << log;
  // calm had every call up to the crash: its runner was bad's.
  const auto calm_lines = starting_with(sandbox.trace_lines(), "calm ");
  EXPECT_EQ(std::count_if(calm_lines.begin(), calm_lines.end(),
                          [](const std::string& l) { return l.rfind("calm after_run", 0) == 0; }),
            2);

  // The first to restart starts the new runner; the other joins it. Both from the bytes checked
  // at the start, not the file now there.
  change_file(sandbox.plugin_dir() / "faulty.so", FileChange::swapped);
  std::string why;
  ASSERT_TRUE(calm->restart(&why)) << why;
  ASSERT_TRUE(bad->restart(&why)) << why;
  EXPECT_NE(calm->runner_pid(), shared);
  EXPECT_EQ(bad->runner_pid(), calm->runner_pid());
  const pid_t second = calm->runner_pid();
  sandbox.finish();
  EXPECT_TRUE(process_gone(second));
  const auto destroys = starting_with(sandbox.trace_lines(), "calm destroy");
  EXPECT_EQ(destroys.size(), 1u);
  for (const std::string& line : sandbox.trace_lines())
    EXPECT_EQ(line.find("impostor"), std::string::npos) << line;
}

// ---- values arena, memory limit, output flood, plugin threads -------------------------------

TEST(SandboxTest, RunnerCannotWriteToTheValuesArena) {
  Sandbox sandbox;
  ProcessDispatch* hook =
      sandbox.add_sandboxed("bad", "faulty", sandbox.faulty_params("write_values", "after_run", 1));
  const pid_t pid = hook->runner_pid();
  const JobResult result = sandbox.runtime().run_to_end();
  EXPECT_EQ(result.outcome, Outcome::completed);
  EXPECT_EQ(sandbox.report("bad").failure,
            "after_run failed: the hook's runner process (pid " + std::to_string(pid) +
                ") was killed by signal 11 (SIGSEGV, Segmentation fault)");
  // Making the mapping writable is refused by the kernel before the write faults.
  EXPECT_NE(
      sandbox.log().find("[bad] [info] mprotect of the values to writable: Permission denied"),
      std::string::npos)
      << sandbox.log();
  // The host's values are intact: the other steps' caller fetches are what the workload made.
  sandbox.finish();
}

// The arena's memfd is sealed before a runner sees it. Reopened read-write through /proc (as code
// in the runner can), it can be neither shrunk nor grown nor mapped writable, so the host's
// writes never touch pages past its end (SIGBUS). A bigger arena is a new memfd, sealed the same.
TEST(SandboxTest, TheValuesArenaCannotBeResizedByWhoeverHoldsIt) {
  sandbox::ValuesArena arena;
  const float value = 2.5f;
  hh_tensor tensor;
  hh_tensor_init(&tensor);
  tensor.name = "loss";
  tensor.dtype = HH_DTYPE_F32;
  tensor.data = &value;
  tensor.byte_size = sizeof value;
  hh_run_values values{};
  values.struct_size = HH_RUN_VALUES_SIZE;
  values.count = 1;
  values.tensors = &tensor;
  values.tensor_stride = sizeof tensor;
  for (const size_t bytes : {size_t{100}, size_t{1} << 20}) {
    ASSERT_TRUE(arena.reserve(bytes));
    const UniqueFd given = arena.read_only_fd();
    const std::string path = "/proc/self/fd/" + std::to_string(given.get());
    const UniqueFd rw(::open(path.c_str(), O_RDWR | O_CLOEXEC));
    ASSERT_TRUE(rw) << std::strerror(errno);
    const int wanted = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
    EXPECT_EQ(::fcntl(rw.get(), F_GET_SEALS) & wanted, wanted);
    errno = 0;
    EXPECT_EQ(::ftruncate(rw.get(), 0), -1);
    EXPECT_EQ(errno, EPERM);
    EXPECT_EQ(::ftruncate(rw.get(), static_cast<off_t>(arena.capacity() * 2)), -1);
    EXPECT_EQ(::ftruncate(given.get(), 0), -1);  // the runner's own descriptor is read-only
    EXPECT_EQ(::mmap(nullptr, arena.capacity(), PROT_READ | PROT_WRITE, MAP_SHARED, rw.get(), 0),
              MAP_FAILED);
    struct stat st {};
    ASSERT_EQ(::fstat(rw.get(), &st), 0);
    // Only with the size intact may the host write here: a shrunk arena would kill this test.
    ASSERT_EQ(static_cast<size_t>(st.st_size), arena.capacity());
    const auto placed = arena.write(values, 0);
    ASSERT_EQ(placed.size(), 1u);
    float read_back = 0;
    ASSERT_EQ(
        ::pread(rw.get(), &read_back, sizeof read_back, static_cast<off_t>(placed[0].data_offset)),
        static_cast<ssize_t>(sizeof read_back));
    EXPECT_EQ(read_back, value);
  }
}

TEST(SandboxTest, MemoryLimitMakesAllocationFailWithoutHarmingTheHost) {
  Sandbox sandbox;
  SandboxOptions options = with_timeout(kCalmTimeout);
  options.memory_limit_mb = 256;
  ProcessDispatch* hook =
      sandbox.add_sandboxed("bad", "faulty", sandbox.faulty_params("alloc", "begin"), options);
  ASSERT_NE(hook, nullptr);
  sandbox.add_recorder("rec");
  const JobResult result = sandbox.runtime().run_to_end();
  EXPECT_EQ(result.outcome, Outcome::completed);
  const std::string failure = sandbox.report("bad").failure;
  EXPECT_EQ(failure.rfind("begin failed: allocation stopped after ", 0), 0u) << failure;
  EXPECT_FALSE(hook->runner_lost());
  sandbox.finish();
  EXPECT_EQ(starting_with(sandbox.trace_lines(), "rec "), full_recorder_trace("rec", 5));
}

TEST(SandboxTest, OutputFloodIsRateLimited) {
  Sandbox sandbox;
  sandbox.add_sandboxed("loud", "faulty", sandbox.faulty_params("flood", "begin"),
                        with_timeout(kCalmTimeout));
  EXPECT_EQ(sandbox.runtime().run_to_end().outcome, Outcome::completed);
  sandbox.finish();
  const std::string log = sandbox.log();
  const long forwarded = count_occurrences(log, "[loud] [info] flood line ");
  long dropped = 0;
  const std::regex note(R"(\[loud\] \[warning\] (\d+) lines of the runner's output dropped)");
  for (std::sregex_iterator it(log.begin(), log.end(), note), end; it != end; ++it)
    dropped += std::stol((*it)[1]);
  EXPECT_GT(forwarded, 0);
  EXPECT_LT(forwarded, 2000);
  EXPECT_EQ(forwarded + dropped, 2000) << log.substr(0, 2000);
  // The first lines arrive in order.
  EXPECT_NE(log.find("[loud] [info] flood line 0\n[loud] [info] flood line 1\n"),
            std::string::npos);
}

TEST(SandboxTest, PluginThreadOutsideAnyCallCanLogAndStopTheJob) {
  Sandbox sandbox;
  // Runs until a hook stops it.
  sandbox.session.script().end_of_data_step = detail::Script::kEndless;
  sandbox.add_sandboxed("late", "faulty", sandbox.faulty_params("late_thread", "begin"),
                        with_timeout(kCalmTimeout));
  Runtime& runtime = sandbox.runtime();
  ASSERT_TRUE(runtime.start());
  // No call is in progress: the thread's calls go over the side channel.
  ASSERT_TRUE(wait_until([&] { return runtime.should_stop(); }, std::chrono::seconds(30)));
  const JobResult result = runtime.close();
  EXPECT_EQ(result.outcome, Outcome::stopped);
  EXPECT_EQ(result.reason, "hook 'late': stopped by a plugin thread");
  sandbox.finish();
  EXPECT_NE(sandbox.log().find("[late] [info] late plugin thread: asking to stop"),
            std::string::npos);
}

// ---- the fed view crosses unchanged: the host's own check_view judges it --------------------

TEST(SandboxTest, FedViewsCrossSoTheHostsChecksSeeWhatThePluginGave) {
  static const int64_t shape1[1] = {1};
  static const int64_t shape_two[1] = {2};
  static const int64_t shape2[2] = {2, 3};
  static const int64_t strides2[2] = {3, 1};
  static const int64_t bad_strides[2] = {4, 1};
  static const int64_t negative[1] = {-1};
  static const int64_t shape9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  const float six[6] = {1, 2, 3, 4, 5, 6};
  const uint8_t bool7 = 7;
  const hh_str items[2] = {{"ab", 2}, {nullptr, 3}};
  const hh_str good_items[2] = {{"ab", 2}, {"", 0}};
  std::vector<hh_tensor> views;
  auto view = [&](auto&& edit) {
    hh_tensor t;
    hh_tensor_init(&t);
    t.name = "x";
    t.dtype = HH_DTYPE_F32;
    t.rank = 1;
    t.shape = shape1;
    t.data = six;
    t.byte_size = 4;
    edit(t);
    views.push_back(t);
  };
  view([](hh_tensor&) {});                                      // valid
  view([&](hh_tensor& t) { t.struct_size = 8; });               // too small
  view([&](hh_tensor& t) { t.name = nullptr; });                // no name
  view([&](hh_tensor& t) { t.dtype = 99; });                    // unknown dtype
  view([&](hh_tensor& t) { t.rank = 9, t.shape = shape9; });    // rank too high
  view([&](hh_tensor& t) { t.shape = nullptr; });               // no shape
  view([&](hh_tensor& t) { t.shape = negative; });              // negative extent
  view([&](hh_tensor& t) { t.byte_size = 3; });                 // wrong byte_size
  view([&](hh_tensor& t) { t.data = nullptr; });                // no data
  view([&](hh_tensor& t) { t.device.type = 77; });              // unknown device
  view([&](hh_tensor& t) { t.device.type = HH_DEVICE_CUDA; });  // device data: never read
  view([&](hh_tensor& t) { t.dtype = HH_DTYPE_BOOL, t.data = &bool7, t.byte_size = 1; });
  view([&](hh_tensor& t) { t.rank = 2, t.shape = shape2, t.strides = strides2, t.byte_size = 24; });
  view([&](hh_tensor& t) {
    t.rank = 2, t.shape = shape2, t.strides = bad_strides, t.byte_size = 24;
  });
  view([&](hh_tensor& t) {  // a NULL string element with a size
    t.dtype = HH_DTYPE_STRING, t.shape = shape_two, t.data = items, t.byte_size = sizeof items;
  });
  view([&](hh_tensor& t) {  // valid strings
    t.dtype = HH_DTYPE_STRING, t.shape = shape_two, t.data = good_items;
    t.byte_size = sizeof good_items;
  });
  view([&](hh_tensor& t) {  // strings with strides
    t.dtype = HH_DTYPE_STRING, t.shape = shape_two, t.data = good_items, t.strides = shape1;
    t.byte_size = sizeof good_items;
  });
  for (size_t i = 0; i < views.size(); ++i) {
    sandbox::Writer out;
    sandbox::encode_view(out, &views[i]);
    sandbox::Reader in(out.bytes());
    sandbox::DecodedView decoded;
    std::string why;
    ASSERT_TRUE(sandbox::decode_view(in, decoded, &why)) << i << ": " << why;
    ASSERT_TRUE(decoded.present);
    const std::string original = check_view(views[i]);
    EXPECT_EQ(check_view(decoded.view), original) << "view " << i;
    if (original.empty() && views[i].device.type == HH_DEVICE_CPU) {
      const Tensor a = Tensor::from_view(views[i]);
      const Tensor b = Tensor::from_view(decoded.view);
      EXPECT_EQ(a.shape(), b.shape());
      EXPECT_EQ(a.strings(), b.strings());
      for (size_t k = 0; k < a.element_count(); ++k) EXPECT_EQ(a.as_double(k), b.as_double(k));
    }
  }
  // A NULL view travels as NULL.
  sandbox::Writer out;
  sandbox::encode_view(out, nullptr);
  sandbox::Reader in(out.bytes());
  sandbox::DecodedView decoded;
  std::string why;
  ASSERT_TRUE(sandbox::decode_view(in, decoded, &why));
  EXPECT_FALSE(decoded.present);
}

// ---- values a runner cannot take as the workload holds them --------------------------------

// A view of `data` the workload holds (Tensor::borrow: no copy, the strides kept).
Tensor held_view(hh_dtype dtype, const void* data, size_t byte_size, uint32_t rank,
                 const int64_t* shape, const int64_t* strides,
                 hh_device device = {HH_DEVICE_CPU, 0}) {
  hh_tensor view;
  hh_tensor_init(&view);
  view.name = "";
  view.dtype = dtype;
  view.rank = rank;
  view.shape = shape;
  view.strides = strides;
  view.data = data;
  view.byte_size = byte_size;
  view.device = device;
  return Tensor::borrow(view, nullptr);
}

// A strided fetched value reaches a sandboxed hook contiguous, its elements in their logical order
// (docs/isolation.md, "Limits"); the in-process twin gets the strides. (String tensors have no
// strides: the host refuses them.)
TEST(SandboxTest, AStridedFetchedValueArrivesContiguousInItsLogicalOrder) {
  static const float six[6] = {1, 2, 3, 4, 5, 6};
  static const int64_t matrix_shape[2] = {3, 2}, matrix_strides[2] = {1, 3};  // 2x3, transposed
  for (const bool sandboxed : {true, false}) {  // one at a time: both would feed the same names
    SCOPED_TRACE(sandboxed ? "sandboxed" : "in process");
    Sandbox sandbox;
    sandbox.session.script().values["weights"] = [](int64_t) {
      return Value(held_view(HH_DTYPE_F32, six, sizeof six, 2, matrix_shape, matrix_strides));
    };
    const auto params = sandbox.faulty_params("ok", "none", 0);
    if (sandboxed)
      sandbox.add_sandboxed("hook", "faulty", params, with_timeout(kCalmTimeout));
    else
      sandbox.add_in_process("hook", "faulty", params);
    const JobResult result = sandbox.runtime().run_to_end();
    EXPECT_EQ(result.outcome, Outcome::completed) << result.reason;
    EXPECT_FALSE(sandbox.report("hook").disabled) << sandbox.report("hook").failure;
    sandbox.finish();
    const auto after = starting_with(sandbox.trace_lines(), "hook after_run gs=0 ");
    ASSERT_EQ(after.size(), 1u);
    EXPECT_EQ(after[0], "hook after_run gs=0 live=1 values=loss:f32[10],weights:f32[1 4 2 5 3 6]" +
                            std::string(sandboxed ? "" : "(strided)") +
                            ",tag:string['step-1' 'x\\x00y']");
  }
}

// The CUDA tensor of a workload: device memory the host never reads, a host copy when asked.
Tensor on_device(bool with_host_copy) {
  static const float device_bytes[2] = {-1.0f, -1.0f};  // stands for device memory
  static const int64_t shape[1] = {2};
  Tensor value = held_view(HH_DTYPE_F32, device_bytes, sizeof device_bytes, 1, shape, nullptr,
                           hh_device{HH_DEVICE_CUDA, 0});
  if (!with_host_copy) return value;
  return Tensor::with_host_copy(std::move(value), Tensor::vector_f32({1.5f, 2.5f}));
}

// A value on a device reaches no sandboxed hook, even one whose plugin declares it takes device
// values: its after_run is refused naming the value, the device, why and what to do, and the
// in-process twin gets the device's view. A host copy the workload made is handed instead.
TEST(SandboxTest, ADeviceValueIsRefusedToASandboxedHookWhateverItDeclares) {
  for (const bool with_copy : {false, true}) {
    SCOPED_TRACE(with_copy ? "with a host copy" : "no host copy");
    Sandbox sandbox;
    sandbox.session.script().values["w"] = [with_copy](int64_t) {
      return Value(on_device(with_copy));
    };
    const std::multimap<std::string, std::string> params = {
        {"trace", sandbox.trace().string()}, {"fetch", "w"}, {"takes_device", "true"}};
    sandbox.add_sandboxed("sandboxed", "c_recorder", params, with_timeout(kCalmTimeout));
    sandbox.add_in_process("in_process", "c_recorder", params);
    sandbox.runtime().run_to_end();
    const HookReport sandboxed = sandbox.report("sandboxed");
    const HookReport in_process = sandbox.report("in_process");
    sandbox.finish();
    const std::vector<std::string> lines = sandbox.trace_lines();
    // c_recorder logs the first element, 0 for a value that is not in host memory.
    EXPECT_FALSE(in_process.disabled) << in_process.failure;
    EXPECT_EQ(starting_with(lines, "in_process after_run ").size(), 5u);
    EXPECT_THAT(starting_with(lines, "in_process after_run "), ::testing::Each(HasSubstr("w:0")));
    if (!with_copy) {
      EXPECT_TRUE(sandboxed.disabled);
      EXPECT_THAT(
          sandboxed.failure,
          HasSubstr(
              "the fetched value 'w' lives on cuda:0, and a sandboxed hook takes "
              "values in host memory only (device memory cannot be mapped into its runner "
              "process): run it with isolation = in_process, or have the workload hand a host "
              "copy of the value"));
      EXPECT_TRUE(starting_with(lines, "sandboxed after_run ").empty());
    } else {
      EXPECT_FALSE(sandboxed.disabled) << sandboxed.failure;
      EXPECT_EQ(starting_with(lines, "sandboxed after_run ").size(), 5u);
      EXPECT_THAT(starting_with(lines, "sandboxed after_run "),
                  ::testing::Each(HasSubstr("w:1.5")));
    }
  }
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
