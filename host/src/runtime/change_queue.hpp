// The changes to a running job (Runtime::at_next_boundary): posted by any thread, run on the
// training thread at the step boundary, where no hook call is running. Once closed (close() has
// begun) it refuses new ones; the ones already posted still run.
// Thread rules: post(), close(), closed() and count() are [thread-safe] (under the queue's mutex);
// waiting() is an atomic the training thread reads relaxed at every step; run() and running() are
// the training thread's.
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <vector>

namespace hookhost {

class Runtime;

class ChangeQueue {
 public:
  using Change = std::function<void(Runtime&)>;

  // False (and `change` dropped) once the queue is closed. [thread-safe]
  bool post(Change change);
  // [thread-safe]
  void close();
  bool closed() const;
  // The changes posted and not yet taken to run. [thread-safe]
  int count() const;
  // Whether a change waits: one relaxed load, for the step boundary.
  bool waiting() const { return waiting_.load(std::memory_order_relaxed); }
  // Runs every change posted so far on `runtime`, in order; what one throws is logged and the
  // others still run.
  void run(Runtime& runtime, spdlog::logger& log);
  // Runs `change` now, as a posted one runs (running() meanwhile): a change the processes of a
  // distributed job agreed on (AgreedChanges). What it throws is the caller's.
  void run_now(Runtime& runtime, const Change& change);
  // A change runs now: what may be done only inside one (add_hook after start, detach_hook).
  bool running() const { return running_; }

 private:
  mutable std::mutex mutex_;
  std::vector<Change> changes_;  // guarded by mutex_
  bool closed_ = false;          // guarded by mutex_
  std::atomic<bool> waiting_{false};
  bool running_ = false;  // training thread
};

}  // namespace hookhost
