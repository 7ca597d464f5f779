#include "context/job_state.hpp"

namespace hookhost {

void JobState::request_stop(hh_stop_cause cause, const std::string& reason) {
  {
    std::lock_guard lock(stop_mutex_);
    if (stop_requested_.exchange(true)) return;
    stop_cause_ = cause;
    stop_reason_ = reason;
    log_->info("stop requested: {}", reason);
  }
  if (event_sink_) event_sink_(RunEvent::Kind::stop, reason);
}

JobState::Stop JobState::stop() const {
  std::lock_guard lock(stop_mutex_);
  return Stop{stop_cause_, stop_reason_};
}

void JobState::adopt_agreed_stop(hh_stop_cause cause, const std::string& reason) {
  std::lock_guard lock(stop_mutex_);
  if (!stop_requested_.exchange(true) || stop_reason_ != reason)
    log_->info("the job stops: {}", reason);
  stop_cause_ = cause;
  stop_reason_ = reason;
}

void JobState::record_checkpoint_request(const std::string& reason) {
  std::lock_guard lock(checkpoint_mutex_);
  // The first few reasons are enough for the log line; a hook asking every step must not grow it.
  if (checkpoint_reasons_.size() < 512)
    checkpoint_reasons_ += (checkpoint_reasons_.empty() ? "" : "; ") + reason;
  checkpoint_requested_ = true;
}

std::string JobState::take_checkpoint_reasons() {
  std::string reasons;
  std::lock_guard lock(checkpoint_mutex_);
  reasons.swap(checkpoint_reasons_);
  return reasons;
}

void JobState::name_checkpoint_requester(const std::string& who) {
  std::lock_guard lock(checkpoint_mutex_);
  if (checkpoint_reasons_.empty()) checkpoint_reasons_ = who;
}

std::optional<WrittenCheckpoint> JobState::last_checkpoint() const {
  std::lock_guard lock(checkpoint_mutex_);
  return newest_checkpoint_;
}

void JobState::set_last_checkpoint(WrittenCheckpoint written) {
  std::lock_guard lock(checkpoint_mutex_);
  newest_checkpoint_ = std::move(written);
}

bool JobState::checkpoint_unshared() const {
  std::lock_guard lock(checkpoint_mutex_);
  if (!newest_checkpoint_) return false;
  return !shared_checkpoint_ ||
         shared_checkpoint_->global_step != newest_checkpoint_->global_step ||
         shared_checkpoint_->file != newest_checkpoint_->file;
}

std::optional<WrittenCheckpoint> JobState::share_last_checkpoint() {
  std::lock_guard lock(checkpoint_mutex_);
  shared_checkpoint_ = newest_checkpoint_;
  return newest_checkpoint_;
}

void JobState::count_checkpoint_failure(const std::string& error) {
  std::lock_guard lock(checkpoint_mutex_);
  ++checkpoint_failures_;
  checkpoint_error_ = error;
}

JobState::CheckpointFailures JobState::checkpoint_failures() const {
  std::lock_guard lock(checkpoint_mutex_);
  return CheckpointFailures{checkpoint_failures_, checkpoint_error_};
}

}  // namespace hookhost
