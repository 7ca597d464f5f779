// One thread per runner for what does not belong to a call: it forwards each line the runner
// writes to stdout (info) or stderr (warning) to an instance's logger, at most
// `max_lines_per_second` lines a second and then one line saying how many were dropped, and it
// serves the host calls plugin threads make away from the hook thread (the side channel), at any
// time, through the requesting instance's hh_host. The records of denied calls a confined runner
// writes are passed on at most `max_violations_per_second` a second, then counted: a runner that
// floods its violation pipe costs the host one note a second, not a line (or a policy check) per
// record. hh_host's functions are [thread-safe], so this
// thread may use them while the hook thread's call is in progress, exactly as a plugin thread in
// the host would.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>

#include "channel.hpp"
#include "confine/violation.hpp"
#include "support/unique_fd.hpp"

namespace hookhost::sandbox {

class RunnerIo {
 public:
  // Where the runner's output and side requests go: the instances living in the runner. Called
  // on the I/O thread.
  class Routing {
   public:
    virtual ~Routing() = default;
    // Logs one line of the runner's output (or a note about it).
    virtual void log(int level, std::string_view line) = 0;
    // Carries out a side request of `instance` (service_requests.hpp); false with `why` when the
    // request breaks the protocol (an unknown instance included).
    virtual bool serve(uint32_t instance, Reader& in, Writer& reply, std::string* why) = 0;
    // Reports a call the runner's capability policy denied (a record its SIGSYS handler wrote, or
    // anything the runner's process wrote to look like one).
    virtual void violation(const confine::Violation& violation) = 0;
    // `count` records were dropped over the rate limit.
    virtual void violations_suppressed(uint64_t count, int per_second) = 0;
  };

  // `routing` must outlive stop(). `violations`: the pipe a confined runner's denied calls are
  // reported on (empty for an unconfined runner).
  RunnerIo(Routing& routing, UniqueFd stdout_pipe, UniqueFd stderr_pipe, UniqueFd side_channel,
           UniqueFd violations = {}, int max_lines_per_second = 100,
           int max_violations_per_second = 20);
  ~RunnerIo();
  RunnerIo(const RunnerIo&) = delete;
  RunnerIo& operator=(const RunnerIo&) = delete;

  // Forwards what the pipes hold now, says how many lines were dropped, and ends the thread.
  // Idempotent.
  void stop();

  // Why the side channel was closed because the runner broke the protocol on it ("" when not).
  std::string side_channel_problem() const;

  // Reports every denied call the runner has written so far (from any thread: the one that saw
  // the runner die of SIGSYS reads its last record before it words the loss).
  void drain_violations();

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
  void roll_violation_window(Clock::time_point now);  // violations_mutex_ held
  void serve_side_request();

  Routing& routing_;
  Stream out_;
  Stream err_;
  Channel side_;
  std::mutex violations_mutex_;
  UniqueFd violations_;
  confine::ViolationReader violation_reader_;
  const int max_violations_per_second_;
  Clock::time_point violation_window_start_{};  // violations_mutex_ guards these three
  int violations_in_window_ = 0;
  uint64_t violations_suppressed_ = 0;
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
