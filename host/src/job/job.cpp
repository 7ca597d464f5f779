#include "hookhost/host/job.hpp"

#include <spdlog/spdlog.h>

#include <hookhost/version.h>
#include <algorithm>

#include "control/server.hpp"
#include "job/control_peer.hpp"
#include "job/instantiate.hpp"
#include "job/job_plan.hpp"
#include "job/live_control.hpp"
#include "job/resume.hpp"
#include "job/run_directory.hpp"
#include "job/signal_bridge.hpp"
#include "job/startup_phase.hpp"
#include "plugins/trust.hpp"
#include "report/run_record.hpp"
#include "support/text.hpp"

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
  // The run's record (run-record.jsonl), the chief's only; null for --check and other ranks.
  // Declared before the runtime, whose events it is told of until the runtime goes.
  std::unique_ptr<RunRecordWriter> record;
  bool record_ended = false;  // the cost line is written
  double record_started = 0;  // the start line's wall time
  // hookhost ctl's changes, made by the runtime at step boundaries: it outlives the runtime, which
  // may still run a change queued before close(); the server that feeds it goes first.
  std::unique_ptr<LiveControl> live_control;
  std::vector<std::string> resumed_changes;  // the live changes the resumed checkpoint carried
  JobConfig base_config;                     // the configuration as given, before those changes
  // The isolation groups' runners, which hooks attached or recreated live join; used by the
  // runtime's changes, so it outlives the runtime.
  IsolationGroups isolation_groups;
  std::unique_ptr<Runtime> runtime;
  std::unique_ptr<control::Server> control_server;

  // Undoes --fresh when the job does not start after all: the hooks created so far go first,
  // closing their files.
  void put_back_previous_run() {
    if (!run_dir.moved_previous_run()) return;
    runtime.reset();
    run_dir.put_back_previous_run(*log);
  }
  // The cost line: how the job ended and what each hook cost. Once; a failure is a warning.
  void end_record(const JobResult& result, double wall_time_s);
};

namespace {

// The exit status of every process when an internal error ends a distributed job (EX_SOFTWARE).
constexpr int kInternalErrorExit = 70;

// The plugins the planned hooks run, each file once, with its hash.
std::vector<RecordedPlugin> recorded_plugins(const JobPlan& plan) {
  std::vector<RecordedPlugin> plugins;
  for (const auto& item : plan.hooks) {
    const std::string file = item.plugin->file().string();
    auto it = std::find_if(plugins.begin(), plugins.end(),
                           [&](const RecordedPlugin& p) { return p.file == file; });
    if (it == plugins.end()) {
      std::string sha256 = item.plugin->sha256();
      if (sha256.empty()) {
        try {
          sha256 = sha256_of_file(item.plugin->file());
        } catch (const std::exception& e) {
          sha256 = std::string("(not read: ") + e.what() + ")";
        }
      }
      const PluginMetadata& m = item.plugin->metadata();
      it = plugins.insert(plugins.end(), RecordedPlugin{m.id, m.version, file, sha256, {}});
    }
    it->hooks.push_back(item.hook->name);
  }
  return plugins;
}

// Writes each event to the run record, stamped with when it happened.
std::function<void(const RunEvent&)> record_into(RunRecordWriter& record) {
  return [&record](const RunEvent& e) {
    record.write(RecordedEvent{std::chrono::duration<double>(e.at.time_since_epoch()).count(),
                               run_event_kind_name(e.kind), e.global_step, e.hook, e.text});
  };
}

RuntimeOptions runtime_options(const JobConfig& cfg, const RunDirectory& run_dir,
                               const std::shared_ptr<spdlog::logger>& log,
                               const std::shared_ptr<Communicator>& communicator, int rank,
                               RunRecordWriter* record) {
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
  if (record) ro.on_event = record_into(*record);
  return ro;
}

}  // namespace

// The steps of a job's start. A distributed job's processes pass each StartupPhase together:
// every one has planned, the chief has its folders, every one has its rank folder, and every
// one has created its hooks; a process that fails tells the others before they go on.
Job::Job(JobOptions options) : parts_(std::make_unique<Parts>()) {
  Parts& p = *parts_;
  p.options = std::move(options);
  JobConfig& config = p.options.config;
  p.log = p.options.logger ? p.options.logger : spdlog::default_logger();
  spdlog::logger& log = *p.log;
  // A communicator of one process is a job of one process: no collective per step.
  if (p.options.communicator && p.options.communicator->size() > 1)
    p.comm = p.options.communicator.get();
  else
    p.options.communicator.reset();
  Communicator* const comm = p.comm;
  p.base_config = config;
  const JobConfig& cfg = config;

  StartupPhase planning(comm);
  // A resume runs the hooks its checkpoint's job had: the live changes it carries apply first.
  // In a distributed job the chief reads them (its checkpoint) and sends them to every process.
  if (!p.options.fresh && !p.options.check_only) {
    if (!comm || comm->is_chief()) p.resumed_changes = live_changes_to_resume(config);
    if (comm) {
      std::string shared = join(p.resumed_changes, "\n");
      comm->broadcast(shared, 0);
      p.resumed_changes.clear();
      for (std::size_t at = 0; at < shared.size();) {
        const std::size_t end = std::min(shared.find('\n', at), shared.size());
        if (end > at) p.resumed_changes.push_back(shared.substr(at, end - at));
        at = end + 1;
      }
    }
    if (!p.resumed_changes.empty()) {
      log.info("resuming with the live changes of the newest checkpoint: {}",
               join(p.resumed_changes, ", "));
      apply_hook_overrides(config, p.resumed_changes,
                           "a live change (hookhost ctl) of the newest checkpoint:");
    }
  }
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
  // The live changes are the checkpoint's the resume took. When the newest one that reads was not
  // usable (its workload state disagreed), the resume took an older one: the hooks are planned
  // again with that one's changes (the session, resumed already, is kept).
  if (std::vector<std::string> carried = take_live_changes(start.hook_states);
      !comm && !p.options.fresh && !p.options.check_only && carried != p.resumed_changes) {
    log.info("resuming with the live changes of the checkpoint resumed from: {}",
             carried.empty() ? std::string("none") : join(carried, ", "));
    config = p.base_config;
    apply_hook_overrides(config, carried,
                         "a live change (hookhost ctl) of the checkpoint resumed from:");
    p.resumed_changes = std::move(carried);
    JobPlan again = plan_job(cfg, p.options.plugin_dirs, p.options.communicator, log,
                             p.options.session != nullptr, p.options.builtin_plugin_dir);
    again.session.reset();  // a second workload, unused: the resumed one runs
    plan = std::move(again);
  }
  // The chief keeps the job's record: its run folder is the job's (docs/operations.md).
  bool ran_here_before = false;  // a record with lines: this start resumes that run
  if (!p.options.check_only && plan.rank == 0) {
    try {
      std::error_code ec;
      ran_here_before = fs::file_size(p.run_dir.path() / kRunRecordFile, ec) > 0 && !ec;
      p.record = std::make_unique<RunRecordWriter>(p.run_dir.path() / kRunRecordFile);
    } catch (const std::exception& e) {
      log.warn("{}; the job runs without a run record and report", e.what());
    }
  }
  RuntimeOptions runtime_settings =
      runtime_options(cfg, p.run_dir, p.log, p.options.communicator, plan.rank, p.record.get());
  runtime_settings.on_agreed_change = [&p](Runtime&, const std::string& change) {
    if (!p.live_control) return ChangeOutcome{false, "this process takes no live control\n"};
    return p.live_control->apply_agreed(change);
  };
  runtime_settings.checkpoint_job_entries = [&p] {
    std::map<std::string, SavedHookState> entries;
    const std::vector<std::string> changes =
        p.live_control ? p.live_control->changes() : p.resumed_changes;
    if (!changes.empty())
      entries.emplace(kLiveChangesEntry, SavedHookState{"hookhost", 1, join(changes, "\n")});
    return entries;
  };
  p.runtime = std::make_unique<Runtime>(*p.session, std::move(runtime_settings));
  p.runtime->restore_hook_states(start.hook_states);
  std::vector<std::string> granted;
  try {
    granted = instantiate(plan, hook_communicators, p.run_dir.path(), *p.runtime,
                          &p.isolation_groups, p.run_dir.folders_made_by_check());
    hooks_created.passed();
  } catch (const ConfigError&) {
    p.put_back_previous_run();
    throw;
  }

  log_effective_configuration(plan,
                              p.options.check_only ? cfg.run_dir.string() + " (untouched: --check)"
                                                   : p.run_dir.path().string(),
                              log);
  for (const std::string& line : granted) log.info("{}", line);
  if (p.record) {
    RecordedStart record_start;
    record_start.wall_time = p.record_started = wall_time_now();
    record_start.resume = ran_here_before || start.global_step != 0;
    record_start.global_step = start.global_step;
    record_start.configuration =
        join(effective_configuration(plan, p.run_dir.path().string()), "\n");
    record_start.plugins = recorded_plugins(plan);
    record_start.hookhost_version = HOOKHOST_VERSION_STRING;
    record_start.rank = plan.rank;
    record_start.world = plan.world;
    try {
      p.record->write(record_start);
    } catch (const std::exception& e) {
      log.warn("{}", e.what());
    }
  }
  start_live_control(p, plan);
}

// hookhost ctl: a socket in the run directory, for a job that runs steps. A distributed job's
// chief listens in its run directory; every process has its LiveControl, which makes the changes
// the chief proposes (shared_control.cpp).
void Job::start_live_control(Parts& p, const JobPlan& plan) {
  if (p.options.check_only || !p.options.live_control) return;
  LiveControl::Setup setup;
  setup.config = &p.base_config;
  setup.changes = p.resumed_changes;
  setup.plugin_dirs = plan.plugin_dirs;
  setup.builtin_dir = p.options.builtin_plugin_dir;
  setup.run_dir = p.run_dir.path();
  setup.runtime = p.runtime.get();
  setup.groups = &p.isolation_groups;
  setup.log = p.log;
  setup.communicator = p.options.communicator;
  if (RunRecordWriter* record = p.record.get()) setup.record = record_into(*record);
  p.live_control = std::make_unique<LiveControl>(std::move(setup));
  LiveControl* live = p.live_control.get();
  if (p.comm && !p.comm->is_chief()) return;  // the chief's run directory answers for the job
  try {
    control::Server::Options options;
    options.tick = [live] { live->tick(); };
    options.check_peer = refuse_runner_peer;
    options.note = [log = p.log](const std::string& text) { log->warn("hookhost ctl: {}", text); };
    p.control_server = std::make_unique<control::Server>(
        p.run_dir.path(),
        [live](const std::vector<std::string>& words) { return live->handle(words); },
        std::move(options));
    p.log->debug("hookhost ctl: listening on {}", p.control_server->path().string());
  } catch (const std::exception& e) {
    p.log->warn("{}; the job runs without live control (hookhost ctl)", e.what());
  }
}

ControlReply Job::control(const std::vector<std::string>& words) {
  if (!parts_->live_control)
    return {false,
            "this job takes no live control (--check, or JobOptions::live_control = false)\n"};
  if (parts_->comm && !parts_->comm->is_chief())
    return {false, "this is rank " + std::to_string(parts_->comm->rank()) +
                       " of a distributed job: its live control is the chief's (rank 0)\n"};
  const control::Reply reply = parts_->live_control->handle(words);
  return {reply.ok, reply.text};
}

Job::~Job() {
  // An embedder drives the runtime itself: its record ends when the job goes.
  Parts& p = *parts_;
  if (!p.record || p.record_ended || !p.runtime) return;
  try {
    p.end_record(p.runtime->close(), 0);
  } catch (const std::exception& e) {
    p.log->warn("the run record has no end: {}", e.what());
  }
}

void Job::Parts::end_record(const JobResult& result, double wall_time_s) {
  if (!record || record_ended) return;
  record_ended = true;
  RecordedCost cost;
  cost.wall_time = wall_time_now();
  cost.outcome = outcome_name(result.outcome);
  cost.reason = result.reason;
  cost.global_step = result.global_step;
  cost.steps_run = result.steps_run;
  cost.checkpoint_waits = result.checkpoint_waits;
  cost.checkpoint_wait_ns = result.checkpoint_wait_time.count();
  // An embedder's loop is not timed by the Job: the time since the start stands for it.
  cost.wall_time_s = wall_time_s > 0 ? wall_time_s : cost.wall_time - record_started;
  for (const HookReport& report : runtime->reports()) {
    RecordedHookCost hook{
        report.instance_name, report.plugin_id, report.disabled, report.failure, {}};
    for (const auto& [callback, stats] : report.callbacks)
      hook.callbacks.push_back(RecordedCallbackCost{
          callback, stats.calls, stats.timed_calls, stats.failures, stats.total.count(),
          stats.quantile(0.5).count(), stats.quantile(0.99).count(), stats.max.count()});
    cost.hooks.push_back(std::move(hook));
  }
  try {
    record->write(cost);
  } catch (const std::exception& e) {
    log->warn("{}", e.what());
  }
}

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
  p.control_server.reset();  // from here on, hookhost ctl hears that no job runs here
  wall_time_ = std::chrono::steady_clock::now() - t0;
  p.end_record(result, wall_time_.count());
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
