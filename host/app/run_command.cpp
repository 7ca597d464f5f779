// hookhost run: runs a training job with plugin hooks from a config file (or, with --check,
// validates it), with the signal handling and the end-of-job summary around it.
#include "run_command.hpp"

#include <unistd.h>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <boost/program_options.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <hookhost/host/config.hpp>
#include <hookhost/host/job.hpp>
#include <hookhost/host/log_format.hpp>
#if HOOKHOST_WITH_MPI
#include <hookhost/host/mpi.hpp>
#endif
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include "command_line.hpp"
#include "job/signal_bridge.hpp"
#include "job_summary.hpp"
#include "report/report_html.hpp"
#include "runtime/crash_blame.hpp"
#include "support/display_text.hpp"
#include "support/text.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;
using namespace hookhost;
using namespace hookhost::app;

namespace {

const char* const kRunExamples = R"(
Examples:
  hookhost run --config <prefix>/share/doc/hookhost/examples/demo.ini --run-dir demo
  hookhost run -c job.ini --set hook.progress.every_n_secs=1 --set workload.epochs=5
  hookhost run -c job.ini --fresh            start over (the previous run is moved aside)
  hookhost run -c job.ini --check            validate only: no step, no file written
  hookhost run -c job.ini --strict           in a test or CI: any hook failure is exit status 1

The config file is INI: [run] (run_dir, plugin_dir, log_level, on_error, checkpoint_dir,
keep_checkpoints, isolation and the sandbox defaults, distributed, ...: see docs/configuration.md),
[workload] (name and the workload's parameters), and one [hook.NAME] section per hook instance
(the host's keys plugin, enabled, order, on_error, isolation, ranks, sha256, ..., and the
plugin's parameters: see 'hookhost plugins describe ID').

--check parses the configuration, finds, trusts and loads every plugin, creates every enabled
hook (a sandboxed one in its runner) and destroys it again; it runs no step, reads and writes no
checkpoint and neither creates nor locks the run directory (hooks write to a temporary folder,
removed afterwards). It prints "configuration OK: ..." (exit status 0) or the error (status 2).

On start the job resumes from the newest valid checkpoint in [run] checkpoint_dir (default
<run_dir>/checkpoints).
SIGINT/SIGTERM: a stop is requested at once (a hook waiting inside a callback sees it through
should_stop()) and the log names the hook call still running and for how long; the current step
finishes, every hook gets end() (a checkpoint_saver, if one is configured, asks for a final
checkpoint then), exit status 128+N even when the signal came during end(); a second signal exits
at once, naming the hook call that was running. A job that failed keeps exit status 1.
)";

std::atomic<int> g_signal{0};
std::atomic<Job*> g_job{nullptr};

// Since when the hook call running now has run, to within kSamplePeriod, for the first signal's
// message: the runtime does not time every per-step call (that would cost every step a clock
// read), so a thread samples the running call and remembers when it was first seen.
class RunningCallClock {
 public:
  explicit RunningCallClock(const Job& job) : job_(job), thread_([this] { sample(); }) {}
  ~RunningCallClock() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  RunningCallClock(const RunningCallClock&) = delete;
  RunningCallClock& operator=(const RunningCallClock&) = delete;

  // "hook 'x' (plugin 'y') in before_run at global step 3, running for 12.3 s", or "" when no
  // hook call runs. [thread-safe]
  std::string describe() const {
    const std::string call = job_.running_call();
    if (call.empty()) return call;
    std::lock_guard lock(mutex_);
    if (call != seen_) return call + ", running for less than 0.1 s";
    const std::chrono::duration<double> age = std::chrono::steady_clock::now() - seen_since_;
    char text[64];
    std::snprintf(text, sizeof text, ", running for %.1f s", age.count());
    return call + text;
  }

 private:
  static constexpr std::chrono::milliseconds kSamplePeriod{100};
  void sample() {
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, kSamplePeriod, [this] { return stopping_; })) {
      lock.unlock();
      std::string call = job_.running_call();
      const auto now = std::chrono::steady_clock::now();
      lock.lock();
      // The text names the step: the same text at the next sample is the same call.
      if (call != seen_) {
        seen_ = std::move(call);
        seen_since_ = now;  // it started at most one period before
      }
    }
  }

  const Job& job_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::string seen_;
  std::chrono::steady_clock::time_point seen_since_{};
  std::thread thread_;
};

std::atomic<const RunningCallClock*> g_call_clock{nullptr};

// Runs on the signal bridge's thread. The first signal stops the job after the current step, and
// reaches a hook blocked in a callback through should_stop(); the log says which hook call the
// stop waits for. A second one leaves at once, naming what the job was stuck in.
void on_signal(int sig, int count) {
  Job* job = g_job.load();
  if (count == 1) {
    g_signal = sig;
    if (job) job->stop_for_signal(sig);
    const RunningCallClock* clock = g_call_clock.load();
    const std::string running = clock ? clock->describe() : std::string();
    spdlog::warn("{}: stopping after the current step{} (a second {} exits at once)",
                 signal_name(sig), running.empty() ? "" : "; waiting for " + running,
                 signal_name(sig));
    return;
  }
  const std::string running = job ? job->running_call() : std::string();
  std::fprintf(stderr, "hookhost: second %s %s: exiting at once with status %d\n", signal_name(sig),
               running.empty() ? "outside any hook call" : ("while " + running + " runs").c_str(),
               128 + sig);
  std::fflush(stderr);
  CrashBlame::program_exits();
  _exit(128 + sig);
}

// `rank_tag` ("rank 1 ") tells the processes of a distributed job apart in the launcher's merged
// output.
std::shared_ptr<spdlog::logger> make_logger(const std::string& level,
                                            const std::string& rank_tag = {}) {
  auto logger = std::make_shared<spdlog::logger>(
      "hookhost", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  logger->set_formatter(escaped_log_formatter("[%H:%M:%S.%e] " + rank_tag + "[%n] [%^%l%$] %*"));
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
  return logger;
}

// A job started by mpirun must say it is distributed, and one that says so must be started by
// mpirun: either mistake would run N unrelated copies of the job, or wait for processes that do
// not exist.
void check_launcher(const JobConfig& config) {
#if HOOKHOST_WITH_MPI
  const std::optional<std::string> launcher = mpi_launcher_evidence();
#else
  const std::optional<std::string> launcher;  // a program built without MPI runs one process
#endif
  const std::string where = config.distributed_source
                                ? config.distributed_source->describe() + ": [run] distributed: "
                                : std::string();
  if (config.distributed == Distribution::mpi && !launcher)
    throw ConfigError(where +
                          "the job is distributed = mpi, but this program was not started by an "
                          "MPI launcher: run it as 'mpirun -np N hookhost run ...', or remove "
                          "distributed = mpi to run one process",
                      "distributed");
  if (config.distributed == Distribution::none && launcher)
    throw ConfigError(
        "this program was started by an MPI launcher (" + *launcher +
            "), but the job does not say it is distributed: add 'distributed = mpi' to [run] (or "
            "--set run.distributed=mpi) so the processes work as one job, or run it without "
            "mpirun",
        "distributed");
}

po::options_description run_options() {
  po::options_description desc("Usage: hookhost run [options]\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "config,c", po::value<std::string>()->value_name("FILE"), "the job's config file (INI)")(
      "plugin-dir,p", po::value<std::vector<std::string>>()->composing()->value_name("DIR"),
      "a folder of plugins to search first (repeatable)")(
      "run-dir,r", po::value<std::string>()->value_name("DIR"),
      "where outputs and checkpoints go (overrides [run] run_dir; default ./hookhost-run)")(
      "set,s", po::value<std::vector<std::string>>()->composing()->value_name("KEY=VALUE"),
      "override a config key, e.g. hook.progress.every_n_secs=1 (repeatable)")(
      "fresh", "start over: move an existing run directory aside instead of resuming it")(
      "check",
      "validate the configuration: create every hook (sandboxed ones too) and destroy it; run "
      "no step, write no checkpoint, leave the run directory untouched")(
      "strict",
      "exit status 1 when any hook failed (disabled, an error under on_error = continue, a lost "
      "runner), even if the job completed: for tests and CI")(
      "log-level,l", po::value<std::string>()->value_name("LEVEL"),
      "trace, debug, info (default), warn, error, critical or off");
  return desc;
}

// --set, then the options that stand for config keys (--run-dir, --log-level).
std::vector<std::string> config_overrides(const po::variables_map& vm) {
  std::vector<std::string> overrides;
  if (vm.count("set")) overrides = vm["set"].as<std::vector<std::string>>();
  if (vm.count("run-dir")) overrides.push_back("run.run_dir=" + vm["run-dir"].as<std::string>());
  if (vm.count("log-level"))
    overrides.push_back("run.log_level=" + vm["log-level"].as<std::string>());
  return overrides;
}

// A started job and what it runs with, in the order they end: the last member goes first.
struct StartedJob {
  std::shared_ptr<spdlog::logger> logger;
#if HOOKHOST_WITH_MPI
  std::unique_ptr<MpiEnvironment> mpi;  // before the rest: MPI ends after everything else
#endif
  std::shared_ptr<Communicator> communicator;
  std::unique_ptr<Job> job;
  std::unique_ptr<SignalBridge> bridge;  // after the job: it goes first
};

// Reads the configuration and creates the job (every hook); with `check_only`, no signal bridge.
// Throws ConfigError or another exception when the job cannot start.
void start_job(const po::variables_map& vm, bool check_only, StartedJob& started) {
  std::optional<fs::path> file;
  if (vm.count("config")) file = fs::path(vm["config"].as<std::string>());
  JobConfig config = load_job_config(file, config_overrides(vm));
  check_launcher(config);
  std::string rank_tag;
  if (config.distributed == Distribution::mpi) {
#if HOOKHOST_WITH_MPI
    started.mpi = std::make_unique<MpiEnvironment>();
    started.communicator = mpi_communicator(MPI_COMM_WORLD);
#endif
    if (started.communicator->size() > 1)
      rank_tag = "[rank " + std::to_string(started.communicator->rank()) + "] ";
  }
  started.logger = make_logger(config.log_level, rank_tag);
  JobOptions options;
  options.communicator = started.communicator;
  options.config = std::move(config);
  if (vm.count("plugin-dir"))
    options.plugin_dirs = to_paths(vm["plugin-dir"].as<std::vector<std::string>>());
  options.fresh = vm.count("fresh") > 0 && !check_only;
  options.check_only = check_only;
  options.logger = started.logger;
  // A check runs no step to stop: a signal ends it the default way.
  if (!check_only) started.bridge = std::make_unique<SignalBridge>(on_signal);
  started.job = std::make_unique<Job>(std::move(options));
  g_job = started.job.get();
}

// run --check: every hook was created; destroys them and says so.
int finish_check(StartedJob& started) {
  const std::vector<std::string> hooks = started.job->hook_names();
  started.job.reset();  // destroys every hook, and their runners, before the verdict
  started.logger->flush();
  std::vector<std::string> shown;
  for (const auto& name : hooks) shown.push_back(display_text(name));
  const std::string names = join(shown, ", ");
  std::cout << "hookhost: configuration OK: " << hooks.size()
            << (hooks.size() == 1 ? " hook" : " hooks") << (names.empty() ? "" : " (" + names + ")")
            << " created and destroyed; no step was run and nothing was written\n";
  return kExitOk;
}

JobResult run_to_the_end(StartedJob& started) {
  JobResult result;
  {
    const RunningCallClock clock(*started.job);
    g_call_clock = &clock;
    result = started.job->run(g_signal);
    g_job = nullptr;
    started.bridge.reset();  // after this no signal callback can look at the clock
    g_call_clock = nullptr;
  }
  started.logger->flush();
  return result;
}

// The chief's summary is the job's, with the run report; the other processes say only how their
// part ended.
void print_outcome(const StartedJob& started, const JobResult& result,
                   const std::vector<HookReport>& reports, int sig) {
  const Job& job = *started.job;
  if (started.communicator && !started.communicator->is_chief()) {
    std::cout << "hookhost: rank " << started.communicator->rank() << ": job "
              << outcome_name(result.outcome) << " (" << display_text(result.reason)
              << ") at global step " << result.global_step
              << ", outputs: " << job.run_dir().string() << "\n";
    return;
  }
  std::cout << format_summary(result, reports, job.wall_time(), job.first_step());
  if (sig != 0 && result.stop_cause != HH_STOP_CAUSE_SIGNAL)
    std::cout << "  signal: " << signal_name(sig) << " received as the job was ending"
              << (result.outcome == Outcome::failed
                      ? ""
                      : ", so the exit status is " + std::to_string(128 + sig))
              << "\n";
  std::cout << "  outputs: " << job.run_dir().string() << "\n";
  // The report never fails the job: the run's outputs are already on disk.
  try {
    std::cout << "  report: " << write_run_report(job.run_dir()).file.string() << "\n";
  } catch (const std::exception& e) {
    std::cout.flush();
    std::fprintf(stderr, "hookhost: warning: no run report: %s\n", e.what());
  }
}

int exit_status(const JobResult& result, const std::vector<HookReport>& reports, int sig,
                bool strict) {
  if (result.outcome == Outcome::failed) return kExitFailed;
  if (sig != 0) return 128 + sig;
  // Checkpoints that could not be written leave nothing to resume from: not a success.
  if (result.checkpoint_failures > 0) return kExitFailed;
  if (strict) {
    if (const std::string failures = hook_failures_text(reports); !failures.empty()) {
      std::fprintf(stderr, "hookhost: --strict: exit status 1 because %s\n", failures.c_str());
      return kExitFailed;
    }
  }
  return kExitOk;
}

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
  const po::options_description desc = run_options();
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return usage_error(e.what(), "run ");
  }
  if (vm.count("help")) {
    std::cout << desc << kRunExamples;
    return kExitOk;
  }
  const bool check_only = vm.count("check") > 0;
  StartedJob started;
  try {
    start_job(vm, check_only, started);
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "hookhost: configuration error: %s\nNothing was run.\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hookhost: cannot start the job: %s\nNothing was run.\n", e.what());
    return kExitUsage;
  }
  if (check_only) return finish_check(started);

  const JobResult result = run_to_the_end(started);
  // A signal counts wherever it came: during a step, during end(), or after a hook's stop.
  const int sig = g_signal.load();
  const std::vector<HookReport> reports = started.job->reports();
  print_outcome(started, result, reports, sig);
  std::cout.flush();
  return exit_status(result, reports, sig, vm.count("strict") > 0);
}
