#include "storage/checkpoint_writer.hpp"

#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <cstdlib>
#include <utility>

namespace hookhost {
namespace {

// Blocks every signal but the ones a fault raises on the calling thread for its lifetime: a
// thread started meanwhile inherits the mask, so SIGINT or SIGTERM meant for the job reaches a
// thread that acts on it instead of interrupting a write.
class AsyncSignalsBlocked {
 public:
  AsyncSignalsBlocked() {
    sigset_t blocked;
    sigfillset(&blocked);
    for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS})
      sigdelset(&blocked, fault);
    ::pthread_sigmask(SIG_BLOCK, &blocked, &previous_);
  }
  ~AsyncSignalsBlocked() { ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  AsyncSignalsBlocked(const AsyncSignalsBlocked&) = delete;
  AsyncSignalsBlocked& operator=(const AsyncSignalsBlocked&) = delete;

 private:
  sigset_t previous_;
};

}  // namespace

CheckpointWriter::CheckpointWriter(WriteFunction write) : write_(std::move(write)) {}

CheckpointWriter::~CheckpointWriter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void CheckpointWriter::start() {
  std::lock_guard lock(mutex_);
  start_locked();
}

void CheckpointWriter::start_locked() {
  if (thread_.joinable()) return;
  AsyncSignalsBlocked blocked;
  thread_ = std::thread([this] { run(); });  // throws before anything is handed over
  ::pthread_setname_np(thread_.native_handle(), "hh-checkpoint");
}

void CheckpointWriter::submit(CheckpointSave&& save) {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return !in_flight_ && !waiting_; });
  start_locked();
  in_flight_ = std::move(save);
  lock.unlock();
  work_.notify_one();
}

std::optional<CheckpointWriter::Replaced> CheckpointWriter::submit_replacing(
    CheckpointSave&& save) {
  std::optional<CheckpointSave> dropped;  // freed after the lock is released
  std::optional<Replaced> replaced;
  {
    std::lock_guard lock(mutex_);
    start_locked();
    if (!in_flight_) {
      in_flight_ = std::move(save);
    } else {
      if (waiting_) {
        replaced = Replaced{waiting_->checkpoint.global_step, waiting_->reasons};
        dropped = std::move(waiting_);
      }
      waiting_ = std::move(save);
    }
  }
  work_.notify_one();
  return replaced;
}

void CheckpointWriter::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return !in_flight_ && !waiting_; });
}

bool CheckpointWriter::busy() const {
  std::lock_guard lock(mutex_);
  return in_flight_.has_value() || waiting_.has_value();
}

void CheckpointWriter::run() {
  // Background work: a SCHED_BATCH thread does not preempt the training thread when it is woken
  // with a save, it only takes its share of a free core. Failing to set it changes nothing else.
  const sched_param batch{};
  ::pthread_setschedparam(::pthread_self(), SCHED_BATCH, &batch);
  {
    // The C library gives a thread its own allocation arena at its first allocation: made now,
    // while memory is there, not at the first save.
    void* volatile warm_up = std::malloc(4096);
    std::free(warm_up);
  }
  std::unique_lock lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return in_flight_ || stopping_; });
    if (!in_flight_) return;  // stopping, and nothing left to write
    {
      // Taken out so the snapshot is freed before the save counts as done: a new snapshot is only
      // taken once the previous one is gone.
      const CheckpointSave save = std::move(*in_flight_);
      lock.unlock();
      write_(save);
    }
    lock.lock();
    in_flight_.reset();
    if (waiting_) {
      in_flight_ = std::move(waiting_);
      waiting_.reset();
      continue;
    }
    idle_.notify_all();
  }
}

}  // namespace hookhost
