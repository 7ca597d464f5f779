// Whether one hook was taken off the running job (StepEngine::detach, hookhost ctl detach) and
// why, and whether its runner was killed from another thread to get it off (StepEngine::interrupt):
// the call that then fails is no failure of the hook's and brings no restart. A detached slot is
// ended and destroyed, kept for the job's report, and its name may be used again.
// Thread rules: interrupted() and its marks are [thread-safe] (release/acquire, so the training
// thread that sees the killed call sees the mark). detached() is written on the training thread
// under the engine's slot lock and read by interrupt() under it; the reason is the training
// thread's.
#pragma once

#include <atomic>
#include <string>
#include <utility>

namespace hookhost {

class DetachControl {
 public:
  bool detached() const { return detached_; }
  // Called with the engine's slot lock held.
  void mark_detached() { detached_ = true; }
  const std::string& reason() const { return reason_; }
  // Called with the engine's slot lock held.
  void set_reason(std::string reason) { reason_ = std::move(reason); }

  // [thread-safe]
  bool interrupted() const { return interrupted_.load(std::memory_order_acquire); }
  // Marked before the runner is killed: the failed call may be seen on the training thread as
  // soon as it is. [thread-safe]
  void mark_interrupted() { interrupted_.store(true, std::memory_order_release); }
  // The runner could not be killed after all. [thread-safe]
  void unmark_interrupted() { interrupted_.store(false, std::memory_order_release); }

 private:
  bool detached_ = false;
  std::string reason_;
  std::atomic<bool> interrupted_{false};
};

}  // namespace hookhost
