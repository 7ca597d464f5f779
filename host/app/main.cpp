// The hookhost program: runs a training job with plugin hooks from a config file, and lists and
// describes the plugins it can find.
#include <unistd.h>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <boost/program_options.hpp>

#include <hookhost/version.h>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <hookhost/host/config.hpp>
#include <hookhost/host/discovery.hpp>
#include <hookhost/host/job.hpp>
#include <hookhost/host/loader.hpp>
#if HOOKHOST_WITH_MPI
#include <hookhost/host/mpi.hpp>
#endif
#include <iostream>
#include <mutex>
#include <thread>
#include "command_line.hpp"
#include "job/rank_placement.hpp"
#include "job/signal_bridge.hpp"
#include "job_summary.hpp"
#include "new_command.hpp"
#include "report/report_html.hpp"
#include "runtime/crash_blame.hpp"
#include "support/display_text.hpp"
#include "support/text.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;
using namespace hookhost;
using namespace hookhost::app;

namespace {

const char* const kMainHelp =
    R"(hookhost )" HOOKHOST_VERSION_STRING R"( - a plugin host for training-loop hooks

Usage:
  hookhost run [--config FILE] [options]     run a training job with hooks
  hookhost run --check --config FILE         validate a job's configuration; run no step
  hookhost plugins list [--plugin-dir DIR]   list the plugins found (runs no plugin code)
  hookhost plugins describe ID               show a plugin's parameters
  hookhost check PLUGIN.so [--set K=V]...    check a plugin file: metadata, build, sandboxed runs
  hookhost report RUN_DIR [--output FILE]    write a run's report.html (curves, hook cost, timeline)
  hookhost ctl RUN_DIR REQUEST               see or steer a running job: status, attach, detach,
                                             set, checkpoint, stop
  hookhost new NAME [--lang cpp|c]           start a plugin project (builds, tests, runs)
  hookhost COMMAND --help                    help on one command
  hookhost --version

Examples:
  hookhost run --config <prefix>/share/doc/hookhost/examples/demo.ini --run-dir demo
  hookhost run --set hook.stop.plugin=stop_at_step --set hook.stop.last_step=100
  hookhost plugins describe logging_tensor
  hookhost new loss_guard && cat loss_guard/README.md

Plugin folders are searched in this order: --plugin-dir, [run] plugin_dir in the config,
HOOKHOST_PLUGIN_PATH (colon-separated), then the built-in plugins.

Exit status:
  0      the job completed, or a hook stopped it (run --check: the configuration is valid)
  1      the job failed (a workload error, a hook with on_error = fail, ...); with run --strict,
         also a job in which any hook failed (disabled, an error under continue, a lost runner)
  2      usage or configuration error (nothing ran)
  70     a plugin or library called exit(), _exit() or _Exit() during the job; in a distributed
         job, an internal error ended every process
  128+N  stopped by signal N (130 for SIGINT, 143 for SIGTERM), or killed by it (134 SIGABRT,
         139 SIGSEGV, 137 SIGKILL)
)";

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

// The log message with control characters escaped: hooks log through clones of this logger, and
// their texts (and any file name or value in a message) must not forge lines or drive the terminal.
class EscapedMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    constexpr std::size_t kLogMessageLimit = 4096;
    const std::string text =
        display_text(std::string_view(msg.payload.data(), msg.payload.size()), kLogMessageLimit);
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<EscapedMessage>();
  }
};

// `rank_tag` ("rank 1 ") tells the processes of a distributed job apart in the launcher's merged
// output.
std::shared_ptr<spdlog::logger> make_logger(const std::string& level,
                                            const std::string& rank_tag = {}) {
  auto logger = std::make_shared<spdlog::logger>(
      "hookhost", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<EscapedMessage>('*').set_pattern("[%H:%M:%S.%e] " + rank_tag +
                                                       "[%n] [%^%l%$] %*");
  logger->set_formatter(std::move(formatter));
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

std::vector<fs::path> to_paths(const std::vector<std::string>& v) {
  return {v.begin(), v.end()};
}

// ---- hookhost run -------------------------------------------------------------------------------

int cmd_run(const std::vector<std::string>& args) {
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

  std::vector<std::string> overrides;
  if (vm.count("set")) overrides = vm["set"].as<std::vector<std::string>>();
  if (vm.count("run-dir")) overrides.push_back("run.run_dir=" + vm["run-dir"].as<std::string>());
  if (vm.count("log-level"))
    overrides.push_back("run.log_level=" + vm["log-level"].as<std::string>());

  std::shared_ptr<spdlog::logger> logger;
#if HOOKHOST_WITH_MPI
  std::unique_ptr<MpiEnvironment> mpi;  // declared first: MPI ends after everything else
#endif
  std::shared_ptr<Communicator> communicator;
  std::unique_ptr<Job> job;
  std::unique_ptr<SignalBridge> bridge;  // declared after the job: it goes first
  const bool check_only = vm.count("check") > 0;
  const bool strict = vm.count("strict") > 0;
  try {
    std::optional<fs::path> file;
    if (vm.count("config")) file = fs::path(vm["config"].as<std::string>());
    JobConfig config = load_job_config(file, overrides);
    check_launcher(config);
    std::string rank_tag;
    if (config.distributed == Distribution::mpi) {
#if HOOKHOST_WITH_MPI
      mpi = std::make_unique<MpiEnvironment>();
      communicator = mpi_communicator(MPI_COMM_WORLD);
#endif
      if (communicator->size() > 1)
        rank_tag = "[rank " + std::to_string(communicator->rank()) + "] ";
    }
    logger = make_logger(config.log_level, rank_tag);
    JobOptions options;
    options.communicator = communicator;
    options.config = std::move(config);
    if (vm.count("plugin-dir"))
      options.plugin_dirs = to_paths(vm["plugin-dir"].as<std::vector<std::string>>());
    options.fresh = vm.count("fresh") > 0 && !check_only;
    options.check_only = check_only;
    options.logger = logger;
    // A check runs no step to stop: a signal ends it the default way.
    if (!check_only) bridge = std::make_unique<SignalBridge>(on_signal);
    job = std::make_unique<Job>(std::move(options));
    g_job = job.get();
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "hookhost: configuration error: %s\nNothing was run.\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hookhost: cannot start the job: %s\nNothing was run.\n", e.what());
    return kExitUsage;
  }

  if (check_only) {
    const std::vector<std::string> hooks = job->hook_names();
    const fs::path run_dir = job->run_dir();
    job.reset();  // destroys every hook, and their runners, before the verdict
    logger->flush();
    std::vector<std::string> shown;
    for (const auto& name : hooks) shown.push_back(display_text(name));
    const std::string names = join(shown, ", ");
    std::cout << "hookhost: configuration OK: " << hooks.size()
              << (hooks.size() == 1 ? " hook" : " hooks")
              << (names.empty() ? "" : " (" + names + ")")
              << " created and destroyed; no step was run and nothing was written\n";
    return kExitOk;
  }

  JobResult result;
  {
    const RunningCallClock clock(*job);
    g_call_clock = &clock;
    result = job->run(g_signal);
    g_job = nullptr;
    bridge.reset();  // after this no signal callback can look at the clock
    g_call_clock = nullptr;
  }
  logger->flush();
  // A signal counts wherever it came: during a step, during end(), or after a hook's stop.
  const int sig = g_signal.load();
  const std::vector<HookReport> reports = job->reports();
  if (!communicator || communicator->is_chief()) {
    std::cout << format_summary(result, reports, job->wall_time(), job->first_step());
    if (sig != 0 && result.stop_cause != HH_STOP_CAUSE_SIGNAL)
      std::cout << "  signal: " << signal_name(sig) << " received as the job was ending"
                << (result.outcome == Outcome::failed
                        ? ""
                        : ", so the exit status is " + std::to_string(128 + sig))
                << "\n";
    std::cout << "  outputs: " << job->run_dir().string() << "\n";
    // The report never fails the job: the run's outputs are already on disk.
    try {
      std::cout << "  report: " << write_run_report(job->run_dir()).file.string() << "\n";
    } catch (const std::exception& e) {
      std::cout.flush();
      std::fprintf(stderr, "hookhost: warning: no run report: %s\n", e.what());
    }
  } else {
    // The chief's summary is the job's; the others say only how their part ended.
    std::cout << "hookhost: rank " << communicator->rank() << ": job "
              << outcome_name(result.outcome) << " (" << display_text(result.reason)
              << ") at global step " << result.global_step
              << ", outputs: " << job->run_dir().string() << "\n";
  }
  std::cout.flush();
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

// ---- hookhost plugins ---------------------------------------------------------------------------

std::string flag_text(const ParamSpec& p) {
  switch (p.flag) {
    case ParamFlag::required: return "required";
    case ParamFlag::defaulted: return p.default_value.empty() ? "\"\"" : p.default_value;
    case ParamFlag::optional: return "(unset)";
  }
  return "";
}

// The note's needs.* lines in words: what a confined hook of the plugin may touch beyond the
// system's runtime and its run folder.
std::string needs_text(const PluginNeeds& needs) {
  if (needs.empty()) return "only its run folder";
  auto access = [](const char* verb, const std::vector<std::string>& paths,
                   const std::vector<std::string>& params) {
    std::vector<std::string> items;
    for (const std::string& path : paths) items.push_back(display_text(path));
    for (const std::string& param : params)
      items.push_back("the paths parameter '" + display_text(param) + "' names");
    return items.empty() ? std::string() : verb + join(items, ", ");
  };
  std::vector<std::string> parts;
  for (std::string part : {access("read ", needs.read, needs.read_params),
                           access("write ", needs.write, needs.write_params)})
    if (!part.empty()) parts.push_back(std::move(part));
  if (needs.network) parts.emplace_back("network");
  if (needs.processes) parts.emplace_back("processes");
  return join(parts, "; ");
}

int cmd_plugins(const std::vector<std::string>& args) {
  po::options_description desc(
      "Usage:\n  hookhost plugins list [--plugin-dir DIR]...\n"
      "  hookhost plugins describe ID [--plugin-dir DIR]...\n\n"
      "Reads each plugin's metadata note; no plugin code runs.\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "plugin-dir,p", po::value<std::vector<std::string>>()->composing()->value_name("DIR"),
      "a folder of plugins to search first (repeatable)");
  const auto parsed = parse_command_line(args, desc, "words", -1, "plugins ");
  if (!parsed) return kExitUsage;
  const po::variables_map& vm = *parsed;
  std::vector<std::string> words;
  if (vm.count("words")) words = vm["words"].as<std::vector<std::string>>();
  if (vm.count("help") || words.empty()) {
    std::cout << desc
              << "\nExamples:\n  hookhost plugins list\n"
                 "  hookhost plugins list --plugin-dir ./my-plugins\n"
                 "  hookhost plugins describe stop_at_step\n";
    return words.empty() && !vm.count("help") ? kExitUsage : kExitOk;
  }
  std::vector<fs::path> first;
  if (vm.count("plugin-dir")) first = to_paths(vm["plugin-dir"].as<std::vector<std::string>>());
  const auto dirs = plugin_search_path(first, {});
  DiscoveryOptions options;  // listing reads only the notes; describe also names the imports
  if (words[0] == "describe" && words.size() == 2) options.imports_of = {words[1]};
  DiscoveryResult found = discover_plugins(dirs, options);

  if (words[0] == "list" && words.size() == 1) {
    constexpr std::size_t kColumn = 64;  // ids and versions longer than this are cut
    std::printf("%-20s %-9s %-5s %s\n", "ID", "VERSION", "ABI", "FILE");
    for (const auto& p : found.plugins)
      std::printf("%-20s %-9s %u.%-3u %s\n", display_text(p.metadata.id, kColumn).c_str(),
                  display_text(p.metadata.version, kColumn).c_str(), p.metadata.abi_major,
                  p.metadata.abi_minor, display_text(p.file.string()).c_str());
    std::printf("\n%zu plugin(s) in: ", found.plugins.size());
    for (size_t i = 0; i < dirs.size(); ++i)
      std::printf("%s%s", i ? ", " : "", display_text(dirs[i].string()).c_str());
    std::printf("\n");
    if (found.ignored_files > 0)
      std::printf("%zu other file(s) ignored: a plugin file is named *.so or *.so.N\n",
                  found.ignored_files);
    if (!found.duplicates.empty()) {
      std::printf("\nDuplicate plugin ids:\n");
      for (const auto& d : found.duplicates)
        std::printf("  %s: using %s\n    because %s\n    ignoring %s\n",
                    display_text(d.id, kColumn).c_str(), display_text(d.chosen.string()).c_str(),
                    d.why.c_str(), display_text(d.ignored.string()).c_str());
    }
    if (!found.rejected.empty()) {
      std::printf("\nRejected files:\n");
      for (const auto& r : found.rejected)
        std::printf("  %s\n    %s\n", display_text(r.file.string()).c_str(),
                    display_text(r.reason).c_str());
    }
    // Every folder searched here was named by the operator (or is the built-in one): a missing
    // one is a typo to fix, not something to list around.
    if (!found.missing_folders.empty()) {
      std::fflush(stdout);
      for (const auto& folder : found.missing_folders)
        std::fprintf(stderr, "hookhost: plugin folder %s does not exist or is not a folder\n",
                     display_text(folder.string()).c_str());
      return kExitUsage;
    }
    return kExitOk;
  }
  if (words[0] == "describe" && words.size() == 2) {
    const DiscoveredPlugin* p = found.find(words[1]);
    if (!p) {
      std::fprintf(stderr,
                   "hookhost: no plugin with id '%s' (see 'hookhost plugins list' for the ids "
                   "found)\n",
                   display_text(words[1]).c_str());
      return kExitUsage;
    }
    const PluginMetadata& m = p->metadata;
    // Read from the file's imports, like everything here: a hint, not a guarantee.
    std::string calls;
    if (!p->process_wide_calls) {
      calls = "could not be read (no readable dynamic symbol table)";
    } else if (p->process_wide_calls->empty()) {
      calls = "none";
    } else {
      calls =
          join(*p->process_wide_calls, ", ") + " (run it with isolation = process to contain them)";
    }
    const std::string placement =
        placement_name(m.default_placement()) +
        (!m.placement                       ? " (not declared by the plugin, so every rank"
         : *m.placement == Placement::chief ? " (declared by the plugin: rank 0 alone"
                                            : " (declared by the plugin: every rank") +
        " of a distributed job; a section's ranks = overrides it)";
    const std::string mode =
        m.observes ? "observe (declared by the plugin: its hooks run behind the step; a section's "
                     "mode = step runs one on the step)"
                   : "step (its hooks run on the step; a section's mode = observe runs one behind "
                     "it)";
    const std::string cadence =
        m.cadence_param.empty()
            ? "every step"
            : "the first step and each step after which the global step is a multiple of its "
              "parameter " +
                  display_text(m.cadence_param) +
                  " (declared by the plugin: the host skips the others' before_run and after_run)";
    std::printf(
        "%s %s - %s\n  file: %s\n  placement: %s\n  mode: %s\n  cadence: %s\n"
        "  needs (when confined): %s\n  ABI: %u.%u\n  process-wide calls: %s\n\nParameters:\n",
        display_text(m.id).c_str(), display_text(m.version).c_str(),
        display_text(m.description).c_str(), display_text(p->file.string()).c_str(),
        placement.c_str(), mode.c_str(), cadence.c_str(), needs_text(m.needs).c_str(), m.abi_major,
        m.abi_minor, calls.c_str());
    if (m.params.empty()) std::printf("  (none)\n");
    for (const auto& param : m.params)
      std::printf("  %-18s %-12s %-12s %s\n", display_text(param.name).c_str(),
                  param_type_name(param.type).c_str(), display_text(flag_text(param)).c_str(),
                  display_text(param.help).c_str());
    std::printf(
        "\nKeys the host reads in every [hook.NAME] section (never passed to the plugin):\n"
        "  plugin           the plugin id (default: NAME)\n"
        "  enabled          true (default) or false\n"
        "  order            call order, lower first (default 0; equal: config order)\n"
        "  on_error         disable (default, or [run] on_error), continue, stop or fail\n"
        "  isolation        in_process (default, or [run] isolation) or process\n"
        "  call_timeout_ms  a call's time limit (default 0: none; a sandboxed call over it is "
        "killed)\n"
        "  memory_limit_mb  the runner's memory limit (default 0: none; isolation = process)\n"
        "  on_crash         restart (default), disable, stop or fail (isolation = process)\n"
        "  max_restarts     restarts before the hook is disabled (default 3)\n"
        "  isolation_group  share one runner with the hooks of this group (isolation = process)\n"
        "  ranks            in a distributed job: %s (the placement above) by default; or "
        "chief, all, 0,2,...\n"
        "  sha256           the plugin file's SHA-256: the job refuses any other file\n"
        "  log_level        this hook's log level: trace, debug, info, warn, error, critical or "
        "off (default: [run] log_level)\n"
        "  mode             step or observe (default: the mode above), with queue (default 8) "
        "and policy (block or skip) for an observer; a parameter of that name keeps it\n"
        "\nExample:\n  [hook.%s]\n",
        default_ranks(m).text().c_str(), display_text(m.id).c_str());
    // Required parameters to fill in; the others with their defaults, commented out.
    for (const auto& param : m.params) {
      const std::string name = display_text(param.name);
      switch (param.flag) {
        case ParamFlag::required: std::printf("  %s = ...\n", name.c_str()); break;
        case ParamFlag::defaulted:
          std::printf("  ; %s = %s\n", name.c_str(), display_text(param.default_value).c_str());
          break;
        case ParamFlag::optional: std::printf("  ; %s =\n", name.c_str()); break;
      }
    }
    return kExitOk;
  }
  return usage_error("unknown 'plugins' command '" + words[0] + "' (expected list or describe ID)",
                     "plugins ");
}

}  // namespace

int cmd_check(const std::vector<std::string>& args);   // app/check_command.cpp
int cmd_report(const std::vector<std::string>& args);  // app/report_command.cpp
int cmd_ctl(const std::vector<std::string>& args);     // app/ctl_command.cpp

int run_program(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kMainHelp;
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (args[0] == "--version" || args[0] == "-V") {
    std::printf("hookhost %s (plugin ABI %d.%d)\n", HOOKHOST_VERSION_STRING, HH_ABI_MAJOR,
                HH_ABI_MINOR);
    return kExitOk;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "run") return cmd_run(args);
  if (command == "plugins") return cmd_plugins(args);
  if (command == "check") return cmd_check(args);
  if (command == "report") return cmd_report(args);
  if (command == "ctl") return cmd_ctl(args);
  if (command == "new") return cmd_new(args);
  return usage_error("unknown command '" + command + "'", "");
}

int main(int argc, char** argv) {
  // Before any plugin is loaded: a hook that crashes or exits the process gets named.
  hookhost::CrashBlame::install();
  const int status = run_program(argc, argv);
  hookhost::CrashBlame::program_exits();
  return status;
}
