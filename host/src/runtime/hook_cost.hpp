// What one hook's calls cost and how often they were made: per callback, the calls made through
// the engine's call() with their sampled times and the failures handled; and the steps kept from
// it (by its step filter or its skip_until). Direct per-step calls are counted in the slot's
// StepCallState instead, on the step's own cache line; Slot::stats_of adds the two.
// Thread rules: the training thread's (an observer's worker keeps its own, ObserverLane::stats).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

#include "hookhost/host/runtime.hpp"

namespace hookhost {

class HookCost {
 public:
  // A call made and how long it took.
  void count_call(Callback callback, std::chrono::nanoseconds took) {
    CallStats& st = stats_[static_cast<size_t>(callback)];
    ++st.calls;
    st.record(took);
  }
  // A sampled direct call's time (the call itself is counted by StepCallState).
  void record_time(Callback callback, std::chrono::nanoseconds took) {
    stats_[static_cast<size_t>(callback)].record(took);
  }
  void count_failure(Callback callback) { ++stats_[static_cast<size_t>(callback)].failures; }
  const CallStats& stats(Callback callback) const { return stats_[static_cast<size_t>(callback)]; }

  // The step filter was asked about one more step: how many it was asked about before (first_n).
  uint64_t next_filtered_step() { return filtered_steps_seen_++; }
  // A step the hook was not called on (its filter or its skip_until kept it away).
  void count_skipped_step() { ++steps_skipped_; }
  uint64_t skipped_steps() const { return steps_skipped_; }

 private:
  std::array<CallStats, kCallbackNames.size()> stats_{};
  uint64_t filtered_steps_seen_ = 0;
  uint64_t steps_skipped_ = 0;
};

}  // namespace hookhost
