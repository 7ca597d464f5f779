// The calls into the hooks, phase by phase (see step_engine.hpp); what a failed call does is in
// failure_policy.cpp.
#include "runtime/step_engine.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include <hookhost/ext/device_values.h>

#include "runtime/call_result.hpp"
#include "runtime/signal_guard.hpp"
#include "runtime/watchdog.hpp"
#include "support/display_text.hpp"
#include "support/text.hpp"

namespace hookhost {
namespace {

using namespace step_detail;

const char* state_name(HookState s) {
  switch (s) {
    case HookState::created: return "created";
    case HookState::begun: return "begun";
    case HookState::in_session: return "in session";
    case HookState::in_step: return "in step";
    case HookState::ended: return "ended";
    case HookState::destroyed: return "destroyed";
  }
  return "?";
}

}  // namespace

namespace {

// "cpu", "cuda:1", ...: where a fetched value lives.
std::string device_name(hh_device d) {
  switch (d.type) {
    case HH_DEVICE_CPU: return "cpu";
    case HH_DEVICE_CUDA: return "cuda:" + std::to_string(d.id);
    case HH_DEVICE_CUDA_HOST: return "cuda_host:" + std::to_string(d.id);
    case HH_DEVICE_ROCM: return "rocm:" + std::to_string(d.id);
  }
  return "device " + std::to_string(d.type) + ":" + std::to_string(d.id);
}

}  // namespace

std::string undeclared_device_refusal(const std::string& name, hh_device device,
                                      const std::string& limit) {
  const std::string head = "the fetched value '" + name + "' lives on " + device_name(device);
  if (!limit.empty()) return head + ", and " + limit;
  return head + ", and this hook does not declare that it takes device values (extension " +
         HH_EXTENSION_DEVICE_VALUES + ")";
}

std::string missing_fetch_failure(const std::string& name) {
  return "the workload did not return the fetched tensor '" + name + "'";
}

namespace step_detail {

// A runtime bug, never a plugin's: calling out of order would break the ABI's promise.
void out_of_order(const Slot& slot, Callback callback) {
  throw std::logic_error("hookhost internal error: " + std::string(name_of(callback)) +
                         " on hook '" + slot.hook.name() + "' in state " +
                         state_name(slot.calls.state()));
}

}  // namespace step_detail

std::string join_names(const std::vector<std::string>& items) {
  return items.empty() ? "(none)" : join(items, ", ");
}

std::string during_call(const JobState& job, const char* callback) {
  return std::string("in ") + callback + " at global step " +
         std::to_string(job.global_step(std::memory_order_relaxed));
}

InstanceCallScope::InstanceCallScope(RunningCall& running, const JobState& job,
                                     const HostServices& services, const char* call)
    : running_(running), previous_(t_current_call) {
  t_current_call = &services;
  running_.set_step(job.global_step(std::memory_order_relaxed));
  running_.enter_instance_call(&services, call);
}

InstanceCallScope::~InstanceCallScope() {
  running_.leave_instance_call();
  t_current_call = previous_;
}

StepEngine::StepEngine(JobState& job, RunningCall& running, std::shared_ptr<spdlog::logger> log,
                       uint32_t time_every_n_steps)
    : job_(job),
      running_(running),
      log_(std::move(log)),
      time_every_n_steps_(std::max<uint32_t>(time_every_n_steps, 1)) {}

StepEngine::~StepEngine() = default;

void StepEngine::check_unique(const std::string& instance_name) const {
  for (const auto& other : slots_)
    if (!other->detach.detached() && other->hook.name() == instance_name)
      throw ConfigError("two hooks are named '" + instance_name +
                        "'; instance names must be unique");
}

void StepEngine::add(std::unique_ptr<Slot> slot) {
  slot->request.issue(this, slot.get());
  std::lock_guard lock(slots_mutex_);
  slots_.push_back(std::move(slot));
}

void StepEngine::start(const std::vector<std::string>& fetchable,
                       const std::vector<std::string>& feedable) {
  std::lock_guard lock(slots_mutex_);
  order_slots();
  for (const auto& s : slots_) prepare_calls(*s);
  fetchable_.insert(fetchable.begin(), fetchable.end());
  feedable_.insert(feedable.begin(), feedable.end());
  start_observers();
  started_ = true;
}

void StepEngine::order_slots() {
  std::stable_sort(slots_.begin(), slots_.end(), [](const auto& a, const auto& b) {
    return a->hook.settings().order < b->hook.settings().order;
  });
}

void StepEngine::prepare_calls(Slot& slot) {
  const HookSettings& settings = slot.hook.settings();
  if (settings.call_timeout.count() > 0 && !watchdog_)
    watchdog_ = std::make_unique<CallWatchdog>(running_, log_);
  slot.calls.choose_direct_calls(settings.call_timeout.count() == 0 && time_every_n_steps_ > 1 &&
                                 !settings.observer.enabled);
}

void StepEngine::stop_watching() {
  watchdog_.reset();
}

void StepEngine::rebuild_step_slots() {
  step_slots_.clear();
  for (const auto& sp : slots_)
    if (!sp->calls.disabled() &&
        (sp->calls.implements(Callback::before_run) || sp->calls.implements(Callback::after_run)))
      step_slots_.push_back(sp.get());
  step_slots_stale_ = false;
}

std::string StepEngine::feeder_of(const std::string& name) const {
  if (caller_feeds_ && caller_feeds_->count(name)) return "the caller";
  if (auto owner = feed_owner_.find(name); owner != feed_owner_.end()) return owner->second;
  return {};
}

template <typename Fn>
CallResult StepEngine::call(Slot& slot, Callback callback, Fn&& fn) {
  const HostServices* previous = t_current_call;
  HostServices* const services = &slot.calls.services();
  t_current_call = services;
  running_.set_callback(callback);
  // Per-step calls have their context's step, set by their phase.
  if (callback != Callback::before_run && callback != Callback::after_run)
    running_.set_step(job_.global_step(std::memory_order_relaxed));
  auto t0 = std::chrono::steady_clock::now();
  if (watchdog_) {
    running_.start_watch(services, t0.time_since_epoch().count(),
                         slot.hook.settings().call_timeout);
  }
  running_.enter(services);
  // Not around the per-step calls: see signal_guard.hpp.
  const bool guard_signals = callback != Callback::before_run && callback != Callback::after_run;
  std::optional<SignalDispositions> signals;
  if (guard_signals) signals = SignalDispositions::snapshot();
  CallResult r = fn();
  auto dt = std::chrono::steady_clock::now() - t0;
  running_.leave();
  t_current_call = previous;
  if (signals)
    signals->restore_and_report(*log_, services->blame_name, during_call(job_, name_of(callback)));
  slot.cost.count_call(callback, std::chrono::duration_cast<std::chrono::nanoseconds>(dt));
  return r;
}

void StepEngine::begin_all() {
  for (auto& sp : slots_) {
    Slot& slot = *sp;
    check_state(slot, Callback::begin, {HookState::created});
    slot.calls.mark_begun();
    if (!wants(slot, Callback::begin)) continue;
    CallResult r = call(slot, Callback::begin, [&] { return slot.hook.dispatch().begin(); });
    handle_result(slot, Callback::begin, r, job_.global_step());
    if (job_.failed()) return;
  }
}

void StepEngine::after_create_session_all(int creation) {
  drain_observers();  // a new session: no step of the old one is still on its way
  hh_session_info info{};
  info.struct_size = HH_SESSION_INFO_SIZE;
  info.global_step = job_.global_step();
  info.creation = static_cast<uint32_t>(creation);
  for (auto& sp : slots_) {
    Slot& slot = *sp;
    if (!active(slot)) continue;
    check_state(slot, Callback::after_create_session, {HookState::begun, HookState::in_session});
    slot.calls.set_state(HookState::in_session);
    // A new session may start at another step: the hook says again which steps it can skip.
    slot.hook.services().skip_until.store(0, std::memory_order_relaxed);
    if (!wants(slot, Callback::after_create_session)) continue;
    CallResult r = call(slot, Callback::after_create_session,
                        [&] { return slot.hook.dispatch().after_create_session(info); });
    handle_result(slot, Callback::after_create_session, r, info.global_step);
    if (job_.failed()) return;
  }
}

// Drops what the hooks asked for in an attempt that did not reach after_run.
void StepEngine::abandon_step() {
  for (auto& sp : slots_) {
    if (sp->calls.state() == HookState::in_step) sp->calls.set_state(HookState::in_session);
    // An observer's fetches are its worker's; its first before_run's are handed over or dropped.
    if (sp->observer.lane()) {
      if (sp->observer.take_first_handover()) sp->request.clear_fetches();  // its worker is idle
      continue;
    }
    sp->request.clear_fetches();
  }
}

// Adds a hook's fetches and feeds to the step's; the caller's lists are copied only when the
// first hook adds something.
void StepEngine::merge_fetches(const std::vector<std::string>& names,
                               const std::vector<std::string>& caller_fetches) {
  if (names.empty()) return;
  if (!hooks_fetch_) {
    step_fetches_.assign(caller_fetches.begin(), caller_fetches.end());
    hooks_fetch_ = true;
  }
  for (const auto& name : names)
    if (std::find(step_fetches_.begin(), step_fetches_.end(), name) == step_fetches_.end())
      step_fetches_.push_back(name);
}

void StepEngine::merge_request(Slot& slot, const std::vector<std::string>& caller_fetches) {
  merge_fetches(slot.request.fetches(), caller_fetches);
  if (slot.request.has_feeds()) {
    if (!hooks_feed_) {
      merged_feeds_ = *caller_feeds_;
      hooks_feed_ = true;
    }
    slot.request.take_feeds([&](const std::string& name, Tensor&& value) {
      feed_owner_[name] = "hook '" + slot.hook.name() + "'";
      merged_feeds_.insert_or_assign(name, std::move(value));
    });
  }
}

// A value on a device this hook did not declare it takes: the call fails instead.
std::string StepEngine::device_refusal(Slot& slot, const std::string& name, const Tensor& value) {
  const hh_device device = value.device();
  if (device.type == HH_DEVICE_CPU) return {};
  // Plugin code: it runs as this hook, not as the hook whose per-step call ran last, and crash
  // blame names it.
  t_current_call = &slot.calls.services();
  running_.enter(&slot.calls.services());
  const bool accepted = slot.hook.dispatch().accepts_device(device);
  running_.leave();
  if (accepted) return {};
  return undeclared_device_refusal(name, device, slot.hook.dispatch().device_limit(device));
}

// The views of the values a hook fetched, in views_buffer_. False when the call must not be
// made: the job failed (a fetched value is missing) or `refusal` says why this hook is refused.
bool StepEngine::gather_views(Slot& slot, const TensorMap& values, std::string& refusal) {
  std::vector<hh_tensor>& views = views_buffer_;  // reused: no allocation per hook per step
  views.clear();
  for (const auto& name : slot.request.fetches()) {
    auto it = values.find(name);
    if (it == values.end()) {
      job_.fail(missing_fetch_failure(name));
      abandon_step();
      return false;
    }
    const Tensor* value = &it->second;
    std::string refused = device_refusal(slot, name, *value);
    if (!refused.empty() && value->host_copy()) {  // the host copy the workload made instead
      refused.clear();
      value = value->host_copy();
    }
    if (refusal.empty()) refusal = std::move(refused);
    // The map's key names the view: it lives until the step's values go, after every
    // after_run (the request's fetches are cleared before the call).
    views.push_back(value->view(it->first.c_str()));
  }
  return refusal.empty();
}

void StepEngine::deliver_end(JobResult& result) {
  // Every queued step reaches its observer first; what it returns may still change the outcome.
  drain_observers();
  hh_end_info job{};
  job.struct_size = HH_END_INFO_SIZE;
  job.global_step = job_.global_step();
  std::string job_reason;
  if (job_.failed()) {
    result.outcome = Outcome::failed;
    job_reason = job_.failure_reason();
  } else if (job_.stop_requested()) {
    JobState::Stop stop = job_.stop();
    result.outcome = Outcome::stopped;
    result.stop_cause = stop.cause;
    job_reason = std::move(stop.reason);
  } else if (job_.end_of_data()) {
    result.outcome = Outcome::completed;
    job_reason = job_.end_of_data_reason().empty() ? "end of data" : job_.end_of_data_reason();
  } else {
    result.outcome = Outcome::stopped;
    result.stop_cause = HH_STOP_CAUSE_HOST;
    job_reason = "closed by the host program";
  }
  result.reason = job_reason;
  result.global_step = job_.global_step();
  job.outcome = result.outcome == Outcome::completed ? HH_OUTCOME_COMPLETED
                : result.outcome == Outcome::stopped ? HH_OUTCOME_STOPPED
                                                     : HH_OUTCOME_FAILED;
  job.stop_cause = result.stop_cause;
  job.reason = job_reason.c_str();

  std::string end_failure;  // the first end() failure under on_error = fail
  for (Slot* observer : observer_slots_) observer->observer.lane()->shutdown();
  for (auto& sp : slots_) {
    Slot& slot = *sp;
    if (!slot.calls.begun() || slot.calls.state() == HookState::ended ||
        slot.calls.state() == HookState::destroyed)
      continue;
    hh_end_info info = job;
    std::string own_reason;
    if (slot.calls.disabled()) {
      own_reason = "this hook was disabled: " + slot.health.failure();
      info.outcome = HH_OUTCOME_FAILED;
      info.stop_cause = HH_STOP_CAUSE_NONE;
      info.reason = own_reason.c_str();
    }
    slot.calls.set_state(HookState::ended);
    if (wants(slot, Callback::end) && slot.health.runner_lost()) restart_for_end(slot);
    if (wants(slot, Callback::end) && !slot.health.runner_lost()) {
      CallResult r = call(slot, Callback::end, [&] { return slot.hook.dispatch().end(info); });
      if (r.status == HH_STOP_REQUESTED)
        log_->debug("hook '{}' returned HH_STOP_REQUESTED from end: the job is already ending",
                    slot.hook.name());
      if (!r.ok()) {
        slot.cost.count_failure(Callback::end);
        const std::string what = describe(slot, Callback::end, job.global_step) + ": " + r.message;
        if (slot.hook.settings().on_error == FailurePolicy::fail) {
          log_->error("{} [on_error=fail: the job fails once every hook had its end]", what);
          if (end_failure.empty()) end_failure = what;
        } else {
          log_->error("{}", what);
        }
        slot.health.note_failure("end failed: " + r.message);
      }
    }
    slot.hook.services().ended = true;
  }
  if (!end_failure.empty() && result.outcome != Outcome::failed) {
    result.outcome = Outcome::failed;
    result.stop_cause = HH_STOP_CAUSE_NONE;
    result.reason = end_failure;
    job_.replace_failure(end_failure);
    job_.mark_failure_logged();
  }
}

// A hook whose runner was lost gets its end in a fresh one while restarts remain: created again
// with its newest saved state, begin and after_create_session replayed as at any restart, then
// end. Past max_restarts, or when the restart fails, it gets none, and the text says why.
std::string StepEngine::restart_for_end(Slot& slot) {
  const std::string& name = slot.hook.name();
  const uint32_t max_restarts = slot.hook.settings().max_restarts;
  std::string why;
  if (slot.health.restarts() >= max_restarts) {
    why = "its runner was lost and its " + std::to_string(slot.health.restarts()) +
          " restarts are used up (max_restarts)";
    log_->warn("hook '{}' gets no end(): {}", name, why);
    return why;
  }
  slot.health.count_restart();
  if (!slot.hook.dispatch().restart(&why)) {
    log_->error("hook '{}' gets no end(): {}", name, why);
    return "its runner was lost and could not be restarted: " + why;
  }
  slot.health.runner_restarted();
  log_->info("hook '{}' restarted with its last saved state to receive end()", name);
  if (event_sink_)
    event_sink_(RunEvent::Kind::restart, job_.global_step(), name,
                "restarted with its last saved state to receive end() (" +
                    std::to_string(slot.health.restarts()) +
                    " of max_restarts = " + std::to_string(max_restarts) + ")");
  return {};
}

void StepEngine::destroy_all() {
  for (auto& sp : slots_) destroy_one(*sp);
}

void StepEngine::destroy_one(Slot& slot) {
  if (slot.calls.state() == HookState::destroyed) return;
  HostServices& services = slot.hook.services();
  services.ended = true;
  const SignalDispositions signals = SignalDispositions::snapshot();
  std::string error;
  {
    InstanceCallScope scope(running_, job_, services, "destroy");
    error = slot.hook.dispatch().destroy();
  }
  signals.restore_and_report(*log_, services.blame_name, during_call(job_, "destroy"));
  slot.calls.set_state(HookState::destroyed);
  if (!error.empty()) log_->error("{}: {}", services.blame_name, error);
}

CallResult StepEngine::call_through_dispatch(Slot& slot, Callback cb, const hh_run_context& ctx,
                                             const hh_run_values* values) {
  if (cb == Callback::before_run)
    return call(slot, cb, [&] { return slot.hook.dispatch().before_run(ctx, slot.request.c()); });
  return call(slot, cb, [&] { return slot.hook.dispatch().after_run(ctx, *values); });
}

bool StepEngine::before_calls_timed(const hh_run_context& ctx,
                                    const std::vector<std::string>& caller_fetches) {
  return before_calls<true>(ctx, caller_fetches);
}

void StepEngine::after_calls_timed(const hh_run_context& ctx, const TensorMap& values) {
  after_calls<true>(ctx, values);
}

// ---- live changes (hookhost ctl), at a step boundary
// ---------------------------------------------

void StepEngine::attach_added(int creation) {
  Slot& slot = *slots_.back();
  {
    std::lock_guard lock(slots_mutex_);
    prepare_calls(slot);
    order_slots();  // among equal orders after the hooks already there, as if added last
    step_slots_stale_ = true;
    if (slot.hook.is_observer()) {
      // A worker of its own, even in an isolation group's runner: its calls take turns with the
      // members' there, but not in step order with the group's other observers.
      std::map<const void*, std::shared_ptr<ObserverWorker>> own;
      start_observer(slot, own);
    }
  }
  const int64_t step = job_.global_step();
  check_state(slot, Callback::begin, {HookState::created});
  slot.calls.mark_begun();
  if (wants(slot, Callback::begin)) {
    CallResult r = call(slot, Callback::begin, [&] { return slot.hook.dispatch().begin(); });
    handle_result(slot, Callback::begin, r, step);
  }
  if (!active(slot) || job_.failed()) return;
  hh_session_info info{};
  info.struct_size = HH_SESSION_INFO_SIZE;
  info.global_step = step;
  info.creation = static_cast<uint32_t>(creation);
  slot.calls.set_state(HookState::in_session);
  if (wants(slot, Callback::after_create_session)) {
    CallResult r = call(slot, Callback::after_create_session,
                        [&] { return slot.hook.dispatch().after_create_session(info); });
    handle_result(slot, Callback::after_create_session, r, step);
  }
}

bool StepEngine::detach(const std::string& instance_name, const std::string& reason,
                        std::string* message, std::optional<SavedHookState>* final_state) {
  Slot* found = nullptr;
  std::vector<std::string> live;
  for (const auto& sp : slots_) {
    if (sp->detach.detached()) continue;
    live.push_back(sp->hook.name());
    if (sp->hook.name() == instance_name) found = sp.get();
  }
  if (!found) {
    *message = "no hook named '" + instance_name +
               "' runs in this job (its hooks: " + join_names(live) + ")";
    return false;
  }
  Slot& slot = *found;
  if (ObserverLane* lane = slot.observer.lane()) {  // every step queued to it first, as before end
    lane->drain([&] { settle_observer(slot); });
    settle_observer(slot);
    lane->shutdown();
    std::erase(observer_slots_, &slot);
  }
  const bool ends = slot.calls.begun() && slot.calls.state() != HookState::ended &&
                    slot.calls.state() != HookState::destroyed && wants(slot, Callback::end);
  std::string no_end;  // why a hook whose runner was lost gets no end, as at the job's end
  if (ends && !slot.detach.interrupted() && slot.health.runner_lost())
    no_end = restart_for_end(slot);
  if (slot.detach.interrupted()) {
    *message = "its runner was killed in the call it was stuck in: it had no end";
  } else if (!no_end.empty()) {
    *message = no_end + ": it had no end";
  } else if (ends) {
    hh_end_info info{};
    info.struct_size = HH_END_INFO_SIZE;
    std::string text = "detached: " + reason;
    if (slot.calls.disabled()) {  // a disabled hook is told why, as at the job's end
      text = "this hook was disabled: " + slot.health.failure();
      info.outcome = HH_OUTCOME_FAILED;
    } else if (slot.hook.dispatch().plugin_abi_minor() >= 6) {
      info.outcome = HH_OUTCOME_DETACHED;
    } else {  // never an outcome its plugin does not know
      info.outcome = HH_OUTCOME_STOPPED;
      info.stop_cause = HH_STOP_CAUSE_HOST;
    }
    info.reason = text.c_str();
    info.global_step = job_.global_step();
    *message = std::string("it had its end (outcome ") + hh_outcome_name(info.outcome) +
               ", reason \"" + text + "\")";
    slot.calls.set_state(HookState::ended);
    CallResult r = call(slot, Callback::end, [&] { return slot.hook.dispatch().end(info); });
    if (!r.ok()) {  // the operator took it off: its end's failure is its own, never the job's
      slot.cost.count_failure(Callback::end);
      log_->error("{}: {}", describe(slot, Callback::end, info.global_step), r.message);
      slot.health.note_failure("end failed: " + r.message);
      // The reply goes to an operator's terminal: the plugin's text is escaped.
      *message += ", which failed: " + display_text(r.message, 1024);
    }
  } else {
    *message = "it had no end (it had not begun, or does not implement end)";
  }
  slot.calls.set_state(HookState::ended);
  slot.hook.services().ended = true;
  if (final_state) {  // what its end saved last, before the instance is gone
    const HostServices& services = slot.hook.services();
    std::lock_guard lock(services.state_mutex);
    *final_state =
        services.has_state ? std::optional<SavedHookState>(services.state) : std::nullopt;
  }
  destroy_one(slot);
  slot.calls.disable();
  std::unique_ptr<HookDispatch> retired;  // its runner and plugin copy go once it is unlocked
  {
    std::lock_guard lock(slots_mutex_);  // reports() reads these from other threads
    slot.detach.mark_detached();
    slot.detach.set_reason(reason);
    retired = slot.hook.retire();
  }
  retired.reset();
  step_slots_stale_ = true;
  return true;
}

StepEngine::Interrupt StepEngine::interrupt(const std::string& instance_name,
                                            const std::string& why) {
  std::lock_guard lock(slots_mutex_);
  for (const auto& sp : slots_) {
    Slot& slot = *sp;
    if (slot.detach.detached() || slot.hook.name() != instance_name) continue;
    const HostServices* self = &slot.hook.services();
    const RunningCall* worker_call = slot.observer.worker_call();
    const bool in_call =
        running_.instance() == self || (worker_call && worker_call->instance() == self);
    if (!in_call) return Interrupt::not_in_call;
    slot.detach.mark_interrupted();
    if (slot.hook.dispatch().interrupt(why)) return Interrupt::done;
    slot.detach.unmark_interrupted();
    return Interrupt::cannot;
  }
  return Interrupt::no_such_hook;
}

}  // namespace hookhost
