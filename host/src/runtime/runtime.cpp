// The Runtime: adding hooks, start, the step loop (before_run, session run, after_run, the step
// boundary), recovery, close and the reports. The calls into the hooks are the StepEngine's
// (step_engine.cpp), checkpoints are in checkpoints.cpp, a distributed job's agreement in
// step_agreement.cpp.
#include "hookhost/host/runtime.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "plugins/create_call.hpp"
#include "runtime/call_result.hpp"
#include "runtime/crash_blame.hpp"
#include "runtime/create_verdict.hpp"
#include "runtime/observer_lane.hpp"
#include "runtime/signal_guard.hpp"
#include "runtime/watchdog.hpp"
#include "runtime_impl.hpp"
#include "storage/event_writer.hpp"
#include "support/text.hpp"

namespace hookhost {

const char* outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::completed: return "completed";
    case Outcome::stopped: return "stopped";
    case Outcome::failed: return "failed";
  }
  return "?";
}

namespace {

std::shared_ptr<spdlog::logger> default_logger() {
  if (auto existing = spdlog::get("hookhost")) return existing;
  return std::make_shared<spdlog::logger>("hookhost",
                                          std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
}

// A refused instance's services stay valid for the life of the process, and the hook it made (if
// any) is never destroyed. Both are held from a global, not released, so they stay reachable:
// leak checkers report only what nothing points at.
void keep_forever(std::unique_ptr<HostServices> services, hh_hook* hook) {
  struct Orphan {
    std::unique_ptr<HostServices> services;
    hh_hook* hook;
  };
  static std::mutex mutex;
  static auto* const orphans = new std::vector<Orphan>;
  std::lock_guard lock(mutex);
  orphans->push_back({std::move(services), hook});
}

// Refuses a runtime entry point called from inside another (a hook, a session or on_recover
// calling back into the runtime), which would call hooks out of order.
class EntryGuard {
 public:
  EntryGuard(bool& in_call, const char* what) : in_call_(in_call) {
    if (in_call_)
      throw std::logic_error(std::string(what) +
                             " called from inside the runtime (a session, a recovery callback or "
                             "a hook); the runtime is not re-entrant");
    in_call_ = true;
  }
  ~EntryGuard() { in_call_ = false; }
  EntryGuard(const EntryGuard&) = delete;
  EntryGuard& operator=(const EntryGuard&) = delete;

 private:
  bool& in_call_;
};

// One process is not a distributed job: no collective per step.
RuntimeOptions single_process_alone(RuntimeOptions options) {
  if (options.communicator && options.communicator->size() < 2) options.communicator.reset();
  return options;
}

}  // namespace

Runtime::Impl::Impl(Session& s, RuntimeOptions o)
    : session(s),
      options(single_process_alone(std::move(o))),
      log(options.logger ? options.logger : default_logger()),
      job(log),
      services(options.services),
      service_context(job, running, event_writers, services,
                      ServiceSettings{options.max_state_bytes, options.config_dir,
                                      options.communicator, options.collective_timeout}),
      engine(job, running, log, options.time_every_n_steps) {
  if (options.communicator) agreement.emplace(*options.communicator, job, log);
  connect_run_events();
}

std::unique_ptr<HostServices> Runtime::Impl::make_services(const HookSettings& settings,
                                                           const std::string& plugin_id,
                                                           uint32_t state_version) {
  auto s = std::make_unique<HostServices>();
  s->context = &service_context;
  s->instance_name = settings.instance_name;
  s->group = settings.group;
  s->plugin_id = plugin_id;
  s->state_version = state_version;
  s->plugin_build = settings.plugin_build;
  s->run_dir = settings.run_dir.empty() ? options.run_dir.string() : settings.run_dir;
  s->write_roots = settings.write_roots;
  s->logger = log->clone(settings.instance_name);
  if (!settings.log_level.empty())
    s->logger->set_level(spdlog::level::from_str(settings.log_level));
  HostTable::fill(*s);
  adopt_restored_state(*s, settings);  // before create(), so state_get there sees it
  return s;
}

std::map<std::string, SavedHookState> Runtime::Impl::collect_hook_states() const {
  std::map<std::string, SavedHookState> out;
  for (const auto& sp : engine.slots()) {
    if (sp->detach.detached()) continue;  // its name may belong to a newer instance
    const HostServices& services = sp->hook.services();
    std::lock_guard lock(services.state_mutex);
    if (services.has_state) out.emplace(sp->hook.name(), services.state);
  }
  return out;
}

void Runtime::Impl::place(std::unique_ptr<Slot> slot) {
  engine.add(std::move(slot));
  if (started) engine.attach_added(creation);
}

void Runtime::Impl::check_can_add(const HookSettings& settings) const {
  if (started && !changes.running())
    throw std::logic_error("add_hook after start(), outside a change (at_next_boundary)");
  engine.check_unique(settings.instance_name);
  if (!settings.observer.enabled) return;
  // Its calls return steps after the step they concern: it cannot be what fails the job.
  if (settings.on_error == FailurePolicy::fail || settings.on_crash == CrashPolicy::fail)
    throw ConfigError("hook '" + settings.instance_name +
                      "': an observer cannot fail the job (on_error = fail or on_crash = fail): "
                      "its calls run behind the step; use stop or disable, or make it an "
                      "ordinary hook");
  if (settings.observer.queue == 0)
    throw ConfigError("hook '" + settings.instance_name +
                      "': an observer's queue holds at least one step");
}

bool Runtime::Impl::create_session() {
  ++creation;
  try {
    session.create(creation);
  } catch (const std::exception& e) {
    job.fail(std::string("the workload could not create its session: ") + e.what());
    return false;
  }
  read_workload_steps();
  return true;
}

bool Runtime::Impl::recover(int attempt, const std::string& message) {
  if (attempt > options.max_recoveries) {
    job.fail("the step failed with a recoverable error " + std::to_string(attempt) +
             " times in a row (max_recoveries=" + std::to_string(options.max_recoveries) +
             "): " + message);
    return false;
  }
  auto backoff = options.recovery_backoff * (1 << std::min(attempt - 1, 10));
  log->warn(
      "recoverable error at global step {}: {}; recreating the session in {} ms "
      "(attempt {} of {})",
      job.global_step(), message, backoff.count(), attempt, options.max_recoveries);
  std::this_thread::sleep_for(backoff);
  create_session();
  // Every process recreated its session before on_recover, which may be collective. The
  // checkpoint decision waits for the boundary below: a checkpoint taken here would hold the
  // freshly reset workload, not the restored one.
  if (agreement) agree_across_processes(/*decide_checkpoint=*/false);
  if (job.failed()) return false;
  wait_for_checkpoints();  // on_recover reads the newest checkpoint from disk
  if (options.on_recover) {
    try {
      options.on_recover(*owner_runtime);
    } catch (const std::exception& e) {
      job.fail(std::string("restoring after a recoverable error failed: ") + e.what());
      return false;
    }
    job.set_global_step(session.global_step());
  }
  engine.after_create_session_all(creation);
  step_boundary();
  return !job.failed();
}

Runtime::Runtime(Session& session, RuntimeOptions options)
    : impl_(std::make_unique<Impl>(session, std::move(options))) {
  impl_->owner_runtime = this;
  // Before any hook is created: create() of a resumed job sees the step it resumes at.
  impl_->read_workload_steps();
  CrashBlame::watch(&impl_->running);
}

Runtime::~Runtime() {
  try {
    if (impl_->started && !impl_->closed) close();
  } catch (const std::exception& e) {
    impl_->log->error("error while closing the runtime: {}", e.what());
  }
  impl_->wait_for_checkpoints();  // even when close() threw: the writer uses impl_'s members
  // Apart from close: hooks are destroyed even when end could not be delivered.
  try {
    impl_->engine.destroy_all();
  } catch (const std::exception& e) {
    impl_->log->error("error while destroying hooks: {}", e.what());
  }
  impl_->engine.stop_watching();
  CrashBlame::unwatch(&impl_->running);
}

void Runtime::add_hook(std::shared_ptr<const LoadedPlugin> plugin, HookSettings settings,
                       const ResolvedParams& params) {
  Impl& m = *impl_;
  if (settings.step_filter.cadence_every_n_steps == 0)
    settings.step_filter.cadence_every_n_steps = declared_cadence(plugin->metadata(), params);
  if (settings.plugin_build.empty()) settings.plugin_build = plugin->sha256();
  const std::string where =
      describe_hook(settings.instance_name, plugin->metadata().id, plugin->file().string());
  m.check_can_add(settings);
  const hh_plugin_entry& entry = plugin->entry();
  auto services = m.make_services(settings, plugin->metadata().id, entry.state_version);
  ResolvedParams::CValues c_params = params.c_values();
  std::vector<hh_param_value>& values = c_params.values;
  hh_hook* hook = nullptr;
  hh_error err;
  hh_error_init(&err);
  hh_status status;
  services->blame_name = where;  // for crash blame while create() runs
  {
    const SignalDispositions signals = SignalDispositions::snapshot();
    InstanceCallScope scope(m.running, m.job, *services, "create");
    status = call_create(entry, &services->c, settings.instance_name.c_str(), values, &hook, &err);
    signals.restore_and_report(*m.log, where, during_call(m.job, "create"));
  }
  const std::string message(err.message, ::strnlen(err.message, HH_ERROR_MESSAGE_SIZE));
  auto refuse = [&](const std::string& why) {
    // A hook that exists but cannot be trusted is leaked. So are the services of any refused
    // create(), which may have started a thread before it failed: orphaned, they refuse that
    // thread's calls from then on, and it never reaches this runtime, which may be gone.
    services->ended = true;
    services->orphaned.store(true, std::memory_order_release);
    keep_forever(std::move(services), hook);
    throw ConfigError(where + ": " + why);
  };
  // destroy is read only once struct_size says the plugin's struct has it.
  const uint32_t hook_size = hook ? hook->struct_size : 0;
  const bool has_destroy = hook_size >= HH_HOOK_SIZE_1_0 && hook->destroy;
  if (std::string why = create_refusal(status, message, hook != nullptr, hook_size, has_destroy);
      !why.empty())
    refuse(why);
  std::string extension_problem;
  auto dispatch = make_inprocess_dispatch(hook, plugin->metadata().id, plugin->file().string(),
                                          plugin->metadata().abi_minor, &extension_problem);
  auto slot = std::make_unique<Slot>(
      HookIdentity(std::move(settings), std::move(services), std::move(dispatch), plugin),
      DirectStepCalls{hook, hook->before_run, hook->after_run});
  if (!extension_problem.empty()) m.log->warn("{}: {}", where, extension_problem);
  m.place(std::move(slot));
}

void Runtime::add_hook(std::unique_ptr<HookDispatch> hook, HookSettings settings) {
  impl_->check_can_add(settings);
  auto services = impl_->make_services(settings, hook->plugin_id(), 1);
  impl_->place(std::make_unique<Slot>(
      HookIdentity(std::move(settings), std::move(services), std::move(hook))));
}

void Runtime::add_hook(const std::string& plugin_id, uint32_t state_version, HookSettings settings,
                       const DispatchFactory& make) {
  Impl& m = *impl_;
  m.check_can_add(settings);
  auto services = m.make_services(settings, plugin_id, state_version);
  std::unique_ptr<HookDispatch> dispatch;
  {
    const HostServices* previous = t_current_call;
    t_current_call = services.get();
    try {
      dispatch = make(services->c);
    } catch (...) {
      t_current_call = previous;
      throw;
    }
    t_current_call = previous;
  }
  if (!dispatch) throw std::logic_error("a dispatch factory returned no hook");
  if (const uint32_t version = dispatch->state_version(); version != 0) {
    // Learnt only now (from a runner): state the plugin saved in create() takes it too.
    std::lock_guard lock(services->state_mutex);
    if (services->has_state && services->state_saved_by_plugin)
      services->state.state_version = version;
    services->state_version = version;
  }
  m.place(std::make_unique<Slot>(
      HookIdentity(std::move(settings), std::move(services), std::move(dispatch))));
}

bool Runtime::start() {
  Impl& m = *impl_;
  EntryGuard guard(m.in_call, "start()");
  if (m.started) throw std::logic_error("start() called twice");
  m.started = true;
  m.started_shared.store(true);
  m.engine.start(m.session.fetchable(), m.session.feedable());
  std::vector<std::string> order;
  for (const auto& s : m.engine.slots())
    order.push_back(s->hook.name() + " (order " + std::to_string(s->hook.settings().order) + ")");
  m.log->info("hook order: {}", order.empty() ? "(no hooks)" : join(order, ", "));
  for (const auto& [name, _] : m.restored_states)
    if (std::none_of(m.engine.slots().begin(), m.engine.slots().end(),
                     [&name = name](const auto& s) { return s->hook.name() == name; }))
      m.log->warn("the checkpoint holds state for hook '{}', which is not configured; ignoring it",
                  name);
  m.job.set_global_step(m.session.global_step());
  try {
    m.checkpoint_writer.start();
  } catch (const std::exception& e) {
    m.job.fail(std::string("could not start the checkpoint writer thread: ") + e.what());
  }

  if (!m.job.failed()) m.engine.begin_all();
  if (!m.job.failed() && m.create_session()) m.engine.after_create_session_all(m.creation);
  m.step_boundary();
  return !m.job.failed();
}

RunOutput Runtime::run(const std::vector<std::string>& fetches, const TensorMap& feeds) {
  Impl& m = *impl_;
  EntryGuard guard(m.in_call, "run()");
  if (!m.started) throw std::logic_error("run() called before start()");
  if (m.should_stop())
    throw std::logic_error("run() called after the job should stop; check should_stop() first");
  if (fetches != m.checked_fetches) {
    for (const auto& name : fetches)
      if (!m.engine.can_fetch(name))
        throw std::invalid_argument("the caller asked to fetch '" + name +
                                    "', which the workload does not provide");
    m.checked_fetches = fetches;
  }
  for (const auto& [name, _] : feeds)
    if (!m.engine.can_feed(name))
      throw std::invalid_argument("the caller asked to feed '" + name +
                                  "', which the workload does not accept");

  StepEngine& engine = m.engine;
  RunOutput out;
  for (int attempt = 1;; ++attempt) {
    hh_run_context ctx{};
    ctx.struct_size = HH_RUN_CONTEXT_SIZE;
    ctx.global_step = m.session.global_step();
    ctx.iteration = m.steps_run;
    ctx.stop_requested = m.job.stop_requested(std::memory_order_relaxed) ? 1 : 0;

    if (!engine.before_step(ctx, fetches, feeds)) {
      engine.abandon_step();
      m.session.cancel_step();
      m.step_boundary();
      return out;
    }
    StepResult step = [&] {
      try {
        return m.session.run(engine.step_fetches(fetches), engine.step_feeds(feeds));
      } catch (const std::exception& e) {
        StepResult failed;
        failed.status = StepStatus::error;
        failed.message = std::string("the workload threw: ") + e.what();
        return failed;
      }
    }();
    engine.session_ran();
    switch (step.status) {
      case StepStatus::ok: break;
      case StepStatus::end_of_data:
        engine.abandon_step();
        m.job.set_end_of_data("end of data" + (step.message.empty() ? "" : ": " + step.message));
        m.log->info("{} after {} steps", m.job.end_of_data_reason(), m.steps_run);
        m.step_boundary();
        return out;
      case StepStatus::aborted:
      case StepStatus::unavailable:
        engine.abandon_step();
        if (!m.recover(attempt, step.message)) {
          m.step_boundary();
          return out;
        }
        continue;
      case StepStatus::error:
        engine.abandon_step();
        m.job.fail("the workload failed at global step " + std::to_string(ctx.global_step) + ": " +
                   step.message);
        m.step_boundary();
        return out;
      case StepStatus::cancelled:
        engine.abandon_step();
        m.step_boundary();  // the process that called the step off says why
        if (!m.should_stop())
          m.job.fail("the workload called off the step at global step " +
                     std::to_string(ctx.global_step) +
                     (m.options.communicator ? ", but no process of the job failed"
                                             : ", but this job has no other processes") +
                     (step.message.empty() ? "" : ": " + step.message));
        return out;
    }
    ++m.steps_run;
    m.steps_run_shared.store(m.steps_run, std::memory_order_relaxed);
    m.job.set_global_step(m.session.global_step(), std::memory_order_relaxed);
    engine.after_step(ctx, step.values);
    // The step boundary: every hook's after_run has returned.
    m.step_boundary();
    if (m.job.failed()) return out;
    out.ran = true;
    // The caller's values are moved out of the step's, never copied: all at once when the
    // workload returned just what the caller asked for.
    if (!engine.hooks_fetched() && step.values.size() == fetches.size() &&
        std::all_of(fetches.begin(), fetches.end(),
                    [&](const std::string& name) { return step.values.count(name) != 0; })) {
      out.values = std::move(step.values);
      return out;
    }
    for (const auto& name : fetches)
      if (auto node = step.values.extract(name)) out.values.insert(std::move(node));
    return out;
  }
}

std::string Runtime::running_call() const {
  const RunningCall& running = impl_->running;
  const HostServices* instance = running.instance();
  const int callback = running.callback();
  if (!instance || callback < 0) return {};
  return describe_hook(instance->instance_name, instance->plugin_id) + " in " +
         name_of(static_cast<Callback>(callback)) + " at global step " +
         std::to_string(running.step());
}

bool Runtime::should_stop() const {
  return impl_->should_stop();
}

void Runtime::fail_job(const std::string& reason) {
  impl_->job.fail(reason);
}

void Runtime::complete(const std::string& reason) {
  impl_->job.set_end_of_data(reason);
}

void Runtime::request_stop(hh_stop_cause cause, const std::string& reason) {
  impl_->job.request_stop(cause, reason);
}

JobResult Runtime::close() {
  Impl& m = *impl_;
  if (m.closed) return m.result;
  EntryGuard guard(m.in_call, "close()");
  m.changes.close();
  m.run_changes();  // every change posted gets its answer
  m.agreed_changes.close("the job is ending: it takes no more changes");
  m.engine.deliver_end(m.result);
  m.result.steps_run = m.steps_run;
  m.step_boundary();         // a final save asked for in end(), unless the job failed
  m.wait_for_checkpoints();  // every checkpoint is on disk when close() returns
  {
    JobState::CheckpointFailures failures = m.job.checkpoint_failures();
    m.result.checkpoint_failures = failures.count;
    m.result.checkpoint_error = std::move(failures.last_error);
    m.result.checkpoints_skipped = m.checkpoints_skipped;
    m.result.checkpoint_waits = m.checkpoint_waits;
    m.result.checkpoint_wait_time = m.checkpoint_wait_time;
  }
  if (m.job.failed() && m.result.outcome != Outcome::failed) {
    // Another process's end() failed under on_error = fail: every process ends alike.
    m.result.outcome = Outcome::failed;
    m.result.stop_cause = HH_STOP_CAUSE_NONE;
    m.result.reason = m.job.failure_reason();
  }
  m.closed = true;
  m.emit(RunEvent::Kind::end, m.result.global_step, "",
         std::string(outcome_name(m.result.outcome)) + ": " + m.result.reason);
  try {
    m.event_writers
        .flush_all();  // whatever hooks wrote reaches the disk even if they never flushed
  } catch (const std::exception& e) {
    m.log->error("{}", e.what());
  }
  // One message per failure: a hook failure that failed the job was logged where it happened.
  if (m.result.outcome == Outcome::failed && m.job.failure_logged())
    m.log->info("job failed (global step {}, {} steps run): the failure is logged above",
                m.result.global_step, m.result.steps_run);
  else
    m.log->log(m.result.outcome == Outcome::failed ? spdlog::level::err : spdlog::level::info,
               "job {}: {} (global step {}, {} steps run)", outcome_name(m.result.outcome),
               m.result.reason, m.result.global_step, m.result.steps_run);
  return m.result;
}

JobResult Runtime::run_to_end() {
  if (start())
    while (!should_stop()) run();
  return close();
}

std::vector<std::string> Runtime::hook_order() const {
  std::vector<std::string> names;
  for (const auto& s : impl_->engine.slots()) names.push_back(s->hook.name());
  return names;
}

std::vector<HookReport> Runtime::reports() const {
  std::vector<HookReport> out;
  impl_->engine.read_slots([&](const Slot& slot) {
    const Slot* sp = &slot;
    HookReport r;
    r.instance_name = sp->hook.name();
    r.plugin_id = sp->hook.dispatch().plugin_id();
    r.plugin_file = sp->hook.dispatch().plugin_file();
    r.disabled = sp->calls.disabled() && !sp->detach.detached();
    r.failure = sp->health.failure();
    r.detached = sp->detach.detached();
    r.detach_reason = sp->detach.reason();
    r.restarts = sp->health.restarts();
    r.max_restarts = sp->hook.settings().max_restarts;
    for (size_t i = 0; i < kCallbackNames.size(); ++i)
      r.callbacks[kCallbackNames[i]] = sp->stats_of(static_cast<Callback>(i));
    if (const ObserverLane* lane = sp->observer.lane()) {
      for (Callback cb : {Callback::before_run, Callback::after_run}) {
        r.callbacks[name_of(cb)].merge(lane->stats(cb));
      }
      r.observer_skipped_steps = lane->skipped_steps();
      r.observer_unfetched_steps = lane->unfetched_steps();
    }
    out.push_back(std::move(r));
  });
  return out;
}

const JobResult& Runtime::result() const {
  return impl_->result;
}

Session& Runtime::session() {
  return impl_->session;
}

std::map<std::string, SavedHookState> Runtime::saved_hook_states() const {
  return impl_->collect_hook_states();
}

std::map<std::string, std::string> Runtime::hook_states() const {
  std::map<std::string, std::string> out;
  for (auto& [name, state] : impl_->collect_hook_states()) out.emplace(name, state.bytes);
  return out;
}

void Runtime::restore_hook_states(const std::map<std::string, SavedHookState>& states) {
  Impl& m = *impl_;
  m.restored_states = states;
  for (const auto& sp : m.engine.slots()) {
    HostServices& s = sp->hook.services();
    {
      // A recovery goes back to the checkpoint's moment: what was stored since is dropped.
      std::lock_guard lock(s.state_mutex);
      s.has_state = false;
      s.state = {};
    }
    m.adopt_restored_state(s, sp->hook.settings());
  }
}

void Runtime::restore_hook_states(const std::map<std::string, std::string>& states) {
  std::map<std::string, SavedHookState> tagged;
  for (const auto& [name, bytes] : states) {
    auto it = std::find_if(impl_->engine.slots().begin(), impl_->engine.slots().end(),
                           [&name = name](const auto& s) { return s->hook.name() == name; });
    const uint32_t version =
        it == impl_->engine.slots().end() ? 1 : (*it)->hook.services().state_version;
    tagged.emplace(name, SavedHookState{"", version, bytes});
  }
  restore_hook_states(tagged);
}

}  // namespace hookhost
