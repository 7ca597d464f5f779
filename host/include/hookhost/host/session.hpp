// The workload interface: what a training loop implements so the runtime can drive hooks around
// its steps (TensorFlow's raw session, seen from MonitoredSession).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensor.hpp"

namespace hookhost {

enum class StepStatus {
  ok,
  end_of_data,  // the input is exhausted: the job completes normally (OutOfRange)
  aborted,      // recoverable: the runtime recreates the session and retries the step
  unavailable,  // recoverable, like aborted
  error,        // any other error: the job fails
  // Distributed workloads only: another process of the job could not take part in this step (see
  // Session::cancel_step), so nothing ran here either. The runtime abandons the step without
  // failing; the processes' agreement at the step boundary then says why the job ends.
  cancelled,
};

struct StepResult {
  StepStatus status = StepStatus::ok;
  std::string message;  // for every status but ok
  TensorMap values;     // exactly the fetched names when status is ok
};

// Every function is called on the thread that drives the runtime (the one calling Runtime's
// start, run and close, or constructing it): a session needs no locking of its own. Hooks' other
// threads see copies the runtime keeps.
class Session {
 public:
  virtual ~Session() = default;

  // Creates the session, or recreates it after a recoverable error (creation counts from 1).
  // Throws std::exception on failure, which fails the job.
  virtual void create(int creation) = 0;

  // The live global step: steps completed so far. Also called before create(), when the runtime
  // is constructed, so hooks' create() sees the step a resumed job starts at.
  virtual int64_t global_step() const = 0;

  // The tensors a hook may fetch and feed (names only; used to reject bad requests up front).
  virtual std::vector<std::string> fetchable() const = 0;
  virtual std::vector<std::string> feedable() const = 0;

  // Runs one step. `fetches` are validated names; `feeds` replace named values for this step.
  virtual StepResult run(const std::vector<std::string>& fetches, const TensorMap& feeds) = 0;

  // Workload state for checkpoints (opaque bytes); the default has none.
  virtual std::string save_state() const { return {}; }
  virtual void restore_state(std::string_view /*bytes*/) {}

  // A distributed job's per-process part of the workload state (each process's random
  // generators), beside save_state's, which is the chief's alone and restored on every process.
  // Every process saves its own at an agreed checkpoint; the checkpoint keeps it per rank and a
  // resume gives each rank its own (a rank the checkpoint has none for keeps its current state).
  // nullopt: none (the default).
  virtual std::optional<std::string> save_rank_state() const { return std::nullopt; }
  virtual void restore_rank_state(std::string_view /*bytes*/) {}

  // The step at which the workload ends by itself, when known (lets a progress bar show a total).
  // Read when the runtime is constructed and each time the session is created; hooks on any
  // thread get that copy (hh.steps/1), so the value must not change between creations.
  virtual std::optional<int64_t> last_step() const { return std::nullopt; }

  // The runtime will not call run() for this step on this process (a hook failed before it). A
  // distributed workload still joins the step's collectives, marked called off, so the other
  // processes return StepStatus::cancelled instead of waiting for this one; others do nothing.
  virtual void cancel_step() {}
};

}  // namespace hookhost
