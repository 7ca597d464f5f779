// What went wrong with one hook: the first failure (its words, for the report and the end() a
// disabled hook is given), whether its process (another isolation tier) is lost, and how often it
// was restarted (on_crash = restart). Whether it still gets calls is StepCallState::disabled.
// Thread rules: the training thread's (an observer's failures reach it through its lane), but
// failure() and restarts() may also be read from another thread (Runtime::reports()).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace hookhost {

class HookHealth {
 public:
  // The first failure wins; later ones are only logged.
  void note_failure(const std::string& what) {
    std::lock_guard lock(failure_mutex_);
    if (failure_.empty()) failure_ = what;
  }
  std::string failure() const {
    std::lock_guard lock(failure_mutex_);
    return failure_;
  }

  // Its process is gone: not even end() is delivered, unless a restart brings it back.
  bool runner_lost() const { return runner_lost_; }
  void lose_runner() { runner_lost_ = true; }
  void runner_restarted() { runner_lost_ = false; }

  // Restarts tried, counted before each try.
  uint32_t restarts() const { return restarts_.load(std::memory_order_relaxed); }
  void count_restart() { restarts_.fetch_add(1, std::memory_order_relaxed); }

 private:
  mutable std::mutex failure_mutex_;
  std::string failure_;
  std::atomic<uint32_t> restarts_{0};
  bool runner_lost_ = false;
};

}  // namespace hookhost
