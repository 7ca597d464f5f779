// A distributed job's live changes (Runtime::propose_change): the chief proposes a change, as
// bytes; at the next step boundary the processes agree that the chief has one (the "more to agree
// on" bit of the StepAgreement's one vote, so a boundary without a change costs nothing more), the
// chief broadcasts every change it holds, each process applies each one
// (RuntimeOptions::on_agreed_change) at that same boundary, and the chief gathers every process's
// outcome for whoever proposed it.
// Thread rules: propose() and close() are [thread-safe] (under the mutex); waiting() is an atomic
// read relaxed at every boundary; share() is the training thread's, and collective.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "hookhost/host/communicator.hpp"
#include "hookhost/host/runtime.hpp"

namespace hookhost {

class AgreedChanges {
 public:
  using Done = Runtime::ChangeDone;

  // Queued for the next boundary (the chief's); false, and `done` dropped, once closed.
  bool propose(std::string change, Done done);
  // Takes no more: each change still waiting is answered with `why` (this process's outcome
  // alone), on the calling thread.
  void close(const std::string& why);
  // Whether a change waits: one relaxed load, for the chief's vote.
  bool waiting() const { return waiting_.load(std::memory_order_relaxed); }
  // Collective, at a boundary where the processes agreed that the chief holds changes: the chief's
  // changes reach every process, `apply` runs each one there in order, and each proposer's `done`
  // gets every process's outcome, by rank (on the chief). What `apply` throws is its outcome.
  void share(Communicator& comm, const std::function<ChangeOutcome(const std::string&)>& apply);

 private:
  std::mutex mutex_;
  std::vector<std::pair<std::string, Done>> changes_;  // guarded by mutex_
  bool closed_ = false;                                // guarded by mutex_
  std::atomic<bool> waiting_{false};
};

}  // namespace hookhost
