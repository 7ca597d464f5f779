#include "runtime/change_queue.hpp"

#include <exception>

namespace hookhost {

bool ChangeQueue::post(Change change) {
  std::lock_guard lock(mutex_);
  if (closed_) return false;
  changes_.push_back(std::move(change));
  waiting_.store(true, std::memory_order_release);
  return true;
}

void ChangeQueue::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
}

bool ChangeQueue::closed() const {
  std::lock_guard lock(mutex_);
  return closed_;
}

int ChangeQueue::count() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(changes_.size());
}

void ChangeQueue::run(Runtime& runtime, spdlog::logger& log) {
  std::vector<Change> now;
  {
    std::lock_guard lock(mutex_);
    now.swap(changes_);
    waiting_.store(false, std::memory_order_relaxed);
  }
  running_ = true;
  for (auto& change : now) {
    try {
      change(runtime);
    } catch (const std::exception& e) {
      log.error("a change to the running job failed: {}", e.what());
    }
  }
  running_ = false;
}

void ChangeQueue::run_now(Runtime& runtime, const Change& change) {
  running_ = true;
  try {
    change(runtime);
  } catch (...) {
    running_ = false;
    throw;
  }
  running_ = false;
}

}  // namespace hookhost
