// One thread per runner for what does not belong to a call: it forwards each line the runner
// writes to stdout (info) or stderr (warning) to the instance's logger, at most
// `max_lines_per_second` lines a second and then one line saying how many were dropped, and it
// serves the host calls plugin threads make away from the hook thread (the side channel), at any
// time, through the same hh_host. hh_host's functions are [thread-safe], so this thread may use
// them while the hook thread's call is in progress, exactly as a plugin thread in the host would.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>

#include <hookhost/host.h>

#include "channel.hpp"
#include "unique_fd.hpp"

namespace hookhost::sandbox {

class RunnerIo {
 public:
  RunnerIo(const hh_host& host, UniqueFd stdout_pipe, UniqueFd stderr_pipe, UniqueFd side_channel,
           int max_lines_per_second = 100);
  ~RunnerIo();
  RunnerIo(const RunnerIo&) = delete;
  RunnerIo& operator=(const RunnerIo&) = delete;

  // Forwards what the pipes hold now, says how many lines were dropped, and ends the thread.
  // Idempotent.
  void stop();

  // Why the side channel was closed because the runner broke the protocol on it ("" when not).
  std::string side_channel_problem() const;

 private:
  struct Stream {
    UniqueFd fd;
    int level;
    std::string partial;
  };
  void run();
  void drain(Stream& stream, bool final);
  void emit(int level, std::string_view line);
  void note_dropped();
  void serve_side_request();

  const hh_host& host_;
  Stream out_;
  Stream err_;
  Channel side_;
  UniqueFd wake_;  // an eventfd: stop() makes it readable
  const int max_lines_per_second_;
  Clock::time_point window_start_{};
  int lines_in_window_ = 0;
  uint64_t dropped_ = 0;
  mutable std::mutex problem_mutex_;
  std::string side_problem_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace hookhost::sandbox
