// An observer's lane (HookSettings::observer): the bounded queue of steps the training thread
// fills for it, and a worker thread that makes the observer's before_run and after_run calls
// behind the step. A worker serves one lane, or every observer lane of one isolation group (their
// calls reach one runner one at a time anyway): it takes the oldest queued step of its lanes next,
// so the group's runner gets them in step order. The calls go through the hook's dispatcher, so an
// in-process and a sandboxed observer are called alike (a sandboxed one's step in one message,
// observed_exchange.hpp). What a call returns is kept for the training thread, which applies the
// hook's policies at its next step boundary (StepEngine::settle_observer): the worker itself only
// decides whether it goes on delivering.
// Thread rules: the functions under "training thread" are the training thread's; the worker
// touches the slot's request, fetches and dispatcher only while it runs a call, and the training
// thread touches them only while the lane is idle (the first before_run, restarts, end).
#pragma once

#include <spdlog/logger.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "context/job_state.hpp"
#include "context/running_call.hpp"
#include "runtime/slot.hpp"

namespace hookhost {

class ObservedExchange;

// One step as its observer will see it.
struct ObservedStep {
  hh_run_context before_ctx{};  // as its before_run would have seen it
  hh_run_context after_ctx{};   // stop_requested as it was when the step ended
  int64_t step_after = 0;       // the live global step once the step ran
  // Its before_run already ran on the training thread (the observer's first step), asking `asked`.
  bool before_done = false;
  std::vector<std::string> asked;
  TensorMap values;       // copies of what it fetched at this step
  uint64_t sequence = 0;  // queued order among the lanes of its worker
};

// A call that did not return HH_OK, for the training thread to handle.
struct ObserverOutcome {
  Callback callback;
  CallResult result;
  int64_t step;
};

class ObserverLane;

// The thread that delivers the steps of one or more lanes, and the lock they share.
class ObserverWorker {
 public:
  ObserverWorker() = default;
  ~ObserverWorker();  // joins the thread (every lane has left)
  ObserverWorker(const ObserverWorker&) = delete;
  ObserverWorker& operator=(const ObserverWorker&) = delete;

 private:
  friend class ObserverLane;
  void work();
  // The lane whose next step was queued first, or nullptr (under mutex_).
  ObserverLane* next_lane() const;
  void join(ObserverLane* lane);   // under mutex_; starts the thread with its first lane
  void leave(ObserverLane* lane);  // under mutex_

  std::mutex mutex_;
  std::condition_variable work_ready_;  // the thread waits for a step
  std::condition_variable changed_;     // the training thread waits for room, a drain or a halt
  std::vector<ObserverLane*> lanes_;
  uint64_t next_sequence_ = 0;
  bool waiting_ = false;  // polling or parked
  bool parked_ = false;   // waits until woken
  bool quit_ = false;
  std::thread thread_;
};

class ObserverLane {
 public:
  // `worker`: the worker it shares with the other observers of its isolation group, or nullptr
  // for a worker of its own.
  ObserverLane(Slot& slot, std::shared_ptr<spdlog::logger> log,
               std::shared_ptr<ObserverWorker> worker = nullptr);
  ~ObserverLane();  // shutdown()
  ObserverLane(const ObserverLane&) = delete;
  ObserverLane& operator=(const ObserverLane&) = delete;

  // --- training thread ---
  // Until its before_run has asked for a value (or kLearningSteps steps asked for none), each
  // before_run runs on the training thread, its worker idle: the fetches are learnt exactly,
  // whatever step the job starts or resumes at and whatever cadence the hook keeps itself.
  static constexpr uint32_t kLearningSteps = 100;
  // How often an idle worker looks for steps (it parks after kIdlePollsBeforePark empty looks):
  // from kPollInterval down to kMinPollInterval while steps come faster than it looks, so the
  // training thread never pays a wake-up unless the queue is full. kPollInterval bounds how long
  // a queued step waits for its observer's worker to start on it.
  static constexpr std::chrono::microseconds kPollInterval{1000};
  static constexpr std::chrono::microseconds kMinPollInterval{20};
  static constexpr uint32_t kIdlePollsBeforePark = 64;
  bool request_known() const { return request_known_; }
  // What a before_run on the training thread asked for.
  void learn_request(const std::vector<std::string>& names);
  void fetch_nothing() { request_known_ = true; }  // it has no before_run
  // What it fetches at this step: every name its before_runs asked for so far (a before_run
  // behind the step cannot change this step's fetches). Refreshed here, before the step.
  const std::vector<std::string>& fetches();
  // The same list, as fetches() last returned it: for the step's after_run phase.
  const std::vector<std::string>& step_fetches() const { return fetches_; }
  // Queues `step`. When the queue is full, block waits for room and skip drops the step (false).
  // `settle` runs while waiting whenever the worker holds outcomes back (a lost runner waits for
  // the training thread's restart), so a wait never waits on itself.
  bool push(ObservedStep&& step, const std::function<void()>& settle);
  // Returns once every queued step is delivered (or dropped: the hook is disabled).
  void drain(const std::function<void()>& settle);
  bool has_outcomes() const { return has_outcomes_.load(std::memory_order_acquire); }
  std::vector<ObserverOutcome> take_outcomes();
  // After its lost runner was handled: resume delivering (restarted) or drop every step (disabled).
  bool halted() const;
  void resume();
  void stop_delivering();
  // Leaves the worker once its running call (if any) returns, joining the worker's thread when it
  // was the last lane; what waits is dropped. The counts stay readable.
  void shutdown();

  // --- any thread ---
  uint64_t skipped_steps() const { return skipped_.load(std::memory_order_relaxed); }
  uint64_t unfetched_steps() const { return unfetched_.load(std::memory_order_relaxed); }
  void count_skip() { skipped_.fetch_add(1, std::memory_order_relaxed); }
  // The worker's before_run and after_run calls (their stats, to add to the slot's).
  CallStats stats(Callback callback) const;
  const RunningCall& running() const { return running_; }

 private:
  friend class ObserverWorker;
  void deliver(ObservedStep& step);
  bool deliverable() const { return !queue_.empty() && !halted_ && !stopped_ && !quit_; }
  // One turn of push's and drain's wait (training thread, `lock` holding mutex_): a halted lane's
  // calls are settled without the lock; otherwise the worker is woken and its next change awaited.
  void wait_for_worker(std::unique_lock<std::mutex>& lock, const std::function<void()>& settle);
  // Both calls in one exchange with the hook's runner (a sandboxed hook).
  void deliver_in_one_exchange(ObservedStep& step, ObservedExchange& exchange, bool wants_before);
  // What a before_run returned, with the request it made: false when after_run must not follow.
  bool settle_before_run(CallResult& r, std::vector<std::string>& asked, int64_t global_step);
  // The values `asked` names into views_: false (said) when one is missing or on a device the
  // hook does not take.
  bool pick_values(const ObservedStep& step, const std::vector<std::string>& asked);
  // `live_step`: what hh_host.global_step tells the hook during the call.
  template <typename Fn>
  CallResult call(Callback callback, int64_t step, int64_t live_step, int64_t wall_ns, Fn&& fn);
  void enter_call(Callback callback, int64_t step, int64_t live_step, int64_t wall_ns);
  void switch_call(Callback callback, int64_t live_step);  // before_run returned, after_run runs
  void leave_call();
  void count_call(Callback callback, std::chrono::steady_clock::time_point since);
  // Records an outcome; decides whether the worker goes on (under mutex_).
  void post(Callback callback, CallResult result, int64_t step);

  Slot& slot_;
  std::shared_ptr<spdlog::logger> log_;
  RunningCall running_;  // the worker's call, for the request checks and crash blame
  const HostServices* previous_call_ = nullptr;  // t_current_call around the worker's call

  // Training thread only.
  bool request_known_ = false;
  uint32_t learning_steps_ = 0;
  std::vector<std::string> fetches_;
  uint64_t fetches_version_seen_ = 0;

  std::shared_ptr<ObserverWorker> worker_;
  std::mutex& mutex_;  // the worker's
  // The queue: a ring of `queue` steps allocated once, so queuing a step allocates nothing.
  class StepRing {
   public:
    explicit StepRing(std::size_t capacity) : items_(std::max<std::size_t>(1, capacity)) {}
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    const ObservedStep& front() const { return items_[head_]; }
    void push_back(ObservedStep&& step) {
      items_[(head_ + size_++) % items_.size()] = std::move(step);
    }
    ObservedStep pop_front() {
      ObservedStep step = std::move(items_[head_]);
      head_ = (head_ + 1) % items_.size();
      --size_;
      return step;
    }
    void clear() {
      while (!empty()) pop_front();
    }

   private:
    std::vector<ObservedStep> items_;
    std::size_t head_ = 0;
    std::size_t size_ = 0;
  };
  StepRing queue_;
  bool busy_ = false;  // the worker is delivering a step of this lane
  bool producer_waiting_ = false;
  bool halted_ = false;   // the runner was lost: nothing is delivered until resume()
  bool stopped_ = false;  // the hook gets no more calls
  bool quit_ = false;     // shut down: it has left its worker
  std::vector<ObserverOutcome> outcomes_;
  std::vector<std::string> asked_;  // every name asked for, grown by the worker
  uint64_t asked_version_ = 0;
  std::array<CallStats, 2> stats_{};  // before_run, after_run
  std::atomic<bool> has_outcomes_{false};
  std::atomic<uint64_t> skipped_{0};
  std::atomic<uint64_t> unfetched_{0};
  bool warned_unfetched_ = false;  // worker only
  std::vector<hh_tensor> views_;   // worker only
  // The dispatcher's one-exchange calls (a sandboxed hook), looked up once: the slot's dispatcher
  // is set before its lane and never replaced.
  ObservedExchange* const exchange_;
};

}  // namespace hookhost
