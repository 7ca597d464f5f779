// Names an in-process hook call that runs longer than its call_timeout_ms. Such a call cannot be
// interrupted without a process of its own (isolation = process kills its runner instead); the
// watchdog makes it visible: one warning when the limit passes, then again at 2x, 4x, ... of it.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

#include "hookhost/host/runtime.hpp"

namespace hookhost {

class CallWatchdog {
 public:
  // Watches the running call of `runtime` on a thread of its own until destroyed.
  explicit CallWatchdog(const Runtime::Impl& runtime);
  ~CallWatchdog();
  CallWatchdog(const CallWatchdog&) = delete;
  CallWatchdog& operator=(const CallWatchdog&) = delete;

 private:
  void watch();
  const Runtime::Impl& runtime_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace hookhost
