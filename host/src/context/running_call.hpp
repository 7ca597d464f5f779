// The hook call running now on the training thread, for those that name it from elsewhere: crash
// blame (inside a signal handler), the call watchdog (its own thread), the signal guard, and the
// [hook-thread] checks of services and step requests.
// Thread rules: only the training thread writes, around each plugin call; any thread reads,
// lock-free and without allocating (a signal handler reads it). The instance is published with
// release and read with acquire; the other fields are relaxed companions of it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "hookhost/host/callback_names.hpp"

namespace hookhost {

struct HostServices;

class RunningCall {
 public:
  // --- training thread ---
  // A lifecycle call of `instance` (a slot's begin ... end): named by its callback.
  void enter(const HostServices* instance) { instance_.store(instance, std::memory_order_release); }
  void leave() { instance_.store(nullptr, std::memory_order_release); }
  void set_callback(Callback callback) {
    callback_.store(static_cast<int>(callback), std::memory_order_relaxed);
  }
  // The global step the running call concerns, as its error line would say it.
  void set_step(int64_t step) { step_.store(step, std::memory_order_relaxed); }
  // For the watchdog: whose call started when (steady clock), its limit; a new serial per call.
  // Calls not started this way (the direct per-step calls, which have no limit) are not watched.
  void start_watch(const HostServices* instance, int64_t since_ns,
                   std::chrono::milliseconds limit) {
    watched_.store(instance, std::memory_order_relaxed);
    since_ns_.store(since_ns, std::memory_order_relaxed);
    limit_ms_.store(limit.count(), std::memory_order_relaxed);
    serial_.fetch_add(1, std::memory_order_release);
  }
  // An instance's create() or destroy(), outside any slot's lifecycle: crash blame names these
  // services and this call instead.
  void enter_instance_call(const HostServices* instance, const char* call) {
    instance_call_name_.store(call, std::memory_order_relaxed);
    instance_call_.store(instance, std::memory_order_release);
  }
  void leave_instance_call() { instance_call_.store(nullptr, std::memory_order_release); }

  // --- any thread ---
  // The instance whose lifecycle call runs, or null.
  const HostServices* instance() const { return instance_.load(std::memory_order_acquire); }
  // The running callback (-1 before the first call).
  int callback() const { return callback_.load(std::memory_order_relaxed); }
  int64_t step() const { return step_.load(std::memory_order_relaxed); }
  const HostServices* instance_call() const {
    return instance_call_.load(std::memory_order_acquire);
  }
  const char* instance_call_name() const {
    return instance_call_name_.load(std::memory_order_relaxed);
  }
  int64_t serial() const { return serial_.load(std::memory_order_acquire); }
  const HostServices* watched() const { return watched_.load(std::memory_order_relaxed); }
  int64_t since_ns() const { return since_ns_.load(std::memory_order_relaxed); }
  std::chrono::milliseconds limit() const {
    return std::chrono::milliseconds(limit_ms_.load(std::memory_order_relaxed));
  }

 private:
  std::atomic<const HostServices*> instance_{nullptr};
  std::atomic<int> callback_{-1};
  std::atomic<int64_t> step_{0};
  std::atomic<const HostServices*> instance_call_{nullptr};
  std::atomic<const char*> instance_call_name_{nullptr};
  std::atomic<const HostServices*> watched_{nullptr};
  std::atomic<int64_t> since_ns_{0};
  std::atomic<int64_t> limit_ms_{0};
  std::atomic<int64_t> serial_{0};
};

}  // namespace hookhost
