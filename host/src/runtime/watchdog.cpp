#include "runtime/watchdog.hpp"

#include <spdlog/logger.h>

#include "context/host_services.hpp"

namespace hookhost {

CallWatchdog::CallWatchdog(const RunningCall& running, std::shared_ptr<spdlog::logger> log)
    : running_(running), log_(std::move(log)), thread_([this] { watch(); }) {}

CallWatchdog::~CallWatchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void CallWatchdog::watch() {
  using namespace std::chrono;
  const HostServices* warned_instance = nullptr;
  int64_t warned_call = -1;
  nanoseconds next_warning{0};
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, milliseconds(20), [&] { return stopping_; })) {
    const HostServices* instance = running_.instance();
    if (!instance) continue;
    const int64_t call = running_.serial();
    if (running_.watched() != instance) continue;  // a direct per-step call: no limit
    const milliseconds limit = running_.limit();
    if (limit.count() <= 0) continue;
    const nanoseconds age =
        steady_clock::now().time_since_epoch() - nanoseconds(running_.since_ns());
    if (instance != warned_instance || call != warned_call) {
      warned_instance = instance;
      warned_call = call;
      next_warning = limit;
    }
    if (age < next_warning) continue;
    const int callback = running_.callback();
    log_->warn(
        "{} has been running in {} at global step {} for {} ms, over its "
        "call_timeout_ms = {}; an in-process call cannot be interrupted (isolation = process "
        "would kill it)",
        instance->blame_name, callback >= 0 ? kCallbackNames[static_cast<size_t>(callback)] : "?",
        running_.step(), duration_cast<milliseconds>(age).count(), limit.count());
    next_warning *= 2;
  }
}

}  // namespace hookhost
