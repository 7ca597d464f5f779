#include "runtime/watchdog.hpp"

#include "runtime/runtime_impl.hpp"

namespace hookhost {

CallWatchdog::CallWatchdog(const Runtime::Impl& runtime)
    : runtime_(runtime), thread_([this] { watch(); }) {}

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
  const Slot* warned_slot = nullptr;
  int64_t warned_call = -1;
  nanoseconds next_warning{0};
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, milliseconds(20), [&] { return stopping_; })) {
    const Slot* slot = runtime_.running_slot.load(std::memory_order_acquire);
    if (!slot) continue;
    const milliseconds limit = slot->settings.call_timeout;
    if (limit.count() <= 0) continue;
    const int64_t call = runtime_.call_serial.load(std::memory_order_acquire);
    const nanoseconds age = steady_clock::now().time_since_epoch() -
                            nanoseconds(runtime_.running_since_ns.load(std::memory_order_relaxed));
    if (slot != warned_slot || call != warned_call) {
      warned_slot = slot;
      warned_call = call;
      next_warning = limit;
    }
    if (age < next_warning) continue;
    const int callback = runtime_.running_callback.load(std::memory_order_relaxed);
    runtime_.log->warn(
        "{} has been running in {} at global step {} for {} ms, over its "
        "call_timeout_ms = {}; an in-process call cannot be interrupted (isolation = process "
        "would kill it)",
        slot->services->blame_name,
        callback >= 0 ? kCallbackNames[static_cast<size_t>(callback)] : "?",
        runtime_.running_step.load(), duration_cast<milliseconds>(age).count(), limit.count());
    next_warning *= 2;
  }
}

}  // namespace hookhost
