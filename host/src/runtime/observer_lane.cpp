#include "runtime/observer_lane.hpp"

#include <algorithm>
#include <chrono>

#include "context/host_services.hpp"
#include "runtime/observed_exchange.hpp"
#include "runtime/step_engine.hpp"

namespace hookhost {

void LaneDeleter::operator()(ObserverLane* lane) const {
  delete lane;
}

ObserverWorker::~ObserverWorker() {
  {
    std::lock_guard lock(mutex_);
    quit_ = true;
  }
  work_ready_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ObserverWorker::join(ObserverLane* lane) {
  lanes_.push_back(lane);
  if (!thread_.joinable()) thread_ = std::thread([this] { work(); });
}

void ObserverWorker::leave(ObserverLane* lane) {
  lanes_.erase(std::remove(lanes_.begin(), lanes_.end(), lane), lanes_.end());
}

ObserverLane* ObserverWorker::next_lane() const {
  ObserverLane* next = nullptr;
  for (ObserverLane* lane : lanes_)
    if (lane->deliverable() &&
        (!next || lane->queue_.front().sequence < next->queue_.front().sequence))
      next = lane;
  return next;
}

ObserverLane::ObserverLane(Slot& slot, std::shared_ptr<spdlog::logger> log,
                           std::shared_ptr<ObserverWorker> worker)
    : slot_(slot),
      log_(std::move(log)),
      worker_(worker ? std::move(worker) : std::make_shared<ObserverWorker>()),
      mutex_(worker_->mutex_),
      queue_(slot.hook.settings().observer.queue),
      exchange_(dynamic_cast<ObservedExchange*>(&slot.hook.dispatch())) {
  std::lock_guard lock(mutex_);
  worker_->join(this);
}

ObserverLane::~ObserverLane() {
  shutdown();
}

void ObserverLane::shutdown() {
  std::unique_lock lock(mutex_);
  if (quit_) return;
  quit_ = true;
  queue_.clear();
  // The worker may be in this lane's call: the lane leaves once it returns. The worker's thread
  // ends with its last lane (~ObserverWorker).
  while (busy_) worker_->changed_.wait(lock);
  worker_->leave(this);
}

namespace {

// Adds the names of `more` that `into` lacks; true when it grew.
bool add_names(std::vector<std::string>& into, const std::vector<std::string>& more) {
  bool grew = false;
  for (const auto& name : more)
    if (std::find(into.begin(), into.end(), name) == into.end()) {
      into.push_back(name);
      grew = true;
    }
  return grew;
}

}  // namespace

void ObserverLane::learn_request(const std::vector<std::string>& names) {
  std::lock_guard lock(mutex_);  // the worker is idle: the lock orders asked_ with its next step
  if (add_names(asked_, names)) ++asked_version_;
  fetches_ = asked_;
  fetches_version_seen_ = asked_version_;
  if (!names.empty() || ++learning_steps_ >= kLearningSteps) request_known_ = true;
}

const std::vector<std::string>& ObserverLane::fetches() {
  // The worker publishes a grown list under the mutex; an unchanged one costs one lock.
  std::lock_guard lock(mutex_);
  if (asked_version_ != fetches_version_seen_) {
    fetches_ = asked_;
    fetches_version_seen_ = asked_version_;
  }
  return fetches_;
}

bool ObserverLane::push(ObservedStep&& step, const std::function<void()>& settle) {
  std::unique_lock lock(mutex_);
  ObserverWorker& w = *worker_;
  const std::size_t capacity = slot_.hook.settings().observer.queue;
  while (!stopped_ && !quit_ && queue_.size() >= capacity) {
    if (slot_.hook.settings().observer.when_full == ObserverSettings::WhenFull::skip) {
      count_skip();
      return false;
    }
    wait_for_worker(lock, settle);
  }
  if (stopped_ || quit_) return true;  // disabled: its steps go nowhere, as any disabled hook's
  step.sequence = w.next_sequence_++;
  queue_.push_back(std::move(step));
  // A polling worker finds the step at its next look: waking it costs the step a system call
  // (microseconds), paid only when it parked after an idle spell or when the queue is full.
  const bool wake = w.parked_ || (w.waiting_ && queue_.size() >= capacity);
  lock.unlock();
  if (wake) w.work_ready_.notify_one();
  return true;
}

void ObserverLane::drain(const std::function<void()>& settle) {
  std::unique_lock lock(mutex_);
  while (!stopped_ && !quit_ && (busy_ || !queue_.empty())) wait_for_worker(lock, settle);
  if (stopped_) queue_.clear();
}

void ObserverLane::wait_for_worker(std::unique_lock<std::mutex>& lock,
                                   const std::function<void()>& settle) {
  if (halted_) {
    lock.unlock();
    settle();
    lock.lock();
    return;
  }
  ObserverWorker& w = *worker_;
  if (w.waiting_) w.work_ready_.notify_one();  // not a poll interval later
  producer_waiting_ = true;
  w.changed_.wait(lock);
  producer_waiting_ = false;
}

std::vector<ObserverOutcome> ObserverLane::take_outcomes() {
  std::lock_guard lock(mutex_);
  has_outcomes_.store(false, std::memory_order_relaxed);
  return std::exchange(outcomes_, {});
}

bool ObserverLane::halted() const {
  std::lock_guard lock(mutex_);
  return halted_;
}

void ObserverLane::resume() {
  {
    std::lock_guard lock(mutex_);
    halted_ = false;
  }
  worker_->work_ready_.notify_all();
}

void ObserverLane::stop_delivering() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    halted_ = false;
    queue_.clear();
  }
  worker_->work_ready_.notify_all();
  worker_->changed_.notify_all();
}

CallStats ObserverLane::stats(Callback callback) const {
  std::lock_guard lock(mutex_);
  if (callback == Callback::before_run) return stats_[0];
  if (callback == Callback::after_run) return stats_[1];
  return {};
}

void ObserverWorker::work() {
  std::unique_lock lock(mutex_);
  uint32_t idle_polls = 0;
  std::chrono::microseconds poll_interval = ObserverLane::kPollInterval;
  for (;;) {
    // While steps keep coming the worker polls, so the training thread never wakes it; after
    // kIdlePollsBeforePark empty polls it parks until a step or a command wakes it.
    ObserverLane* lane;
    while (!quit_ && !(lane = next_lane())) {
      waiting_ = true;
      const bool any_halted = std::any_of(
          lanes_.begin(), lanes_.end(), [](ObserverLane* l) { return l->halted_ && !l->stopped_; });
      if (idle_polls < ObserverLane::kIdlePollsBeforePark && !lanes_.empty() && !any_halted) {
        work_ready_.wait_for(lock, poll_interval);
        // Looks often enough to find a few steps each time, never a full queue.
        bool filling = false, slow = true, found_any = false;
        for (const ObserverLane* l : lanes_) {
          const std::size_t found = l->queue_.size();
          const std::size_t capacity = l->slot_.hook.settings().observer.queue;
          found_any = found_any || found > 0;
          filling = filling || (capacity > 1 && found * 2 >= capacity);
          slow = slow && found <= 1;
        }
        if (!found_any) ++idle_polls;
        if (filling)
          poll_interval = std::max(ObserverLane::kMinPollInterval, poll_interval / 2);
        else if (slow)
          poll_interval = std::min(ObserverLane::kPollInterval, poll_interval * 2);
      } else {
        parked_ = true;
        work_ready_.wait(lock);
        parked_ = false;
      }
      waiting_ = false;
    }
    if (quit_) return;
    idle_polls = 0;
    ObservedStep step = lane->queue_.pop_front();
    lane->busy_ = true;
    lock.unlock();
    lane->deliver(step);
    step = {};  // its values go here, not under the lock
    lock.lock();
    lane->busy_ = false;
    // A step blocked on a full queue wakes when half of it has drained, not at every step: it
    // then queues that many steps without waiting, so a step faster than the observer's calls
    // pays one wake-up per half queue instead of one per step.
    if (lane->quit_ || (lane->producer_waiting_ &&
                        lane->queue_.size() <= lane->slot_.hook.settings().observer.queue / 2))
      changed_.notify_all();
  }
}

void ObserverLane::enter_call(Callback callback, int64_t step, int64_t live_step, int64_t wall_ns) {
  previous_call_ = t_current_call;
  t_current_call = &slot_.hook.services();
  t_observed_step = live_step;
  t_observed_wall_ns = wall_ns;
  running_.set_callback(callback);
  running_.set_step(step);
  running_.enter(&slot_.hook.services());
  t_observer_call = &running_;
}

void ObserverLane::switch_call(Callback callback, int64_t live_step) {
  t_observed_step = live_step;
  running_.set_callback(callback);
}

void ObserverLane::leave_call() {
  t_observer_call = nullptr;
  running_.leave();
  t_current_call = previous_call_;
  t_observed_step = kNoObservedStep;
  t_observed_wall_ns = 0;
}

void ObserverLane::count_call(Callback callback, std::chrono::steady_clock::time_point since) {
  const auto dt = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::steady_clock::now() - since);
  std::lock_guard lock(mutex_);
  CallStats& st = stats_[callback == Callback::before_run ? 0 : 1];
  ++st.calls;  // failures are counted where they are handled, on the training thread
  st.record(dt);
}

template <typename Fn>
CallResult ObserverLane::call(Callback callback, int64_t step, int64_t live_step, int64_t wall_ns,
                              Fn&& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  enter_call(callback, step, live_step, wall_ns);
  CallResult r = fn();
  leave_call();
  count_call(callback, t0);
  return r;
}

void ObserverLane::post(Callback callback, CallResult result, int64_t step) {
  std::lock_guard lock(mutex_);
  const bool failed = !result.ok();
  if (failed && result.runner_lost) {
    halted_ = true;  // the training thread restarts it (or not) at its next boundary
  } else if (failed && (slot_.hook.settings().on_error != FailurePolicy::keep_going ||
                        result.status == HH_ERROR_FATAL)) {
    stopped_ = true;  // its policy disables it: nothing queued behind this call is delivered
    queue_.clear();
  }
  outcomes_.push_back({callback, std::move(result), step});
  has_outcomes_.store(true, std::memory_order_release);
  if (producer_waiting_) worker_->changed_.notify_all();
}

void ObserverLane::deliver(ObservedStep& step) {
  const int64_t global_step = step.before_ctx.global_step;
  const bool wants_before = slot_.calls.implements(Callback::before_run);
  const bool wants_after = slot_.calls.implements(Callback::after_run);
  // Queued before the hook said it needs no call before a later step (hh.steps/1 skip_until):
  // dropped here, as the training thread drops the steps after it.
  if (!step.before_done &&
      slot_.hook.services().skip_until.load(std::memory_order_relaxed) > global_step)
    return;
  if (wants_after && exchange_) return deliver_in_one_exchange(step, *exchange_, wants_before);
  std::vector<std::string> asked;
  if (step.before_done) {
    asked = std::move(step.asked);
  } else if (wants_before) {
    slot_.request.restart_for_call();
    CallResult r =
        call(Callback::before_run, global_step, global_step, step.before_ctx.wall_time_ns,
             [&] { return slot_.hook.dispatch().before_run(step.before_ctx, slot_.request.c()); });
    if (!settle_before_run(r, asked, global_step)) return;
  }
  if (!wants_after || !pick_values(step, asked)) return;
  hh_run_values values{};
  values.struct_size = HH_RUN_VALUES_SIZE;
  values.tensor_stride = sizeof(hh_tensor);
  values.tensors = views_.empty() ? nullptr : views_.data();
  values.count = static_cast<uint32_t>(views_.size());
  CallResult r =
      call(Callback::after_run, global_step, step.step_after, step.after_ctx.wall_time_ns,
           [&] { return slot_.hook.dispatch().after_run(step.after_ctx, values); });
  if (!r.ok() || r.status == HH_STOP_REQUESTED)
    post(Callback::after_run, std::move(r), global_step);
}

bool ObserverLane::settle_before_run(CallResult& r, std::vector<std::string>& asked,
                                     int64_t global_step) {
  // The host's reason for a refused fetch or feed is more precise than the plugin's.
  if (!slot_.request.refusal().empty() && !r.runner_lost)
    r = CallResult{HH_ERROR, 0, slot_.request.refusal()};
  slot_.request.clear_refusal();
  slot_.calls.clear_request_touched();
  asked = slot_.request.take_fetches();
  if (!r.ok()) {
    post(Callback::before_run, std::move(r), global_step);
    return false;  // a failed before_run: no after_run for this step, as on the step path
  }
  if (r.status == HH_STOP_REQUESTED) post(Callback::before_run, std::move(r), global_step);
  std::lock_guard lock(mutex_);
  if (add_names(asked_, asked)) ++asked_version_;
  return true;
}

bool ObserverLane::pick_values(const ObservedStep& step, const std::vector<std::string>& asked) {
  const int64_t global_step = step.before_ctx.global_step;
  views_.clear();
  std::vector<std::string> missing;
  for (const auto& name : asked) {
    auto it = step.values.find(name);
    if (it == step.values.end()) {
      missing.push_back(name);
      continue;
    }
    const Tensor* value = &it->second;
    const hh_device device = value->device();
    if (device.type != HH_DEVICE_CPU && !slot_.hook.dispatch().accepts_device(device)) {
      if (!value->host_copy()) {
        post(Callback::after_run,
             CallResult{HH_ERROR, 0,
                        undeclared_device_refusal(name, device,
                                                  slot_.hook.dispatch().device_limit(device))},
             global_step);
        return false;
      }
      value = value->host_copy();
    }
    views_.push_back(value->view(it->first.c_str()));
  }
  if (missing.empty()) return true;
  // A name it never asked for before was not fetched at this step, and an after_run without a
  // value it asked for would break the hook's contract. It is fetched from its next step on.
  unfetched_.fetch_add(1, std::memory_order_relaxed);
  if (!warned_unfetched_) {
    warned_unfetched_ = true;
    log_->warn(
        "observer '{}' asked for '{}' in its before_run of global step {}, which it had not "
        "asked for before: a name an observer asks for is fetched from its next step on, so "
        "its after_run of global step {} was not called (later such steps are counted in its "
        "report)",
        slot_.hook.name(), missing.front(), global_step, global_step);
  }
  return false;
}

void ObserverLane::deliver_in_one_exchange(ObservedStep& step, ObservedExchange& exchange,
                                           bool wants_before) {
  const int64_t global_step = step.before_ctx.global_step;
  const bool call_before = wants_before && !step.before_done;
  // Every value of the step goes along (the runner picks those before_run asks for); one on a
  // device the hook does not take goes as its host copy, or not at all: after_run is then not
  // called, and pick_values says why.
  views_.clear();
  for (const auto& [name, value] : step.values)
    if (value.device().type == HH_DEVICE_CPU ||
        slot_.hook.dispatch().accepts_device(value.device()))
      views_.push_back(value.view(name.c_str()));
    else if (value.host_copy())
      views_.push_back(value.host_copy()->view(name.c_str()));
  ObservedCalls calls;
  calls.before = call_before ? &step.before_ctx : nullptr;
  calls.asked = &step.asked;
  calls.after = step.after_ctx;
  calls.values.struct_size = HH_RUN_VALUES_SIZE;
  calls.values.tensor_stride = sizeof(hh_tensor);
  calls.values.tensors = views_.empty() ? nullptr : views_.data();
  calls.values.count = static_cast<uint32_t>(views_.size());
  calls.request = &slot_.request.c();
  if (call_before) slot_.request.restart_for_call();
  const Callback first = call_before ? Callback::before_run : Callback::after_run;
  auto t0 = std::chrono::steady_clock::now();
  enter_call(first, global_step, call_before ? global_step : step.step_after,
             step.before_ctx.wall_time_ns);
  calls.before_returned = [&](const CallResult&) {
    count_call(Callback::before_run, t0);
    t0 = std::chrono::steady_clock::now();
    switch_call(Callback::after_run, step.step_after);
  };
  ObservedResults results = exchange.observe_step(calls);
  leave_call();
  if (results.after_called) count_call(Callback::after_run, t0);
  std::vector<std::string> asked;
  if (results.before_called) {
    if (!results.before.ok()) results.after_called = false;  // a forged after_run is not heard
    if (!settle_before_run(results.before, asked, global_step)) return;
  } else {
    asked = std::move(step.asked);
  }
  if (results.after_called && results.after.runner_lost) {
    post(Callback::after_run, std::move(results.after), global_step);
    return;
  }
  // The runner did not call after_run when a value is missing: the same check says why here.
  if (!pick_values(step, asked) || !results.after_called) return;
  if (!results.after.ok() || results.after.status == HH_STOP_REQUESTED)
    post(Callback::after_run, std::move(results.after), global_step);
}

}  // namespace hookhost
