// TensorFlow's SecondOrStepTimer for hooks that act every N steps or every N seconds. A plain
// value without locks: use it from the hook's callbacks.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>

namespace hookhost {

class StepTimer {
 public:
  using clock = std::chrono::steady_clock;

  // A non-positive interval gives a timer that never triggers, like never().
  static StepTimer every_steps(int64_t steps) { return StepTimer(steps, 0.0); }
  static StepTimer every_secs(double secs) { return StepTimer(0, secs); }
  static StepTimer never() { return StepTimer(0, 0.0); }

  // Always false for a timer that never triggers. Otherwise: true before the first trigger; false
  // for the step of the last trigger; else whether the interval (steps or seconds) has passed.
  bool should_trigger(int64_t step) const {
    if (never_) return false;
    if (!last_step_) return true;
    if (step == *last_step_) return false;
    // Compared as a distance: last + every could overflow for a huge interval.
    if (every_steps_ > 0)
      return step > *last_step_ &&
             static_cast<uint64_t>(step) - static_cast<uint64_t>(*last_step_) >=
                 static_cast<uint64_t>(every_steps_);
    return std::chrono::duration<double>(clock::now() - last_time_).count() >= every_secs_;
  }

  // Records a trigger at `step`; returns (seconds, steps) since the previous one (or since the
  // restore), or nullopt on the first trigger.
  std::optional<std::pair<double, int64_t>> update(int64_t step) {
    const auto now = clock::now();
    std::optional<std::pair<double, int64_t>> elapsed;
    if (last_step_)
      elapsed = std::make_pair(std::chrono::duration<double>(now - last_time_).count(),
                               step - base_step_);
    last_step_ = step;
    base_step_ = step;
    last_time_ = now;
    return elapsed;
  }

  // Continues a schedule saved before a restart: the last trigger was at `last_triggered`, and
  // the job now stands at `current_step` (time is measured from now, steps from current_step), so
  // a resumed job triggers at the same steps as an uninterrupted one.
  void restore(int64_t last_triggered, int64_t current_step) {
    last_step_ = last_triggered;
    base_step_ = current_step;
    last_time_ = clock::now();
  }

  std::optional<int64_t> last_triggered_step() const { return last_step_; }
  bool is_never() const { return never_; }
  // The first step at which a step timer triggers again (the last trigger plus its interval);
  // nothing for a time timer, one that never triggers, or one that has not triggered yet.
  std::optional<int64_t> next_trigger_step() const {
    if (never_ || every_steps_ <= 0 || !last_step_) return std::nullopt;
    if (*last_step_ > INT64_MAX - every_steps_) return INT64_MAX;
    return *last_step_ + every_steps_;
  }
  // Forgets the last trigger: should_trigger is true again, the next update returns nullopt.
  void reset() { last_step_.reset(); }

 private:
  StepTimer(int64_t steps, double secs)
      : every_steps_(steps), every_secs_(secs), never_(steps <= 0 && secs <= 0) {}
  int64_t every_steps_;
  double every_secs_;
  bool never_;
  std::optional<int64_t> last_step_;
  int64_t base_step_ = 0;  // where the elapsed steps of the next trigger count from
  clock::time_point last_time_{};
};

}  // namespace hookhost
