// A hook's tie to its observer lane (HookSettings::observer, observer_lane.hpp): the lane it owns,
// the running call of the worker that calls it (the request checks accept that call besides the
// training thread's), and whether this step's before_run ran on the training thread (the
// observer's first steps), so that its after_run hands what it asked for to the worker.
// Thread rules: the training thread's; the lane is attached under the engine's slot lock, and
// worker_call() is read by the worker's request checks and by interrupt() under that lock.
#pragma once

#include <memory>

namespace hookhost {

class ObserverLane;
class RunningCall;
struct LaneDeleter {
  void operator()(ObserverLane* lane) const;  // observer_lane.cpp
};

class ObserverLink {
 public:
  // nullptr for a hook that is no observer (or not started yet).
  ObserverLane* lane() const { return lane_.get(); }
  // Once, when the engine starts the observer: `worker_call` is the lane's worker's.
  void attach(ObserverLane* lane, const RunningCall& worker_call) {
    lane_.reset(lane);
    worker_call_ = &worker_call;
  }
  const RunningCall* worker_call() const { return worker_call_; }

  // Its first before_run ran on the training thread at this step; after_run hands it over.
  void expect_first_handover() { first_pending_ = true; }
  // Whether one was expected; either way, none is now.
  bool take_first_handover() {
    const bool pending = first_pending_;
    first_pending_ = false;
    return pending;
  }

 private:
  std::unique_ptr<ObserverLane, LaneDeleter> lane_;
  const RunningCall* worker_call_ = nullptr;
  bool first_pending_ = false;
};

}  // namespace hookhost
