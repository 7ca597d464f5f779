// The step boundary of a distributed job. Every process runs its own runtime; after each phase
// (start, every step, a recovery, the end) they take part in one 8-byte allreduce that decides
// for all of them: the job ends when any process failed, stopped or ran out of data, with that
// process's outcome and reason (a failure first, then the lowest rank), and a checkpoint is taken
// when any process asked for one. No process leaves its loop before the others know, so none is
// left waiting in a collective. A second, small allreduce follows only at a boundary that ends the
// job, takes a checkpoint, after the chief finished writing one (then the chief also broadcasts
// its newest checkpoint, which hh.checkpoint/1 last_written reports on every process), or where
// the chief holds live changes (AgreedChanges: the caller shares them).
//
// Used by the thread that runs the job only. It reads and settles the job's ending and checkpoint
// requests in JobState, and reaches the other processes through the Communicator; nothing else.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>

#include "context/job_state.hpp"
#include "hookhost/host/communicator.hpp"

namespace hookhost {

class StepAgreement {
 public:
  StepAgreement(Communicator& comm, JobState& job, std::shared_ptr<spdlog::logger> log)
      : comm_(comm), job_(job), log_(std::move(log)) {}

  // What every process does at this boundary, besides going on or ending.
  struct Decision {
    bool checkpoint =
        false;             // take a checkpoint: the caller writes it (states gathered to the chief)
    bool changes = false;  // the chief holds live changes: the caller shares them (AgreedChanges)
  };
  // One collective on every process. When a process ends the job, every process's JobState ends
  // it the same way (job_ends() turns true). Without `decide_requests` this process's pending
  // checkpoint request waits for the next boundary (a recovery agrees before the session's state
  // is restored). `chief_has_changes`: the chief's live changes wait (ignored on other processes).
  Decision agree(bool decide_requests, bool chief_has_changes = false);
  // Whether the processes agreed to end the job: until they do, a local stop or failure does not
  // end this process's loop, so no process leaves the others waiting in a collective.
  bool job_ends() const { return job_ends_; }
  // Collective: every process learns the chief's newest completed checkpoint.
  void share_chief_checkpoint();

 private:
  Communicator& comm_;
  JobState& job_;
  std::shared_ptr<spdlog::logger> log_;
  bool job_ends_ = false;
};

}  // namespace hookhost
