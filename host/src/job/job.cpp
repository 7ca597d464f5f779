#include "hookhost/host/job.hpp"

#include <spdlog/spdlog.h>

#include "job/instantiate.hpp"
#include "job/job_plan.hpp"
#include "job/resume.hpp"
#include "job/run_directory.hpp"
#include "job/signal_bridge.hpp"
#include "job/startup_phase.hpp"

namespace hookhost {
namespace fs = std::filesystem;

// Declared in the order they must go: the hooks (in the runtime) before the session they run
// around, and both before the run directory's lock and --check's temporary folder.
struct Job::Parts {
  JobOptions options;
  Communicator* comm = nullptr;  // a distributed job's processes; null for one process
  std::shared_ptr<spdlog::logger> log;
  RunDirectory run_dir;
  std::unique_ptr<Session> owned_session;  // the [workload]'s; null around the embedder's own
  Session* session = nullptr;
  std::unique_ptr<Runtime> runtime;

  // Undoes --fresh when the job does not start after all: the hooks created so far go first,
  // closing their files.
  void put_back_previous_run() {
    if (!run_dir.moved_previous_run()) return;
    runtime.reset();
    run_dir.put_back_previous_run(*log);
  }
};

namespace {

// The exit status of every process when an internal error ends a distributed job (EX_SOFTWARE).
constexpr int kInternalErrorExit = 70;

RuntimeOptions runtime_options(const JobConfig& cfg, const RunDirectory& run_dir,
                               const std::shared_ptr<spdlog::logger>& log,
                               const std::shared_ptr<Communicator>& communicator, int rank) {
  RuntimeOptions ro;
  ro.run_dir = run_dir.path();
  ro.config_dir = cfg.file ? fs::absolute(*cfg.file).parent_path() : fs::path();
  ro.logger = log;
  ro.max_state_bytes = cfg.max_state_bytes;
  ro.checkpoint_dir = run_dir.checkpoint_dir();
  ro.checkpoint_basename = kCheckpointBasename;
  ro.keep_checkpoints = cfg.keep_checkpoints;
  ro.checkpoint_wait = cfg.checkpoint_wait;
  ro.time_every_n_steps = cfg.time_every_n_steps;
  ro.communicator = communicator;
  ro.collective_timeout = std::chrono::milliseconds(cfg.collective_timeout_ms);
  ro.on_recover = recover_from_newest(run_dir.checkpoint_dir(), log, communicator.get(), rank);
  return ro;
}

}  // namespace

// The steps of a job's start. A distributed job's processes pass each StartupPhase together:
// every one has planned, the chief has its folders, every one has its rank folder, and every
// one has created its hooks; a process that fails tells the others before they go on.
Job::Job(JobOptions options) : parts_(std::make_unique<Parts>()) {
  Parts& p = *parts_;
  p.options = std::move(options);
  const JobConfig& cfg = p.options.config;
  p.log = p.options.logger ? p.options.logger : spdlog::default_logger();
  spdlog::logger& log = *p.log;
  // A communicator of one process is a job of one process: no collective per step.
  if (p.options.communicator && p.options.communicator->size() > 1)
    p.comm = p.options.communicator.get();
  else
    p.options.communicator.reset();
  Communicator* const comm = p.comm;

  StartupPhase planning(comm);
  JobPlan plan = plan_job(cfg, p.options.plugin_dirs, p.options.communicator, log,
                          p.options.session != nullptr, p.options.builtin_plugin_dir);
  p.owned_session = std::move(plan.session);
  p.session = p.options.session ? p.options.session : p.owned_session.get();
  planning.passed();
  const HookCommunicators hook_communicators = split_hook_communicators(plan, comm);

  StartupPhase chief_folders(comm);
  p.run_dir.open_chief(cfg, p.options.fresh, p.options.check_only, plan.rank, log);
  chief_folders.passed();
  StartupPhase rank_folders(comm);
  p.run_dir.open_rank_folder(cfg, p.options.check_only, plan.rank);
  rank_folders.passed();

  StartupPhase hooks_created(comm);
  // Resume before any hook exists: create() and begin() see the restored state and global step.
  ResumePoint start;
  if (!p.options.fresh && !p.options.check_only)
    start = resume_from_newest(p.run_dir.checkpoint_dir(), *p.session, comm, plan.rank, log);
  first_step_ = start.global_step;
  p.runtime = std::make_unique<Runtime>(
      *p.session, runtime_options(cfg, p.run_dir, p.log, p.options.communicator, plan.rank));
  p.runtime->restore_hook_states(start.hook_states);
  try {
    instantiate(plan, hook_communicators, p.run_dir.path(), *p.runtime);
    hooks_created.passed();
  } catch (const ConfigError&) {
    p.put_back_previous_run();
    throw;
  }

  log_effective_configuration(plan,
                              p.options.check_only ? cfg.run_dir.string() + " (untouched: --check)"
                                                   : p.run_dir.path().string(),
                              log);
}

Job::~Job() = default;

JobResult Job::run(const std::atomic<int>& signal_number) {
  Parts& p = *parts_;
  const auto t0 = std::chrono::steady_clock::now();
  auto stop_on_signal = [&] {
    const int sig = signal_number.load();
    if (sig == 0) return false;
    stop_for_signal(sig);  // a signal that came before the job could be told
    return true;
  };
  try {
    // A signal stops the job after the current step; in a distributed job the processes agree
    // on it at the step boundary, so every one of them stops after the same step.
    if (p.runtime->start())
      for (stop_on_signal(); !p.runtime->should_stop(); stop_on_signal()) p.runtime->run();
  } catch (const std::exception& e) {
    // Nothing may skip the ending: hooks still get end(), outputs are flushed, the summary prints.
    p.log->error("internal error: {}", e.what());
    if (p.comm) {
      // The other processes may be waiting in a collective this one will never reach.
      p.log->critical("ending every process of the distributed job");
      p.log->flush();
      p.comm->abort(kInternalErrorExit);
    }
    p.runtime->fail_job(std::string("internal error: ") + e.what());
  }
  JobResult result = p.runtime->close();
  wall_time_ = std::chrono::steady_clock::now() - t0;
  return result;
}

void Job::stop_for_signal(int signal) {
  parts_->runtime->request_stop(HH_STOP_CAUSE_SIGNAL,
                                std::string("received ") + signal_name(signal));
}

std::string Job::running_call() const {
  return parts_->runtime->running_call();
}

std::vector<HookReport> Job::reports() const {
  return parts_->runtime->reports();
}

std::vector<std::string> Job::hook_names() const {
  return parts_->runtime ? parts_->runtime->hook_order() : std::vector<std::string>{};
}

Runtime& Job::runtime() {
  return *parts_->runtime;
}

Session& Job::session() {
  return *parts_->session;
}

const fs::path& Job::run_dir() const {
  return parts_->run_dir.path();
}

}  // namespace hookhost
