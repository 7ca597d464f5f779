#include "runtime/observer_lane.hpp"

#include <algorithm>
#include <chrono>

#include "context/host_services.hpp"
#include "runtime/step_engine.hpp"

namespace hookhost {

void LaneDeleter::operator()(ObserverLane* lane) const {
  delete lane;
}

ObserverLane::ObserverLane(Slot& slot, std::shared_ptr<spdlog::logger> log)
    : slot_(slot), log_(std::move(log)), queue_(slot.settings.observer.queue) {
  slot_.worker_running = &running_;
  worker_ = std::thread([this] { work(); });
}

ObserverLane::~ObserverLane() {
  shutdown();
}

void ObserverLane::shutdown() {
  {
    std::lock_guard lock(mutex_);
    if (quit_) return;
    quit_ = true;
  }
  work_ready_.notify_all();
  if (worker_.joinable()) worker_.join();
  std::lock_guard lock(mutex_);
  queue_.clear();
  busy_ = false;
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
  const std::size_t capacity = slot_.settings.observer.queue;
  while (!stopped_ && !quit_ && queue_.size() >= capacity) {
    if (slot_.settings.observer.when_full == ObserverSettings::WhenFull::skip) {
      count_skip();
      return false;
    }
    if (halted_) {
      lock.unlock();
      settle();
      lock.lock();
      continue;
    }
    if (worker_waiting_) work_ready_.notify_one();
    producer_waiting_ = true;
    changed_.wait(lock);
    producer_waiting_ = false;
  }
  if (stopped_ || quit_) return true;  // disabled: its steps go nowhere, as any disabled hook's
  queue_.push_back(std::move(step));
  // A polling worker finds the step at its next look: waking it costs the step a system call
  // (microseconds), paid only when it parked after an idle spell or when the queue is full.
  const bool wake = worker_parked_ || (worker_waiting_ && queue_.size() >= capacity);
  lock.unlock();
  if (wake) work_ready_.notify_one();
  return true;
}

void ObserverLane::drain(const std::function<void()>& settle) {
  std::unique_lock lock(mutex_);
  while (!stopped_ && !quit_ && (busy_ || !queue_.empty())) {
    if (halted_) {
      lock.unlock();
      settle();
      lock.lock();
      continue;
    }
    if (worker_waiting_) work_ready_.notify_one();  // not a poll interval later
    producer_waiting_ = true;
    changed_.wait(lock);
    producer_waiting_ = false;
  }
  if (stopped_) queue_.clear();
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
  work_ready_.notify_all();
}

void ObserverLane::stop_delivering() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    halted_ = false;
    queue_.clear();
  }
  work_ready_.notify_all();
  changed_.notify_all();
}

CallStats ObserverLane::stats(Callback callback) const {
  std::lock_guard lock(mutex_);
  if (callback == Callback::before_run) return stats_[0];
  if (callback == Callback::after_run) return stats_[1];
  return {};
}

void ObserverLane::work() {
  std::unique_lock lock(mutex_);
  uint32_t idle_polls = 0;
  std::chrono::microseconds poll_interval = kPollInterval;
  for (;;) {
    // While steps keep coming the worker polls, so the training thread never wakes it; after
    // kIdlePollsBeforePark empty polls it parks until a step or a command wakes it.
    while (!quit_ && (queue_.empty() || halted_ || stopped_)) {
      worker_waiting_ = true;
      if (idle_polls < kIdlePollsBeforePark && !halted_ && !stopped_) {
        work_ready_.wait_for(lock, poll_interval);
        // Looks often enough to find a few steps each time, never a full queue.
        const std::size_t found = queue_.size();
        const std::size_t capacity = slot_.settings.observer.queue;
        if (found == 0) ++idle_polls;
        if (capacity > 1 && found * 2 >= capacity)
          poll_interval = std::max(kMinPollInterval, poll_interval / 2);
        else if (found <= 1)
          poll_interval = std::min(kPollInterval, poll_interval * 2);
      } else {
        worker_parked_ = true;
        work_ready_.wait(lock);
        worker_parked_ = false;
      }
      worker_waiting_ = false;
    }
    if (quit_) return;
    idle_polls = 0;
    ObservedStep step = queue_.pop_front();
    busy_ = true;
    lock.unlock();
    deliver(step);
    step = {};  // its values go here, not under the lock
    lock.lock();
    busy_ = false;
    // A step blocked on a full queue wakes when half of it has drained, not at every step: it
    // then queues that many steps without waiting, so a step faster than the observer's calls
    // pays one wake-up per half queue instead of one per step.
    if (producer_waiting_ && queue_.size() <= slot_.settings.observer.queue / 2)
      changed_.notify_one();
  }
}

template <typename Fn>
CallResult ObserverLane::call(Callback callback, int64_t step, int64_t live_step, int64_t wall_ns,
                              Fn&& fn) {
  const HostServices* previous = t_current_call;
  t_current_call = slot_.services.get();
  t_observed_step = live_step;
  t_observed_wall_ns = wall_ns;
  running_.set_callback(callback);
  running_.set_step(step);
  const auto t0 = std::chrono::steady_clock::now();
  running_.enter(slot_.services.get());
  CallResult r = fn();
  running_.leave();
  const auto dt =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
  t_current_call = previous;
  t_observed_step = kNoObservedStep;
  t_observed_wall_ns = 0;
  std::lock_guard lock(mutex_);
  CallStats& st = stats_[callback == Callback::before_run ? 0 : 1];
  ++st.calls;  // failures are counted where they are handled, on the training thread
  ++st.timed_calls;
  st.total += dt;
  st.max = std::max(st.max, dt);
  return r;
}

void ObserverLane::post(Callback callback, CallResult result, int64_t step) {
  std::lock_guard lock(mutex_);
  const bool failed = !result.ok();
  if (failed && result.runner_lost) {
    halted_ = true;  // the training thread restarts it (or not) at its next boundary
  } else if (failed && (slot_.settings.on_error != FailurePolicy::keep_going ||
                        result.status == HH_ERROR_FATAL)) {
    stopped_ = true;  // its policy disables it: nothing queued behind this call is delivered
    queue_.clear();
  }
  outcomes_.push_back({callback, std::move(result), step});
  has_outcomes_.store(true, std::memory_order_release);
  if (producer_waiting_) changed_.notify_one();
}

void ObserverLane::deliver(ObservedStep& step) {
  const int64_t global_step = step.before_ctx.global_step;
  const bool wants_before = slot_.implements[static_cast<size_t>(Callback::before_run)];
  const bool wants_after = slot_.implements[static_cast<size_t>(Callback::after_run)];
  std::vector<std::string> asked;
  if (step.before_done) {
    asked = std::move(step.asked);
  } else if (wants_before) {
    slot_.fetches.clear();
    slot_.request_error.clear();
    CallResult r =
        call(Callback::before_run, global_step, global_step, step.before_ctx.wall_time_ns,
             [&] { return slot_.dispatch->before_run(step.before_ctx, slot_.request.c); });
    // The host's reason for a refused fetch or feed is more precise than the plugin's.
    if (!slot_.request_error.empty() && !r.runner_lost)
      r = CallResult{HH_ERROR, 0, slot_.request_error};
    slot_.request_error.clear();
    slot_.request_touched = false;
    asked = std::move(slot_.fetches);
    slot_.fetches.clear();
    if (!r.ok()) {
      post(Callback::before_run, std::move(r), global_step);
      return;  // a failed before_run: no after_run for this step, as on the step path
    }
    if (r.status == HH_STOP_REQUESTED) post(Callback::before_run, std::move(r), global_step);
    std::lock_guard lock(mutex_);
    if (add_names(asked_, asked)) ++asked_version_;
  }
  if (!wants_after) return;
  views_.clear();
  std::vector<std::string> missing;
  for (const auto& name : asked) {
    auto it = step.values.find(name);
    if (it == step.values.end()) {
      missing.push_back(name);
      continue;
    }
    const hh_device device = it->second.device();
    if (device.type != HH_DEVICE_CPU && !slot_.dispatch->accepts_device(device)) {
      post(Callback::after_run, CallResult{HH_ERROR, 0, undeclared_device_refusal(name, device)},
           global_step);
      return;
    }
    views_.push_back(it->second.view(it->first.c_str()));
  }
  if (!missing.empty()) {
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
          slot_.settings.instance_name, missing.front(), global_step, global_step);
    }
    return;
  }
  hh_run_values values{};
  values.struct_size = HH_RUN_VALUES_SIZE;
  values.tensor_stride = sizeof(hh_tensor);
  values.tensors = views_.empty() ? nullptr : views_.data();
  values.count = static_cast<uint32_t>(views_.size());
  CallResult r =
      call(Callback::after_run, global_step, step.step_after, step.after_ctx.wall_time_ns,
           [&] { return slot_.dispatch->after_run(step.after_ctx, values); });
  if (!r.ok() || r.status == HH_STOP_REQUESTED)
    post(Callback::after_run, std::move(r), global_step);
}

}  // namespace hookhost
