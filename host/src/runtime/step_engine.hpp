// The hooks and every call into them: the slots in order, the lifecycle phases (begin, session,
// before_run / after_run around each step, end, destroy), the per-step slot list, the merging of
// the hooks' fetches and feeds into the step's, the failure policies, and the running-call record
// that crash blame, the watchdog and the [hook-thread] checks read.
// Every plugin call goes through call() (per-step calls through step_call(), which is call() with
// the direct-call fast path inside it), so timing, the running call and t_current_call are set in
// one place.
// Thread rules: the training thread only; what other threads may read is in RunningCall and
// JobState, which this engine writes.
#pragma once

#include <spdlog/logger.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "context/job_state.hpp"
#include "context/running_call.hpp"
#include "hookhost/host/hook_state.hpp"
#include "runtime/slot.hpp"

namespace hookhost {

class CallWatchdog;
class ObserverWorker;

// "a, b, c", or "(none)".
std::string join_names(const std::vector<std::string>& items);

// Why an after_run is refused: the fetched value `name` lives on `device` (not the CPU), and the
// hook does not declare that it takes device values, or its tier takes none (`limit`, its
// HookDispatch::device_limit, when not empty).
std::string undeclared_device_refusal(const std::string& name, hh_device device,
                                      const std::string& limit = {});

// The job's failure when the workload's step left out a tensor a hook fetched.
std::string missing_fetch_failure(const std::string& name);

// "in begin at global step 12", for a signal handler a call replaced.
std::string during_call(const JobState& job, const char* callback);

// An instance's create() or destroy(), which run outside any slot's lifecycle call: recorded so
// crash blame names the hook, and the [hook-thread] checks see the instance as the caller.
class InstanceCallScope {
 public:
  InstanceCallScope(RunningCall& running, const JobState& job, const HostServices& services,
                    const char* call);
  ~InstanceCallScope();
  InstanceCallScope(const InstanceCallScope&) = delete;
  InstanceCallScope& operator=(const InstanceCallScope&) = delete;

 private:
  RunningCall& running_;
  const HostServices* previous_;
};

class StepEngine {
 public:
  StepEngine(JobState& job, RunningCall& running, std::shared_ptr<spdlog::logger> log,
             uint32_t time_every_n_steps);
  ~StepEngine();
  StepEngine(const StepEngine&) = delete;
  StepEngine& operator=(const StepEngine&) = delete;

  // Told when a hook is disabled or restarted, for the run record (Runtime::Impl::emit).
  using EventSink = std::function<void(RunEvent::Kind, int64_t global_step, const std::string& hook,
                                       const std::string& text)>;
  void set_event_sink(EventSink sink) { event_sink_ = std::move(sink); }

  // --- composition, before start() ---
  // Throws ConfigError when a hook of that name exists.
  void check_unique(const std::string& instance_name) const;
  void add(std::unique_ptr<Slot> slot);
  // Orders the hooks, picks the direct per-step calls, starts the watchdog when a hook has a call
  // timeout, and learns which values the workload gives and takes.
  void start(const std::vector<std::string>& fetchable, const std::vector<std::string>& feedable);
  const std::vector<std::unique_ptr<Slot>>& slots() const { return slots_; }
  // Calls `read` with each slot, in order, while no change can add, reorder or detach one (under
  // the slot lock): for a snapshot taken from another thread. [thread-safe]
  template <typename Fn>
  void read_slots(Fn&& read) const {
    std::lock_guard lock(slots_mutex_);
    for (const auto& sp : slots_) read(static_cast<const Slot&>(*sp));
  }
  bool started() const { return started_; }

  // --- live changes, at a step boundary after start() (step_engine.cpp; the Runtime posts and
  // runs them in live_changes.cpp) ---
  // The slot added last joins the running job: placed by its order among the others, then begin
  // and after_create_session (session `creation`, the live step). A call that fails it is handled
  // by its policy, as at start: it is disabled, or the job stops or fails.
  void attach_added(int creation);
  // Ends one hook (end() with outcome detached, reason "detached: REASON"; stopped by the host for
  // a plugin built before ABI 1.6; failed for a disabled hook; none when its runner was killed to
  // detach it, or was lost and cannot be restarted for end as at the job's end) and
  // destroys it; its slot stays for the job's report, marked detached, and its name may be used
  // again. A call it is in has returned: changes run at the step boundary. `message`: what the
  // hook was told, or, when false (no live hook has the name), why.
  // `final_state`, when given: the state the hook held after its end (unchanged when it had none).
  bool detach(const std::string& instance_name, const std::string& reason, std::string* message,
              std::optional<SavedHookState>* final_state = nullptr);
  // From another thread, for a detach a hook's call holds up: when hook `instance_name` is in a
  // call now (on the training thread, or its observer worker) and its tier can end that call at
  // once (dispatch->interrupt: a runner of its own), ends it, `why` naming the cause in the call's
  // message. That failure disables the hook with no policy applied: no restart, no job failure.
  // [thread-safe]
  enum class Interrupt { done, not_in_call, cannot, no_such_hook };
  Interrupt interrupt(const std::string& instance_name, const std::string& why);
  bool can_fetch(std::string_view name) const { return fetchable_.count(name) != 0; }
  bool can_feed(std::string_view name) const { return feedable_.count(name) != 0; }

  // --- phases ---
  void begin_all();
  void after_create_session_all(int creation);
  // before_run of every hook; false when the job failed in it. Inline, as after_step: a step with
  // no per-step hook pays a few stores and a test, not a call.
  bool before_step(const hh_run_context& ctx, const std::vector<std::string>& caller_fetches,
                   const TensorMap& caller_feeds) {
    hooks_fetch_ = false;
    hooks_feed_ = false;
    caller_feeds_ = &caller_feeds;
    if (step_slots_.empty() && !step_slots_stale_) return true;
    // Per-step calls are timed on one step in time_every_n_steps (a countdown: no division).
    timed_step_ = untimed_steps_left_ == 0;
    untimed_steps_left_ = timed_step_ ? time_every_n_steps_ - 1 : untimed_steps_left_ - 1;
    return timed_step_ ? before_calls_timed(ctx, caller_fetches)
                       : before_calls<false>(ctx, caller_fetches);
  }
  // What the session runs: the caller's lists, or the merged ones once a hook added to them.
  const std::vector<std::string>& step_fetches(const std::vector<std::string>& caller) const {
    return hooks_fetch_ ? step_fetches_ : caller;
  }
  const TensorMap& step_feeds(const TensorMap& caller) const {
    return hooks_feed_ ? merged_feeds_ : caller;
  }
  bool hooks_fetched() const { return hooks_fetch_; }
  // The session returned: the step's feeds are no longer needed.
  void session_ran() {
    caller_feeds_ = nullptr;
    if (hooks_feed_) merged_feeds_.clear();
  }
  void after_step(const hh_run_context& ctx, const TensorMap& values) {
    // The boundary where what observers' calls returned since the last one takes effect.
    if (!observer_slots_.empty()) [[unlikely]]
      settle_observers();
    if (step_slots_.empty()) return;
    if (timed_step_)
      after_calls_timed(ctx, values);
    else
      after_calls<false>(ctx, values);
  }
  // Drops what the hooks asked for in an attempt that did not reach after_run.
  void abandon_step();
  // observers.cpp: returns once every observer has been called for every step queued to it,
  // and applies what those calls returned. Before a checkpoint, a new session and end.
  void drain_observers();
  // Observers' steps not delivered, for the job's summary.
  // end() of every hook that began, with the job's outcome in `result` (filled here).
  void deliver_end(JobResult& result);
  void destroy_all();
  // Ends the call watchdog's thread (before the hooks' libraries may go).
  void stop_watching();

  // --- for the step requests (step_request.cpp) ---
  const RunningCall& running() const { return running_; }
  const std::set<std::string, std::less<>>& fetchable() const { return fetchable_; }
  const std::set<std::string, std::less<>>& feedable() const { return feedable_; }
  // Who fed `name` this step: "the caller", a hook, or "" when nobody did yet.
  std::string feeder_of(const std::string& name) const;

 private:
  // Per-step calls are timed on one step in time_every_n_steps (a countdown: no division).
  struct StepTimer;
  struct PhaseCallScope;

  template <typename Fn>
  CallResult call(Slot& slot, Callback callback, Fn&& fn);
  // step_phases.hpp: the per-step phases, compiled where before_step and after_step are called;
  // the sampled (timed) steps and the calls through a dispatcher go out of line.
  template <bool kTimed, typename DirectFn>
  bool step_call(Slot& slot, Callback cb, StepTimer& timer, DirectFn&& direct,
                 const hh_run_context& ctx, const hh_run_values* values,
                 std::optional<CallResult>& result);
  CallResult call_through_dispatch(Slot& slot, Callback cb, const hh_run_context& ctx,
                                   const hh_run_values* values);
  template <bool kTimed>
  bool before_calls(const hh_run_context& ctx, const std::vector<std::string>& caller_fetches);
  bool before_calls_timed(const hh_run_context& ctx,
                          const std::vector<std::string>& caller_fetches);
  template <bool kTimed>
  [[gnu::always_inline]] void after_calls(const hh_run_context& ctx, const TensorMap& values);
  void after_calls_timed(const hh_run_context& ctx, const TensorMap& values);
  void merge_request(Slot& slot, const std::vector<std::string>& caller_fetches);
  void merge_fetches(const std::vector<std::string>& names,
                     const std::vector<std::string>& caller_fetches);
  // observers.cpp: starts each observer's worker; queues a step to an observer (after its
  // values are copied); applies what an observer's calls returned (its policies, a restart).
  void start_observers();
  void start_observer(Slot& slot, std::map<const void*, std::shared_ptr<ObserverWorker>>& shared);
  void destroy_one(Slot& slot);
  // Stable by order (ties keep the order added), at start() and when a hook is attached.
  void order_slots();
  // The call watchdog when the slot has a call timeout, and whether its per-step calls are direct.
  void prepare_calls(Slot& slot);
  void observe_step(Slot& slot, const hh_run_context& ctx, const TensorMap& values);
  void settle_observers();
  void settle_observer(Slot& slot);
  // An observer whose fetches are not known yet: its before_run runs here, on the training thread,
  // once its worker is idle. False when the hook was disabled meanwhile.
  bool first_observed_before_run(Slot& slot);
  std::string device_refusal(Slot& slot, const std::string& name, const Tensor& value);
  bool gather_views(Slot& slot, const TensorMap& values, std::string& refusal);

  // failure_policy.cpp: what a status does (the table in status.h); `step` is the step the call
  // concerns.
  void handle_result(Slot& slot, Callback cb, const CallResult& r, int64_t step);
  void handle_lost_runner(Slot& slot, Callback cb, const CallResult& r, int64_t step);
  std::string describe(const Slot& slot, Callback cb, int64_t step) const;

  // A slot gets no more calls but end(); the step's slot list is rebuilt before the next step.
  void disable(Slot& slot) {
    slot.calls.disable();
    step_slots_stale_ = true;
    if (event_sink_)
      event_sink_(RunEvent::Kind::disable, job_.global_step(), slot.hook.name(),
                  slot.health.failure());
  }
  void rebuild_step_slots();
  // A lost runner restarted to deliver end() while max_restarts allows (step_engine.cpp): "" when
  // it runs again, else why the hook gets no end.
  std::string restart_for_end(Slot& slot);

  JobState& job_;
  RunningCall& running_;
  std::shared_ptr<spdlog::logger> log_;
  EventSink event_sink_;
  const uint32_t time_every_n_steps_;
  std::vector<std::unique_ptr<Slot>> slots_;  // in resolved order after start()
  // Held where slots_ changes shape (add, order, observer start, detached) and by the readers on
  // other threads: interrupt() and read_slots() (Runtime::reports()).
  mutable std::mutex slots_mutex_;
  std::set<std::string, std::less<>> fetchable_;
  std::set<std::string, std::less<>> feedable_;
  std::unique_ptr<CallWatchdog> watchdog_;  // only when a hook has a call timeout
  bool started_ = false;

  // The slots a step calls: active, implementing before_run or after_run, in order. Rebuilt after
  // a hook is disabled, so a hook with neither callback costs nothing per step.
  std::vector<Slot*> step_slots_;
  bool step_slots_stale_ = true;
  std::vector<Slot*> observer_slots_;  // every slot with a worker, disabled or not
  hh_error call_error_{};    // reused by every direct call (reset_error: not the message buffer)
  bool timed_step_ = false;  // this step's per-step calls are timed
  uint32_t untimed_steps_left_ = 0;  // before the next timed step
  std::vector<hh_tensor> views_buffer_;
  // This step's fetches and feeds once a hook added some (the caller's are used as they are
  // otherwise), and who gave each hook feed.
  bool hooks_fetch_ = false;
  bool hooks_feed_ = false;
  const TensorMap* caller_feeds_ = nullptr;
  std::vector<std::string> step_fetches_;
  TensorMap merged_feeds_;
  std::map<std::string, std::string, std::less<>> feed_owner_;
};

}  // namespace hookhost

#include "runtime/step_phases.hpp"  // the per-step phases, inline
