// The lifecycle: hook order, the state machine, the step (before_run, session run, after_run),
// recovery, stops, failure policies and end. Host services live in services/, the per-step
// request in step_request.cpp.
#include "hookhost/host/runtime.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime/crash_blame.hpp"
#include "runtime/create_verdict.hpp"
#include "runtime/direct_call.hpp"
#include "runtime/signal_guard.hpp"
#include "runtime/watchdog.hpp"
#include "runtime_impl.hpp"
#include "services/event_writer.hpp"
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

std::string join_names(const std::vector<std::string>& items) {
  return items.empty() ? "(none)" : join(items, ", ");
}

namespace {

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

std::shared_ptr<spdlog::logger> default_logger() {
  if (auto existing = spdlog::get("hookhost")) return existing;
  return std::make_shared<spdlog::logger>("hookhost",
                                          std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
}

// Refused instances' services stay valid for the life of the process. Held from a global, not
// released, so they stay reachable: leak checkers report only what nothing points at.
void keep_forever(std::unique_ptr<HostServices> services) {
  static std::mutex mutex;
  static auto* const orphans = new std::vector<std::unique_ptr<HostServices>>;
  std::lock_guard lock(mutex);
  orphans->push_back(std::move(services));
}

std::string device_name(hh_device d) {
  switch (d.type) {
    case HH_DEVICE_CPU: return "cpu";
    case HH_DEVICE_CUDA: return "cuda:" + std::to_string(d.id);
    case HH_DEVICE_CUDA_HOST: return "cuda_host:" + std::to_string(d.id);
    case HH_DEVICE_ROCM: return "rocm:" + std::to_string(d.id);
  }
  return "device " + std::to_string(d.type) + ":" + std::to_string(d.id);
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

}  // namespace

Runtime::Impl::Impl(Session& s, RuntimeOptions o)
    : session(s), options(std::move(o)), services(options.services) {
  log = options.logger ? options.logger : default_logger();
  // One process is not a distributed job: no collective per step.
  if (options.communicator && options.communicator->size() < 2) options.communicator.reset();
}

void Runtime::Impl::request_stop(hh_stop_cause cause, const std::string& reason) {
  std::lock_guard lock(stop_mutex);
  if (!stop_requested.exchange(true)) {
    stop_cause = cause;
    stop_reason = reason;
    log->info("stop requested: {}", reason);
  }
}

void Runtime::Impl::fail_job(const std::string& reason) {
  if (failed) return;
  failed = true;
  failure_reason = reason;
}

std::unique_ptr<HostServices> Runtime::Impl::make_services(const HookSettings& settings,
                                                           const std::string& plugin_id,
                                                           uint32_t state_version) {
  auto s = std::make_unique<HostServices>();
  s->owner = this;
  s->instance_name = settings.instance_name;
  s->group = settings.group;
  s->plugin_id = plugin_id;
  s->state_version = state_version;
  s->run_dir = options.run_dir.string();
  s->logger = log->clone(settings.instance_name);
  if (!settings.log_level.empty())
    s->logger->set_level(spdlog::level::from_str(settings.log_level));
  HostTable::fill(*s);
  adopt_restored_state(*s);  // before create(), so state_get there sees it
  return s;
}

std::map<std::string, SavedHookState> Runtime::Impl::collect_hook_states() const {
  std::map<std::string, SavedHookState> out;
  for (const auto& sp : slots) {
    std::lock_guard lock(sp->services->state_mutex);
    if (sp->services->has_state) out.emplace(sp->settings.instance_name, sp->services->state);
  }
  return out;
}

namespace {

// "in begin at global step 12", for a signal handler a call replaced.
std::string during_call(const Runtime::Impl& m, const char* callback) {
  return std::string("in ") + callback + " at global step " +
         std::to_string(m.live_step.load(std::memory_order_relaxed));
}

// An instance's create() or destroy(), which run outside any slot's lifecycle call: recorded so
// crash blame names the hook, and the [hook-thread] checks see the instance as the caller.
struct InstanceCallScope {
  Runtime::Impl& m;
  const HostServices* previous = t_current_call;
  InstanceCallScope(Runtime::Impl& runtime, const HostServices& services, const char* call)
      : m(runtime) {
    t_current_call = &services;
    m.running_step.store(m.live_step.load(std::memory_order_relaxed), std::memory_order_relaxed);
    m.instance_call_name.store(call, std::memory_order_relaxed);
    m.instance_call.store(&services, std::memory_order_release);
  }
  ~InstanceCallScope() {
    m.instance_call.store(nullptr, std::memory_order_release);
    t_current_call = previous;
  }
  InstanceCallScope(const InstanceCallScope&) = delete;
  InstanceCallScope& operator=(const InstanceCallScope&) = delete;
};

// The lifecycle steps, as free functions over Impl so each reads as one phase.
struct Lifecycle {
  Runtime::Impl& m;

  template <typename Fn>
  CallResult call(Slot& slot, Callback callback, Fn&& fn) {
    const HostServices* previous = t_current_call;
    t_current_call = slot.services.get();
    m.running_callback.store(static_cast<int>(callback), std::memory_order_relaxed);
    // Per-step calls have their context's step, set by their phase.
    if (callback != Callback::before_run && callback != Callback::after_run)
      m.running_step.store(m.live_step.load(std::memory_order_relaxed), std::memory_order_relaxed);
    auto t0 = std::chrono::steady_clock::now();
    if (m.watchdog) {
      m.running_since_ns.store(t0.time_since_epoch().count(), std::memory_order_relaxed);
      m.call_serial.fetch_add(1, std::memory_order_release);
    }
    m.running_slot.store(&slot, std::memory_order_release);
    // Not around the per-step calls: see signal_guard.hpp.
    const bool guard_signals = callback != Callback::before_run && callback != Callback::after_run;
    std::optional<SignalDispositions> signals;
    if (guard_signals) signals = SignalDispositions::snapshot();
    CallResult r = fn();
    auto dt = std::chrono::steady_clock::now() - t0;
    m.running_slot.store(nullptr, std::memory_order_release);
    t_current_call = previous;
    if (signals)
      signals->restore_and_report(*m.log, slot.services->blame_name,
                                  during_call(m, name_of(callback)));
    CallStats& st = slot.stats[static_cast<size_t>(callback)];
    ++st.calls;
    record_time(st, std::chrono::duration_cast<std::chrono::nanoseconds>(dt));
    return r;
  }

  static void record_time(CallStats& st, std::chrono::nanoseconds dt) {
    ++st.timed_calls;
    st.total += dt;
    st.max = std::max(st.max, dt);
  }

  // Times the per-step calls of a sampled step with one clock read after each call: a call's
  // time runs from the previous read (the end of the previous call, or the start of the phase).
  struct StepTimer {
    bool on = false;
    std::chrono::steady_clock::time_point last{};
    explicit StepTimer(bool timed) : on(timed) {
      if (on) last = std::chrono::steady_clock::now();
    }
    void record(CallStats& st) {
      const auto now = std::chrono::steady_clock::now();
      record_time(st, std::chrono::duration_cast<std::chrono::nanoseconds>(now - last));
      last = now;
    }
  };

  // Restores the thread's running call when a phase of per-step calls ends, however it ends:
  // direct calls set it per call and leave the restoring to the phase.
  struct PhaseCallScope {
    Runtime::Impl& m;
    const HostServices* previous = t_current_call;
    PhaseCallScope(Runtime::Impl& runtime, Callback cb, int64_t step) : m(runtime) {
      m.running_callback.store(static_cast<int>(cb), std::memory_order_relaxed);
      m.running_step.store(step, std::memory_order_relaxed);
    }
    ~PhaseCallScope() { t_current_call = previous; }
    PhaseCallScope(const PhaseCallScope&) = delete;
    PhaseCallScope& operator=(const PhaseCallScope&) = delete;
  };

  // One before_run or after_run, inside a PhaseCallScope. An in-process hook is called through
  // its own function pointer with the runtime's reused hh_error, and only what crash blame and
  // the [hook-thread] checks need is recorded around it; a CallResult is built only when the call
  // did not return HH_OK (into `result`, and the function returns false). A hook with a
  // call_timeout, or every hook when every call is timed, goes through call() for the watchdog's
  // bookkeeping.
  template <bool kTimed, typename DirectFn, typename DispatchFn>
  bool step_call(Slot& slot, Callback cb, StepTimer& timer, DirectFn&& direct,
                 DispatchFn&& through_dispatch, std::optional<CallResult>& result) {
    if (!slot.direct_step_calls) [[unlikely]] {
      result = call(slot, cb, through_dispatch);
      if (kTimed) timer.last = std::chrono::steady_clock::now();
      return result->status == HH_OK;
    }
    t_current_call = slot.services.get();
    m.running_slot.store(&slot, std::memory_order_release);
    result = call_inprocess([&](hh_error* err) { return direct(slot.direct_hook, err); },
                            m.call_error);
    m.running_slot.store(nullptr, std::memory_order_release);
    ++slot.direct_calls[cb == Callback::before_run ? 0 : 1];
    if (kTimed) timer.record(slot.stats[static_cast<size_t>(cb)]);
    return !result;
  }

  void check_state(const Slot& slot, Callback callback, std::initializer_list<HookState> ok) {
    for (HookState s : ok)
      if (slot.state == s) return;
    out_of_order(slot, callback);
  }
  void check_state(const Slot& slot, Callback callback, HookState ok) {
    if (slot.state != ok) [[unlikely]]
      out_of_order(slot, callback);
  }
  // A runtime bug, never a plugin's: calling out of order would break the ABI's promise.
  [[noreturn, gnu::cold]] static void out_of_order(const Slot& slot, Callback callback) {
    throw std::logic_error("hookhost internal error: " + std::string(name_of(callback)) +
                           " on hook '" + slot.settings.instance_name + "' in state " +
                           state_name(slot.state));
  }

  std::string describe(const Slot& slot, Callback cb, int64_t step) const {
    return describe_hook(slot.settings.instance_name, slot.dispatch->plugin_id(),
                         slot.dispatch->plugin_file()) +
           " failed in " + name_of(cb) + " at global step " + std::to_string(step);
  }

  // What a status does: the table in status.h. `step` is the step the call concerns.
  void handle_result(Slot& slot, Callback cb, const CallResult& r, int64_t step) {
    if (r.status == HH_STOP_REQUESTED) {
      m.request_stop(HH_STOP_CAUSE_HOOK, "hook '" + slot.settings.instance_name +
                                             "' requested a stop in " + name_of(cb));
      return;
    }
    if (r.ok()) return;
    ++slot.stats[static_cast<size_t>(cb)].failures;
    if (r.runner_lost) return handle_lost_runner(slot, cb, r, step);
    const bool fatal = r.status == HH_ERROR_FATAL;
    const std::string what = describe(slot, cb, step) + ": " + r.message;
    const FailurePolicy policy = slot.settings.on_error;
    // One bracket says what the host does: "[fatal error; on_error=stop: ...]".
    const char* fatal_note = fatal ? "fatal error; " : "";
    switch (policy) {
      case FailurePolicy::keep_going:
        m.log->error("{} [{}on_error=continue: {}]", what, fatal_note,
                     fatal ? "a fatal error disables the hook anyway, the job continues"
                           : "the hook keeps getting calls");
        break;
      case FailurePolicy::disable:
        m.log->error("{} [{}on_error=disable: the hook is disabled, the job continues]", what,
                     fatal_note);
        break;
      case FailurePolicy::stop:
        m.log->error("{} [{}on_error=stop: the hook is disabled, the job stops after this step]",
                     what, fatal_note);
        break;
      case FailurePolicy::fail:
        m.log->error("{} [{}on_error=fail: the job fails]", what, fatal_note);
        break;
    }
    if (slot.failure.empty()) slot.failure = std::string(name_of(cb)) + " failed: " + r.message;
    if (policy != FailurePolicy::keep_going || fatal) m.disable(slot);
    if (policy == FailurePolicy::stop) m.request_stop(HH_STOP_CAUSE_HOOK, what);
    if (policy == FailurePolicy::fail) {
      m.fail_job(what);
      m.failure_logged = true;
    }
  }

  // The hook's process is gone (another isolation tier): on_crash decides, not on_error.
  void handle_lost_runner(Slot& slot, Callback cb, const CallResult& r, int64_t step) {
    const std::string what = describe(slot, cb, step) + ": " + r.message;
    if (slot.failure.empty()) slot.failure = std::string(name_of(cb)) + " failed: " + r.message;
    const HookSettings& s = slot.settings;
    slot.runner_lost = true;  // until a restart succeeds
    switch (s.on_crash) {
      case CrashPolicy::restart: {
        if (cb == Callback::end) {
          m.log->error("{} [on_crash=restart: end() was its last call; nothing to restart]", what);
          m.disable(slot);
          return;
        }
        if (slot.restarts >= s.max_restarts) {
          m.log->error(
              "{} [on_crash=restart: {} restarts used up (max_restarts); the hook is "
              "disabled, the job continues]",
              what, slot.restarts);
          m.disable(slot);
          return;
        }
        m.log->error("{} [on_crash=restart: restarting it ({} of {})]", what, slot.restarts + 1,
                     s.max_restarts);
        std::this_thread::sleep_for(s.restart_backoff * (1 << std::min(slot.restarts, 10u)));
        ++slot.restarts;
        std::string why;
        if (slot.dispatch->restart(&why)) {
          slot.runner_lost = false;
          m.log->info("hook '{}' restarted with its last saved state", s.instance_name);
          return;
        }
        m.log->error(
            "hook '{}' could not be restarted: {}; the hook is disabled, the job "
            "continues",
            s.instance_name, why);
        m.disable(slot);
        return;
      }
      case CrashPolicy::disable:
        m.log->error("{} [on_crash=disable: the hook is disabled, the job continues]", what);
        m.disable(slot);
        return;
      case CrashPolicy::stop:
        m.log->error("{} [on_crash=stop: the hook is disabled, the job stops after this step]",
                     what);
        m.disable(slot);
        m.request_stop(HH_STOP_CAUSE_HOOK, what);
        return;
      case CrashPolicy::fail:
        m.log->error("{} [on_crash=fail: the job fails]", what);
        m.disable(slot);
        m.fail_job(what);
        m.failure_logged = true;
        return;
    }
  }

  bool active(const Slot& slot) const { return !slot.disabled; }
  bool wants(const Slot& slot, Callback cb) const {
    return slot.implements[static_cast<size_t>(cb)];
  }

  void begin_all() {
    for (auto& sp : m.slots) {
      Slot& slot = *sp;
      check_state(slot, Callback::begin, {HookState::created});
      slot.begin_called = true;
      slot.state = HookState::begun;
      if (!wants(slot, Callback::begin)) continue;
      CallResult r = call(slot, Callback::begin, [&] { return slot.dispatch->begin(); });
      handle_result(slot, Callback::begin, r, m.live_step.load());
      if (m.failed) return;
    }
  }

  void after_create_session_all() {
    hh_session_info info{};
    info.struct_size = HH_SESSION_INFO_SIZE;
    info.global_step = m.live_step.load();
    info.creation = static_cast<uint32_t>(m.creation);
    for (auto& sp : m.slots) {
      Slot& slot = *sp;
      if (!active(slot)) continue;
      check_state(slot, Callback::after_create_session, {HookState::begun, HookState::in_session});
      slot.state = HookState::in_session;
      if (!wants(slot, Callback::after_create_session)) continue;
      CallResult r = call(slot, Callback::after_create_session,
                          [&] { return slot.dispatch->after_create_session(info); });
      handle_result(slot, Callback::after_create_session, r, info.global_step);
      if (m.failed) return;
    }
  }

  bool create_session() {
    ++m.creation;
    try {
      m.session.create(m.creation);
    } catch (const std::exception& e) {
      m.fail_job(std::string("the workload could not create its session: ") + e.what());
      return false;
    }
    m.read_workload_steps();
    return true;
  }

  bool recover(int attempt, const std::string& message) {
    if (attempt > m.options.max_recoveries) {
      m.fail_job("the step failed with a recoverable error " + std::to_string(attempt) +
                 " times in a row (max_recoveries=" + std::to_string(m.options.max_recoveries) +
                 "): " + message);
      return false;
    }
    auto backoff = m.options.recovery_backoff * (1 << std::min(attempt - 1, 10));
    m.log->warn(
        "recoverable error at global step {}: {}; recreating the session in {} ms "
        "(attempt {} of {})",
        m.live_step.load(), message, backoff.count(), attempt, m.options.max_recoveries);
    std::this_thread::sleep_for(backoff);
    create_session();
    // Every process recreated its session before on_recover, which may be collective. The
    // checkpoint decision waits for the boundary below: a checkpoint taken here would hold the
    // freshly reset workload, not the restored one.
    if (m.options.communicator) m.agree_across_processes(/*decide_checkpoint=*/false);
    if (m.failed) return false;
    m.wait_for_checkpoints();  // on_recover reads the newest checkpoint from disk
    if (m.options.on_recover) {
      try {
        m.options.on_recover(*m.owner_runtime);
      } catch (const std::exception& e) {
        m.fail_job(std::string("restoring after a recoverable error failed: ") + e.what());
        return false;
      }
      m.live_step = m.session.global_step();
    }
    after_create_session_all();
    m.step_boundary();
    return !m.failed;
  }

  // Drops what the hooks asked for in an attempt that did not reach after_run.
  void abandon_step() {
    for (auto& sp : m.slots) {
      if (sp->state == HookState::in_step) sp->state = HookState::in_session;
      sp->fetches.clear();
    }
  }

  // Adds a hook's fetches and feeds to the step's; the caller's lists are copied only when the
  // first hook adds something.
  void merge_request(Slot& slot, const std::vector<std::string>& caller_fetches) {
    if (!slot.fetches.empty()) {
      if (!m.hooks_fetch) {
        m.step_fetches.assign(caller_fetches.begin(), caller_fetches.end());
        m.hooks_fetch = true;
      }
      for (const auto& name : slot.fetches)
        if (std::find(m.step_fetches.begin(), m.step_fetches.end(), name) == m.step_fetches.end())
          m.step_fetches.push_back(name);
    }
    if (!slot.feeds.empty()) {
      if (!m.hooks_feed) {
        m.merged_feeds = *m.caller_feeds;
        m.hooks_feed = true;
      }
      for (auto& [name, value] : slot.feeds) {
        m.feed_owner[name] = "hook '" + slot.settings.instance_name + "'";
        m.merged_feeds.insert_or_assign(name, std::move(value));
      }
      slot.feeds.clear();
    }
  }

  bool run_before(const hh_run_context& ctx, const std::vector<std::string>& caller_fetches,
                  const TensorMap& caller_feeds) {
    m.refresh_step_slots();
    m.hooks_fetch = false;
    m.hooks_feed = false;
    m.caller_feeds = &caller_feeds;
    if (!m.feed_owner.empty()) m.feed_owner.clear();
    if (m.step_slots.empty()) return true;
    return m.timed_step ? before_calls<true>(ctx, caller_fetches)
                        : before_calls<false>(ctx, caller_fetches);
  }

  template <bool kTimed>
  bool before_calls(const hh_run_context& ctx, const std::vector<std::string>& caller_fetches) {
    PhaseCallScope scope(m, Callback::before_run, ctx.global_step);
    StepTimer timer(kTimed);
    for (Slot* sp : m.step_slots) {
      Slot& slot = *sp;
      if (!active(slot)) continue;
      check_state(slot, Callback::before_run, HookState::in_session);
      slot.state = HookState::in_step;
      if (!wants(slot, Callback::before_run)) continue;
      std::optional<CallResult> failure;
      const bool ok = step_call<kTimed>(
          slot, Callback::before_run, timer,
          [&](hh_hook* h, hh_error* err) {
            return slot.direct_before_run(h, &ctx, &slot.request.c, err);
          },
          [&] { return slot.dispatch->before_run(ctx, slot.request.c); }, failure);
      if (ok && !slot.request_touched) [[likely]]
        continue;
      slot.request_touched = false;
      CallResult r = failure ? std::move(*failure) : CallResult{};
      // The host's own reason for a rejected fetch or feed is more precise than the plugin's,
      // unless the hook's process is gone: that loss is what on_crash must see.
      if (!slot.request_error.empty() && !r.runner_lost)
        r = CallResult{HH_ERROR, 0, slot.request_error};
      slot.request_error.clear();
      if (!r.ok()) {
        // A hook that failed in before_run contributes nothing to this step.
        slot.fetches.clear();
        slot.feeds.clear();
        handle_result(slot, Callback::before_run, r, ctx.global_step);
        if (m.failed) return false;
        if (!active(slot)) slot.state = HookState::in_session;
        continue;
      }
      handle_result(slot, Callback::before_run, r, ctx.global_step);
      merge_request(slot, caller_fetches);
    }
    return true;
  }

  // A value on a device this hook did not declare it takes: the call fails instead.
  std::string device_refusal(Slot& slot, const std::string& name, const Tensor& value) {
    const hh_device device = value.device();
    if (device.type == HH_DEVICE_CPU) return {};
    // Plugin code: it runs as this hook, not as the hook whose per-step call ran last.
    t_current_call = slot.services.get();
    if (slot.dispatch->accepts_device(device)) return {};
    return "the fetched value '" + name + "' lives on " + device_name(device) +
           ", and this hook does not declare that it takes device values (extension " +
           HH_EXTENSION_DEVICE_VALUES + ")";
  }

  // The views of the values a hook fetched, in m.views_buffer. False when the call must not be
  // made: the job failed (a fetched value is missing) or `refusal` says why this hook is refused.
  bool gather_views(Slot& slot, const TensorMap& values, std::string& refusal) {
    std::vector<hh_tensor>& views = m.views_buffer;  // reused: no allocation per hook per step
    views.clear();
    for (const auto& name : slot.fetches) {
      auto it = values.find(name);
      if (it == values.end()) {
        m.fail_job("the workload did not return the fetched tensor '" + name + "'");
        abandon_step();
        return false;
      }
      if (refusal.empty()) refusal = device_refusal(slot, name, it->second);
      // The map's key names the view: it lives until the step's values go, after every
      // after_run (slot.fetches is cleared before the call).
      views.push_back(it->second.view(it->first.c_str()));
    }
    return refusal.empty();
  }

  void run_after(const hh_run_context& ctx, const TensorMap& values) {
    if (m.step_slots.empty()) return;
    if (m.timed_step)
      after_calls<true>(ctx, values);
    else
      after_calls<false>(ctx, values);
  }

  template <bool kTimed>
  void after_calls(const hh_run_context& ctx, const TensorMap& values) {
    PhaseCallScope scope(m, Callback::after_run, ctx.global_step);
    StepTimer timer(kTimed);
    hh_run_context after_ctx = ctx;
    hh_run_values no_values{};
    no_values.struct_size = HH_RUN_VALUES_SIZE;
    no_values.tensor_stride = sizeof(hh_tensor);
    for (Slot* sp : m.step_slots) {
      Slot& slot = *sp;
      if (!active(slot) || slot.state != HookState::in_step) continue;
      slot.state = HookState::in_session;
      if (!wants(slot, Callback::after_run)) continue;
      const hh_run_values* rv = &no_values;
      hh_run_values fetched;
      if (!slot.fetches.empty()) [[unlikely]] {
        fetched = no_values;
        std::string refusal;
        const bool gathered = gather_views(slot, values, refusal);
        slot.fetches.clear();
        if (!gathered) {
          if (m.failed) return;
          handle_result(slot, Callback::after_run, CallResult{HH_ERROR, 0, refusal},
                        m.live_step.load(std::memory_order_relaxed));
          if (m.failed) return;
          continue;
        }
        fetched.tensors = m.views_buffer.data();
        fetched.count = static_cast<uint32_t>(m.views_buffer.size());
        rv = &fetched;
      }
      after_ctx.stop_requested = m.stop_requested.load(std::memory_order_relaxed) ? 1 : 0;
      std::optional<CallResult> failure;
      if (step_call<kTimed>(
              slot, Callback::after_run, timer,
              [&](hh_hook* h, hh_error* err) {
                return slot.direct_after_run(h, &after_ctx, rv, err);
              },
              [&] { return slot.dispatch->after_run(after_ctx, *rv); }, failure)) [[likely]]
        continue;
      // The step the call concerns is the one that ran (its context's step), as in the trace.
      handle_result(slot, Callback::after_run, *failure, ctx.global_step);
      if (m.failed) return;
    }
  }

  void deliver_end() {
    hh_end_info job{};
    job.struct_size = HH_END_INFO_SIZE;
    job.global_step = m.live_step.load();
    std::string job_reason;
    JobResult& result = m.result;
    if (m.failed) {
      result.outcome = Outcome::failed;
      job_reason = m.failure_reason;
    } else if (m.stop_requested.load()) {
      std::lock_guard lock(m.stop_mutex);
      result.outcome = Outcome::stopped;
      result.stop_cause = m.stop_cause;
      job_reason = m.stop_reason;
    } else if (m.end_of_data) {
      result.outcome = Outcome::completed;
      job_reason = result.reason.empty() ? "end of data" : result.reason;
    } else {
      result.outcome = Outcome::stopped;
      result.stop_cause = HH_STOP_CAUSE_HOST;
      job_reason = "closed by the host program";
    }
    result.reason = job_reason;
    result.global_step = m.live_step.load();
    result.steps_run = m.steps_run;
    job.outcome = result.outcome == Outcome::completed ? HH_OUTCOME_COMPLETED
                  : result.outcome == Outcome::stopped ? HH_OUTCOME_STOPPED
                                                       : HH_OUTCOME_FAILED;
    job.stop_cause = result.stop_cause;
    job.reason = job_reason.c_str();

    std::string end_failure;  // the first end() failure under on_error = fail
    for (auto& sp : m.slots) {
      Slot& slot = *sp;
      if (!slot.begin_called || slot.state == HookState::ended ||
          slot.state == HookState::destroyed)
        continue;
      hh_end_info info = job;
      std::string own_reason;
      if (slot.disabled) {
        own_reason = "this hook was disabled: " + slot.failure;
        info.outcome = HH_OUTCOME_FAILED;
        info.stop_cause = HH_STOP_CAUSE_NONE;
        info.reason = own_reason.c_str();
      }
      slot.state = HookState::ended;
      // A hook whose runner was lost gets its end in a fresh one while restarts remain: created
      // again with its newest saved state, begin and after_create_session replayed as at any
      // restart, then end with the job's outcome. Past max_restarts, it gets none.
      if (wants(slot, Callback::end) && slot.runner_lost) {
        const std::string& name = slot.settings.instance_name;
        std::string why;
        if (slot.restarts >= slot.settings.max_restarts) {
          m.log->warn(
              "hook '{}' gets no end(): its runner was lost and its {} restarts are used "
              "up (max_restarts)",
              name, slot.restarts);
        } else if (++slot.restarts; slot.dispatch->restart(&why)) {
          slot.runner_lost = false;
          m.log->info("hook '{}' restarted with its last saved state to receive end()", name);
        } else {
          m.log->error("hook '{}' gets no end(): {}", name, why);
        }
      }
      if (wants(slot, Callback::end) && !slot.runner_lost) {
        CallResult r = call(slot, Callback::end, [&] { return slot.dispatch->end(info); });
        if (r.status == HH_STOP_REQUESTED)
          m.log->debug("hook '{}' returned HH_STOP_REQUESTED from end: the job is already ending",
                       slot.settings.instance_name);
        if (!r.ok()) {
          ++slot.stats[static_cast<size_t>(Callback::end)].failures;
          const std::string what =
              describe(slot, Callback::end, job.global_step) + ": " + r.message;
          if (slot.settings.on_error == FailurePolicy::fail) {
            m.log->error("{} [on_error=fail: the job fails once every hook had its end]", what);
            if (end_failure.empty()) end_failure = what;
          } else {
            m.log->error("{}", what);
          }
          if (slot.failure.empty()) slot.failure = "end failed: " + r.message;
        }
      }
      slot.services->ended = true;
    }
    if (!end_failure.empty() && result.outcome != Outcome::failed) {
      result.outcome = Outcome::failed;
      result.stop_cause = HH_STOP_CAUSE_NONE;
      result.reason = end_failure;
      m.failed = true;
      m.failure_reason = end_failure;
      m.failure_logged = true;
    }
  }

  void destroy_all() {
    for (auto& sp : m.slots) {
      Slot& slot = *sp;
      if (slot.state == HookState::destroyed) continue;
      slot.services->ended = true;
      const SignalDispositions signals = SignalDispositions::snapshot();
      std::string error;
      {
        InstanceCallScope scope(m, *slot.services, "destroy");
        error = slot.dispatch->destroy();
      }
      signals.restore_and_report(*m.log, slot.services->blame_name, during_call(m, "destroy"));
      slot.state = HookState::destroyed;
      if (!error.empty()) m.log->error("{}: {}", slot.services->blame_name, error);
    }
  }
};

// Checked before a plugin instance is created, so a refused hook is never created at all.
void check_can_add(const Runtime::Impl& m, const std::string& instance_name) {
  if (m.started) throw std::logic_error("add_hook after start()");
  for (const auto& other : m.slots)
    if (other->settings.instance_name == instance_name)
      throw ConfigError("two hooks are named '" + instance_name +
                        "'; instance names must be unique");
}

}  // namespace

void Runtime::Impl::rebuild_step_slots() {
  step_slots.clear();
  for (const auto& sp : slots)
    if (!sp->disabled && (sp->implements[static_cast<size_t>(Callback::before_run)] ||
                          sp->implements[static_cast<size_t>(Callback::after_run)]))
      step_slots.push_back(sp.get());
  step_slots_stale = false;
}

namespace {

void add_slot(Runtime::Impl& m, std::unique_ptr<Slot> slot) {
  slot->services->blame_name = describe_hook(
      slot->settings.instance_name, slot->dispatch->plugin_id(), slot->dispatch->plugin_file());
  for (size_t i = 0; i < kCallbackNames.size(); ++i)
    slot->implements[i] = slot->dispatch->implements(static_cast<Callback>(i));
  init_request(slot->request, &m, slot.get());
  slot->added_index = m.slots.size();
  m.slots.push_back(std::move(slot));
}

}  // namespace

Runtime::Runtime(Session& session, RuntimeOptions options)
    : impl_(std::make_unique<Impl>(session, std::move(options))) {
  impl_->owner_runtime = this;
  // Before any hook is created: create() of a resumed job sees the step it resumes at.
  impl_->read_workload_steps();
  CrashBlame::watch(impl_.get());
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
    Lifecycle{*impl_}.destroy_all();
  } catch (const std::exception& e) {
    impl_->log->error("error while destroying hooks: {}", e.what());
  }
  impl_->watchdog.reset();
  CrashBlame::unwatch(impl_.get());
}

void Runtime::add_hook(std::shared_ptr<const LoadedPlugin> plugin, HookSettings settings,
                       const ResolvedParams& params) {
  Impl& m = *impl_;
  const std::string where =
      describe_hook(settings.instance_name, plugin->metadata().id, plugin->file().string());
  check_can_add(m, settings.instance_name);
  const hh_plugin_entry& entry = plugin->entry();
  auto services = m.make_services(settings, plugin->metadata().id, entry.state_version);
  ResolvedParams::CValues c_params = params.c_values();
  std::vector<hh_param_value>& values = c_params.values;
  hh_create_args args{};
  args.struct_size = HH_CREATE_ARGS_SIZE;
  args.instance_name = settings.instance_name.c_str();
  args.params = values.empty() ? nullptr : values.data();
  args.param_count = static_cast<uint32_t>(values.size());
  args.param_stride = sizeof(hh_param_value);
  hh_hook* hook = nullptr;
  hh_error err;
  hh_error_init(&err);
  hh_status status;
  services->blame_name = where;  // for crash blame while create() runs
  {
    const SignalDispositions signals = SignalDispositions::snapshot();
    InstanceCallScope scope(m, *services, "create");
    try {
      status = entry.create(&services->c, &args, &hook, &err);
    } catch (...) {
      status = HH_ERROR;
      const std::string text = describe_current_exception("create()");
      copy_cut(text, err.message, HH_ERROR_MESSAGE_SIZE);
    }
    signals.restore_and_report(*m.log, where, during_call(m, "create"));
  }
  const std::string message(err.message, ::strnlen(err.message, HH_ERROR_MESSAGE_SIZE));
  auto refuse = [&](const std::string& why) {
    // A hook that exists but cannot be trusted is leaked. So are the services of any refused
    // create(), which may have started a thread before it failed: orphaned, they refuse that
    // thread's calls from then on, and it never reaches this runtime, which may be gone.
    services->ended = true;
    services->orphaned.store(true, std::memory_order_release);
    keep_forever(std::move(services));
    throw ConfigError(where + ": " + why);
  };
  // destroy is read only once struct_size says the plugin's struct has it.
  const uint32_t hook_size = hook ? hook->struct_size : 0;
  const bool has_destroy = hook_size >= HH_HOOK_SIZE_1_0 && hook->destroy;
  if (std::string why = create_refusal(status, message, hook != nullptr, hook_size, has_destroy);
      !why.empty())
    refuse(why);
  auto slot = std::make_unique<Slot>();
  slot->settings = std::move(settings);
  slot->plugin = plugin;
  slot->services = std::move(services);
  std::string extension_problem;
  slot->dispatch = make_inprocess_dispatch(hook, plugin->metadata().id, plugin->file().string(),
                                           &extension_problem);
  slot->direct_hook = hook;
  slot->direct_before_run = hook->before_run;
  slot->direct_after_run = hook->after_run;
  if (!extension_problem.empty()) m.log->warn("{}: {}", where, extension_problem);
  add_slot(m, std::move(slot));
}

void Runtime::add_hook(std::unique_ptr<HookDispatch> hook, HookSettings settings) {
  check_can_add(*impl_, settings.instance_name);
  auto slot = std::make_unique<Slot>();
  slot->services = impl_->make_services(settings, hook->plugin_id(), 1);
  slot->settings = std::move(settings);
  slot->dispatch = std::move(hook);
  add_slot(*impl_, std::move(slot));
}

void Runtime::add_hook(const std::string& plugin_id, uint32_t state_version, HookSettings settings,
                       const DispatchFactory& make) {
  Impl& m = *impl_;
  check_can_add(m, settings.instance_name);
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
  auto slot = std::make_unique<Slot>();
  slot->settings = std::move(settings);
  slot->services = std::move(services);
  slot->dispatch = std::move(dispatch);
  add_slot(m, std::move(slot));
}

bool Runtime::start() {
  Impl& m = *impl_;
  EntryGuard guard(m.in_call, "start()");
  if (m.started) throw std::logic_error("start() called twice");
  m.started = true;
  for (const auto& s : m.slots)
    if (s->settings.call_timeout.count() > 0 && !m.watchdog)
      m.watchdog = std::make_unique<CallWatchdog>(m);
  std::stable_sort(m.slots.begin(), m.slots.end(), [](const auto& a, const auto& b) {
    return a->settings.order < b->settings.order;
  });
  for (const auto& s : m.slots)
    s->direct_step_calls = s->direct_hook && s->settings.call_timeout.count() == 0 &&
                           m.options.time_every_n_steps > 1;
  std::vector<std::string> order;
  for (const auto& s : m.slots)
    order.push_back(s->settings.instance_name + " (order " + std::to_string(s->settings.order) +
                    ")");
  m.log->info("hook order: {}", order.empty() ? "(no hooks)" : join(order, ", "));
  for (const auto& [name, _] : m.restored_states)
    if (std::none_of(m.slots.begin(), m.slots.end(),
                     [&](const auto& s) { return s->settings.instance_name == name; }))
      m.log->warn("the checkpoint holds state for hook '{}', which is not configured; ignoring it",
                  name);
  for (const auto& n : m.session.fetchable()) m.fetchable.insert(n);
  for (const auto& n : m.session.feedable()) m.feedable.insert(n);
  m.live_step = m.session.global_step();
  try {
    m.checkpoint_writer.start();
  } catch (const std::exception& e) {
    m.fail_job(std::string("could not start the checkpoint writer thread: ") + e.what());
  }

  Lifecycle life{m};
  if (!m.failed) life.begin_all();
  if (!m.failed && life.create_session()) life.after_create_session_all();
  m.step_boundary();
  return !m.failed;
}

RunOutput Runtime::run(const std::vector<std::string>& fetches, const TensorMap& feeds) {
  Impl& m = *impl_;
  EntryGuard guard(m.in_call, "run()");
  if (!m.started) throw std::logic_error("run() called before start()");
  if (m.should_stop())
    throw std::logic_error("run() called after the job should stop; check should_stop() first");
  if (fetches != m.checked_fetches) {
    for (const auto& name : fetches)
      if (!m.fetchable.count(name))
        throw std::invalid_argument("the caller asked to fetch '" + name +
                                    "', which the workload does not provide");
    m.checked_fetches = fetches;
  }
  for (const auto& [name, _] : feeds)
    if (!m.feedable.count(name))
      throw std::invalid_argument("the caller asked to feed '" + name +
                                  "', which the workload does not accept");

  Lifecycle life{m};
  RunOutput out;
  for (int attempt = 1;; ++attempt) {
    hh_run_context ctx{};
    ctx.struct_size = HH_RUN_CONTEXT_SIZE;
    ctx.global_step = m.session.global_step();
    ctx.iteration = m.steps_run;
    ctx.stop_requested = m.stop_requested.load(std::memory_order_relaxed) ? 1 : 0;

    // Per-step calls are timed on one step in time_every_n_steps (a countdown: no division).
    m.timed_step = m.untimed_steps_left == 0;
    m.untimed_steps_left =
        m.timed_step ? std::max<uint32_t>(m.options.time_every_n_steps, 1) - 1
                     : m.untimed_steps_left - 1;
    if (!life.run_before(ctx, fetches, feeds)) {
      life.abandon_step();
      m.session.cancel_step();
      m.step_boundary();
      return out;
    }
    StepResult step = [&] {
      try {
        return m.session.run(m.hooks_fetch ? m.step_fetches : fetches,
                             m.hooks_feed ? m.merged_feeds : feeds);
      } catch (const std::exception& e) {
        StepResult failed;
        failed.status = StepStatus::error;
        failed.message = std::string("the workload threw: ") + e.what();
        return failed;
      }
    }();
    m.caller_feeds = nullptr;
    if (m.hooks_feed) m.merged_feeds.clear();
    switch (step.status) {
      case StepStatus::ok: break;
      case StepStatus::end_of_data:
        life.abandon_step();
        m.end_of_data = true;
        m.result.reason = "end of data" + (step.message.empty() ? "" : ": " + step.message);
        m.log->info("{} after {} steps", m.result.reason, m.steps_run);
        m.step_boundary();
        return out;
      case StepStatus::aborted:
      case StepStatus::unavailable:
        life.abandon_step();
        if (!life.recover(attempt, step.message)) {
          m.step_boundary();
          return out;
        }
        continue;
      case StepStatus::error:
        life.abandon_step();
        m.fail_job("the workload failed at global step " + std::to_string(ctx.global_step) + ": " +
                   step.message);
        m.step_boundary();
        return out;
      case StepStatus::cancelled:
        life.abandon_step();
        m.step_boundary();  // the process that called the step off says why
        if (!m.should_stop())
          m.fail_job("the workload called off the step at global step " +
                     std::to_string(ctx.global_step) +
                     (m.options.communicator ? ", but no process of the job failed"
                                             : ", but this job has no other processes") +
                     (step.message.empty() ? "" : ": " + step.message));
        return out;
    }
    ++m.steps_run;
    m.live_step.store(m.session.global_step(), std::memory_order_relaxed);
    life.run_after(ctx, step.values);
    // The step boundary: every hook's after_run has returned.
    m.step_boundary();
    if (m.failed) return out;
    out.ran = true;
    // The caller's values are moved out of the step's, never copied: all at once when the
    // workload returned just what the caller asked for.
    if (!m.hooks_fetch && step.values.size() == fetches.size() &&
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
  const Slot* slot = impl_->running_slot.load(std::memory_order_acquire);
  const int callback = impl_->running_callback.load(std::memory_order_relaxed);
  if (!slot || callback < 0) return {};
  return describe_hook(slot->settings.instance_name, slot->dispatch->plugin_id()) + " in " +
         name_of(static_cast<Callback>(callback)) + " at global step " +
         std::to_string(impl_->running_step.load());
}

bool Runtime::should_stop() const {
  return impl_->should_stop();
}

void Runtime::fail_job(const std::string& reason) {
  impl_->fail_job(reason);
}

void Runtime::request_stop(hh_stop_cause cause, const std::string& reason) {
  impl_->request_stop(cause, reason);
}

JobResult Runtime::close() {
  Impl& m = *impl_;
  if (m.closed) return m.result;
  EntryGuard guard(m.in_call, "close()");
  Lifecycle{m}.deliver_end();
  m.step_boundary();          // a final save asked for in end(), unless the job failed
  m.wait_for_checkpoints();   // every checkpoint is on disk when close() returns
  {
    std::lock_guard lock(m.checkpoint_mutex);
    m.result.checkpoint_failures = m.checkpoint_failures;
    m.result.checkpoint_error = m.checkpoint_error;
  }
  if (m.failed && m.result.outcome != Outcome::failed) {
    // Another process's end() failed under on_error = fail: every process ends alike.
    m.result.outcome = Outcome::failed;
    m.result.stop_cause = HH_STOP_CAUSE_NONE;
    m.result.reason = m.failure_reason;
  }
  m.closed = true;
  try {
    m.event_writers
        .flush_all();  // whatever hooks wrote reaches the disk even if they never flushed
  } catch (const std::exception& e) {
    m.log->error("{}", e.what());
  }
  // One message per failure: a hook failure that failed the job was logged where it happened.
  if (m.result.outcome == Outcome::failed && m.failure_logged)
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
  for (const auto& s : impl_->slots) names.push_back(s->settings.instance_name);
  return names;
}

std::vector<HookReport> Runtime::reports() const {
  std::vector<HookReport> out;
  for (const auto& sp : impl_->slots) {
    HookReport r;
    r.instance_name = sp->settings.instance_name;
    r.plugin_id = sp->dispatch->plugin_id();
    r.plugin_file = sp->dispatch->plugin_file();
    r.disabled = sp->disabled;
    r.failure = sp->failure;
    for (size_t i = 0; i < kCallbackNames.size(); ++i)
      r.callbacks[kCallbackNames[i]] = sp->stats_of(static_cast<Callback>(i));
    out.push_back(std::move(r));
  }
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
  for (const auto& sp : m.slots) {
    HostServices& s = *sp->services;
    {
      // A recovery goes back to the checkpoint's moment: what was stored since is dropped.
      std::lock_guard lock(s.state_mutex);
      s.has_state = false;
      s.state = {};
    }
    m.adopt_restored_state(s);
  }
}

void Runtime::restore_hook_states(const std::map<std::string, std::string>& states) {
  std::map<std::string, SavedHookState> tagged;
  for (const auto& [name, bytes] : states) {
    auto it = std::find_if(impl_->slots.begin(), impl_->slots.end(),
                           [&](const auto& s) { return s->settings.instance_name == name; });
    const uint32_t version = it == impl_->slots.end() ? 1 : (*it)->services->state_version;
    tagged.emplace(name, SavedHookState{"", version, bytes});
  }
  restore_hook_states(tagged);
}

}  // namespace hookhost
