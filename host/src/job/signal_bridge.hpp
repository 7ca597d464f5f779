// SIGINT and SIGTERM as events on a thread of their own. The handler only writes the signal number
// into a pipe (all it may safely do); a bridge thread reads it and calls back with ordinary code,
// so the first signal can become a stop request at once, even while a hook is blocked inside a
// callback polling should_stop().
#pragma once

#include <functional>
#include <thread>

#include "support/unique_fd.hpp"

namespace hookhost {

class SignalBridge {
 public:
  // `on_signal(signal, count)` runs on the bridge thread for every SIGINT or SIGTERM; count is 1
  // for the first, 2 for the second, ... Only one bridge may exist at a time.
  explicit SignalBridge(std::function<void(int signal, int count)> on_signal);
  ~SignalBridge();  // restores the previous handlers
  SignalBridge(const SignalBridge&) = delete;
  SignalBridge& operator=(const SignalBridge&) = delete;

 private:
  void loop();
  std::function<void(int, int)> on_signal_;
  int count_ = 0;
  UniqueFd read_end_;
  UniqueFd write_end_;  // the signal handler writes here
  std::thread thread_;
};

// "SIGINT", "SIGTERM", or "a signal" for any other.
const char* signal_name(int signal);

}  // namespace hookhost
