// Writes checkpoints on one background thread, so a save costs the training thread only the
// snapshot of the state. At most one save is in flight. A new one either waits for it (submit:
// nothing skipped) or waits behind it in the one waiting place, replacing a save already there
// (submit_replacing: the newest snapshot wins, the step never waits for a write). Format and
// policy: docs/checkpoint-format.md.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "storage/checkpoint.hpp"

namespace hookhost {

// A snapshot taken at a step boundary, on its way to the disk.
struct CheckpointSave {
  Checkpoint checkpoint;
  std::string reasons;  // who asked, for the log line
  std::chrono::system_clock::time_point taken = std::chrono::system_clock::now();
};

class CheckpointWriter {
 public:
  // `write` runs on the writer thread, one save at a time; it reports its own errors and must not
  // throw.
  using WriteFunction = std::function<void(const CheckpointSave&)>;

  explicit CheckpointWriter(WriteFunction write);
  // Finishes the save in flight, if any, then stops the thread. The owner must call wait_idle()
  // before anything `write` uses goes away.
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Starts the writer thread, if it is not running, with what it needs to write: called before
  // any hook runs, so a hook that later exhausts the process's memory or threads cannot stop the
  // job's checkpoints. Throws std::system_error when the thread cannot start.
  void start();
  // Hands `save` to the writer thread (started here if start() was not called) and returns at
  // once, unless a save is still in flight: then it waits for that one to finish first. Throws
  // std::system_error when the thread cannot start; `save` is then left as it was.
  void submit(CheckpointSave&& save);
  // Hands `save` to the writer at once: written now when the writer is idle, else next, in place
  // of a save that was waiting, whose step and reasons are returned (it is dropped unwritten).
  // Throws std::system_error when the thread cannot start; `save` is then left as it was.
  struct Replaced {
    int64_t global_step;
    std::string reasons;
  };
  std::optional<Replaced> submit_replacing(CheckpointSave&& save);
  // Returns once no save is in flight or waiting. [thread-safe]
  void wait_idle();
  // True while a save is in flight or waiting. [thread-safe]
  bool busy() const;

 private:
  void run();
  void start_locked();  // with mutex_ held

  WriteFunction write_;
  mutable std::mutex mutex_;
  std::condition_variable work_;  // a save was handed over, or the writer is stopping
  std::condition_variable idle_;  // the save in flight is done
  std::optional<CheckpointSave> in_flight_;
  std::optional<CheckpointSave> waiting_;  // submit_replacing's, written after in_flight_
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace hookhost
