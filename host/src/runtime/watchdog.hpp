// Names an in-process hook call that runs longer than its call_timeout_ms. Such a call cannot be
// interrupted without a process of its own (isolation = process kills its runner instead); the
// watchdog makes it visible: one warning when the limit passes, then again at 2x, 4x, ... of it.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

#include <memory>

#include "context/running_call.hpp"

namespace spdlog {
class logger;
}

namespace hookhost {

class CallWatchdog {
 public:
  // Watches `running` on a thread of its own until destroyed; warns on `log`.
  CallWatchdog(const RunningCall& running, std::shared_ptr<spdlog::logger> log);
  ~CallWatchdog();
  CallWatchdog(const CallWatchdog&) = delete;
  CallWatchdog& operator=(const CallWatchdog&) = delete;

 private:
  void watch();
  const RunningCall& running_;
  std::shared_ptr<spdlog::logger> log_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace hookhost
