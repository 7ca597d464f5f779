// The processes of a distributed job, as the runtime, the workload and hooks' collective service
// need them. hookhost runs on an existing engine (MPI, hookhost/host/mpi.hpp) and never talks to
// the network itself; a job of one process has no communicator at all.
//
// Every function except rank(), size() and is_chief() is collective: every process of the
// communicator calls it, in the same order, with the same counts.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hookhost {

enum class ReduceOp { sum, min, max };

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Rank 0 is the chief: it alone writes the job's checkpoints and chief-only hooks run there.
  bool is_chief() const { return rank() == 0; }

  // Element-wise over every process, in place.
  virtual void allreduce(int64_t* values, std::size_t count, ReduceOp op) = 0;
  virtual void allreduce(double* values, std::size_t count, ReduceOp op) = 0;
  // `root`'s bytes, on every process.
  virtual void broadcast(std::string& bytes, int root) = 0;
  // Every process's bytes at `root`, by rank; an empty vector elsewhere.
  virtual std::vector<std::string> gather(const std::string& bytes, int root) = 0;
  virtual void barrier() = 0;

  // The same, for hooks' collectives: false when the other processes did not all join within
  // `timeout` (a hook called it on some processes only, or in different callbacks). The
  // communicator is unusable after a timeout: its operation may still be pending.
  virtual bool allreduce_within(double* values, std::size_t count, ReduceOp op,
                                std::chrono::milliseconds timeout) = 0;
  virtual bool broadcast_within(double* values, std::size_t count, int root,
                                std::chrono::milliseconds timeout) = 0;
  virtual bool barrier_within(std::chrono::milliseconds timeout) = 0;

  // A communicator of its own over the processes that pass member = true (nullptr on the others),
  // ranked in this one's order, so its traffic never meets this one's.
  virtual std::unique_ptr<Communicator> split(bool member) = 0;

  // Ends every process of the job at once (a process that cannot keep up its part of a collective
  // must not leave the others waiting).
  [[noreturn]] virtual void abort(int exit_code) = 0;
};

}  // namespace hookhost
