#pragma once

#include <cstdint>
#include <string>

#include "hookhost/host/communicator.hpp"
#include "hookhost/host/params.hpp"

namespace hookhost {

// A point of the job's start that a distributed job's processes pass together, so none goes on
// to a collective that another will never reach. passed() agrees with the others and throws when
// any of them failed; when an exception leaves the phase on this process first, the destructor
// casts this process's vote instead.
class StartupPhase {
 public:
  explicit StartupPhase(Communicator* comm) : comm_(comm) {}
  StartupPhase(const StartupPhase&) = delete;
  StartupPhase& operator=(const StartupPhase&) = delete;
  ~StartupPhase() {
    if (comm_ && !voted_) vote(false);
  }
  void passed() {
    if (!comm_ || voted_) return;
    const int first_failed = vote(true);
    if (first_failed < comm_->size())
      throw ConfigError("rank " + std::to_string(first_failed) +
                        " of the job could not start (its error is printed above)");
  }

 private:
  // The lowest rank that failed, or the world size when none did.
  int vote(bool ok) {
    voted_ = true;
    int64_t first = ok ? comm_->size() : comm_->rank();
    comm_->allreduce(&first, 1, ReduceOp::min);
    return static_cast<int>(first);
  }
  Communicator* comm_;
  bool voted_ = false;
};

}  // namespace hookhost
