// What the whole job knows about itself: the live step, a stop (asked for, with its cause and
// reason), a failure, the end of the data, the checkpoints asked for and the newest one written.
// Thread rules: the functions marked [thread-safe] may be called from any thread (hooks' own
// threads reach them through hh_host and its services); the others are the training thread's.
// Stop state is under one mutex, checkpoint state under another, and the flags read every step are
// atomics that the training thread reads relaxed.
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <hookhost/hook.h>

#include "hookhost/host/run_events.hpp"

namespace hookhost {

class JobState {
 public:
  explicit JobState(std::shared_ptr<spdlog::logger> log) : log_(std::move(log)) {}
  JobState(const JobState&) = delete;
  JobState& operator=(const JobState&) = delete;

  // Told of the first stop requested and the first failure, for the run record
  // (RuntimeOptions::on_event). Set before the job starts; called without a lock held.
  using EventSink = std::function<void(RunEvent::Kind, const std::string& text)>;
  void set_event_sink(EventSink sink) { event_sink_ = std::move(sink); }

  // --- the step ---
  // The live global step. [thread-safe]
  int64_t global_step(std::memory_order order = std::memory_order_seq_cst) const {
    return live_step_.load(order);
  }
  void set_global_step(int64_t step, std::memory_order order = std::memory_order_seq_cst) {
    live_step_.store(step, order);
  }
  // The workload's last step (-1: unknown), copied on the training thread so hooks' other threads
  // never touch the Session. [thread-safe]
  int64_t workload_last_step() const { return workload_last_step_.load(); }
  void set_workload_last_step(int64_t step) { workload_last_step_ = step; }

  // --- stop ---
  // The first request wins; later ones are ignored. Logged. [thread-safe]
  void request_stop(hh_stop_cause cause, const std::string& reason);
  // [thread-safe]
  bool stop_requested(std::memory_order order = std::memory_order_seq_cst) const {
    return stop_requested_.load(order);
  }
  struct Stop {
    hh_stop_cause cause = HH_STOP_CAUSE_NONE;
    std::string reason;
  };
  Stop stop() const;  // [thread-safe]
  // The stop every process of a distributed job agreed on replaces this process's own; logged
  // when it is news here.
  void adopt_agreed_stop(hh_stop_cause cause, const std::string& reason);

  // --- failure and end of data (training thread) ---
  // The first failure wins.
  void fail(const std::string& reason) {
    if (failed_) return;
    failed_ = true;
    failure_reason_ = reason;
    if (event_sink_) event_sink_(RunEvent::Kind::failure, reason);
  }
  // A failure every process agreed on, or one found at the end, replaces this process's own.
  void replace_failure(const std::string& reason) {
    failed_ = true;
    failure_reason_ = reason;
  }
  // The failure already has its own log line: the job's last line does not repeat it.
  void mark_failure_logged() { failure_logged_ = true; }
  bool failed() const { return failed_; }
  const std::string& failure_reason() const { return failure_reason_; }
  bool failure_logged() const { return failure_logged_; }
  // The workload ran out of data (here, or on the process whose ending every process agreed on),
  // and the words the job's result gives for it.
  void set_end_of_data(std::string reason) {
    end_of_data_ = true;
    end_of_data_reason_ = std::move(reason);
  }
  bool end_of_data() const { return end_of_data_; }
  const std::string& end_of_data_reason() const { return end_of_data_reason_; }

  // --- checkpoints ---
  // Records a request, carried out at the next step boundary. [thread-safe]
  void record_checkpoint_request(const std::string& reason);
  // Whether a request is pending, read every step. [thread-safe]
  bool checkpoint_requested(std::memory_order order = std::memory_order_seq_cst) const {
    return checkpoint_requested_.load(order);
  }
  // Takes the pending flag (a request made after this waits for the next boundary).
  bool take_checkpoint_flag() { return checkpoint_requested_.exchange(false); }
  // Takes the reasons gathered since the last take.
  std::string take_checkpoint_reasons();
  // Names `who` as the reason when none is recorded here (the request came from another process).
  void name_checkpoint_requester(const std::string& who);
  // The newest checkpoint completed (a distributed job's other processes hold the chief's, as last
  // shared). [thread-safe]
  std::optional<WrittenCheckpoint> last_checkpoint() const;
  void set_last_checkpoint(WrittenCheckpoint written);  // [thread-safe]
  // The chief of a distributed job: whether its newest checkpoint is not yet shared, and marking
  // it shared (returns what to tell the others).
  bool checkpoint_unshared() const;
  std::optional<WrittenCheckpoint> share_last_checkpoint();
  // Counts a checkpoint that could not be written, with the last one's error. [thread-safe]
  void count_checkpoint_failure(const std::string& error);
  struct CheckpointFailures {
    uint64_t count = 0;
    std::string last_error;
  };
  CheckpointFailures checkpoint_failures() const;  // [thread-safe]

 private:
  std::shared_ptr<spdlog::logger> log_;
  EventSink event_sink_;
  std::atomic<int64_t> live_step_{0};
  std::atomic<int64_t> workload_last_step_{-1};

  std::atomic<bool> stop_requested_{false};
  mutable std::mutex stop_mutex_;
  hh_stop_cause stop_cause_ = HH_STOP_CAUSE_NONE;
  std::string stop_reason_;

  bool failed_ = false;
  bool failure_logged_ = false;
  std::string failure_reason_;
  bool end_of_data_ = false;
  std::string end_of_data_reason_;

  std::atomic<bool> checkpoint_requested_{false};
  mutable std::mutex checkpoint_mutex_;
  std::string checkpoint_reasons_;
  std::optional<WrittenCheckpoint> newest_checkpoint_;
  std::optional<WrittenCheckpoint> shared_checkpoint_;
  uint64_t checkpoint_failures_ = 0;
  std::string checkpoint_error_;
};

}  // namespace hookhost
