#include "runner_io.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include <hookhost/hook.h>

namespace hookhost::sandbox {

namespace {

constexpr size_t kMaxLineBytes = 8192;  // a longer line is forwarded in pieces
constexpr auto kWindow = std::chrono::seconds(1);

void set_nonblocking(int fd) {
  if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

}  // namespace

RunnerIo::RunnerIo(Routing& routing, UniqueFd stdout_pipe, UniqueFd stderr_pipe,
                   UniqueFd side_channel, UniqueFd violations, int max_lines_per_second,
                   int max_violations_per_second)
    : routing_(routing),
      out_{std::move(stdout_pipe), HH_LOG_INFO, {}},
      err_{std::move(stderr_pipe), HH_LOG_WARN, {}},
      side_(std::move(side_channel)),
      violations_(std::move(violations)),
      max_violations_per_second_(max_violations_per_second),
      wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      max_lines_per_second_(max_lines_per_second) {
  if (!wake_) throw std::system_error(errno, std::generic_category(), "eventfd");
  set_nonblocking(out_.fd.get());
  set_nonblocking(err_.fd.get());
  set_nonblocking(violations_.get());
  window_start_ = violation_window_start_ = Clock::now();
  thread_ = std::thread([this] { run(); });
}

RunnerIo::~RunnerIo() {
  stop();
}

void RunnerIo::stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_.get(), &one, sizeof one);
  thread_.join();
}

std::string RunnerIo::side_channel_problem() const {
  std::lock_guard lock(problem_mutex_);
  return side_problem_;
}

void RunnerIo::run() {
  for (;;) {
    pollfd fds[5];
    nfds_t n = 0;
    auto add = [&](int fd) {
      fds[n] = {fd, POLLIN, 0};
      return fd >= 0 ? static_cast<int>(n++) : -1;
    };
    const int wake = add(wake_.get());
    const int out = add(out_.fd.get());
    const int err = add(err_.fd.get());
    const int side = add(side_.fd());
    int violations_fd;
    bool suppressed;
    {
      std::lock_guard lock(violations_mutex_);
      violations_fd = violations_.get();
      suppressed = violations_suppressed_ > 0;
    }
    const int violations = add(violations_fd);
    if (out < 0 && err < 0 && side < 0 && violations < 0)
      break;           // the runner is gone and everything is read
    int timeout = -1;  // with lines or records dropped, wake up when the window ends to say so
    if (dropped_ > 0 || suppressed) {
      const auto left = std::min(dropped_ > 0 ? window_start_ : Clock::time_point::max(),
                                 suppressed ? violation_window_start_ : Clock::time_point::max()) +
                        kWindow - Clock::now();
      timeout = static_cast<int>(std::max<int64_t>(
          0, std::chrono::duration_cast<std::chrono::milliseconds>(left).count() + 1));
    }
    const int ready = ::poll(fds, n, timeout);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) {
      if (Clock::now() - window_start_ >= kWindow) {
        note_dropped();
        window_start_ = Clock::now();
        lines_in_window_ = 0;
      }
      std::lock_guard lock(violations_mutex_);
      roll_violation_window(Clock::now());
      continue;
    }
    if (fds[wake].revents) break;
    if (out >= 0 && fds[out].revents) drain(out_, false);
    if (err >= 0 && fds[err].revents) drain(err_, false);
    if (side >= 0 && fds[side].revents) serve_side_request();
    if (violations >= 0 && fds[violations].revents) drain_violations();
  }
  drain_violations();
  drain(out_, true);
  drain(err_, true);
  note_dropped();
  std::lock_guard lock(violations_mutex_);
  roll_violation_window(Clock::time_point::max());
}

void RunnerIo::roll_violation_window(Clock::time_point now) {
  if (now - violation_window_start_ < kWindow) return;
  if (violations_suppressed_ > 0)
    routing_.violations_suppressed(violations_suppressed_, max_violations_per_second_);
  violations_suppressed_ = 0;
  violations_in_window_ = 0;
  violation_window_start_ = now == Clock::time_point::max() ? Clock::now() : now;
}

void RunnerIo::drain_violations() {
  std::lock_guard lock(violations_mutex_);
  char buffer[16384];
  while (violations_) {
    const ssize_t n = ::read(violations_.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) violations_.reset();
      break;
    }
    violation_reader_.append(buffer, static_cast<size_t>(n));
    for (confine::Violation violation; violation_reader_.next(&violation);) {
      roll_violation_window(Clock::now());
      if (violations_in_window_ >= max_violations_per_second_) {
        ++violations_suppressed_;
        continue;
      }
      ++violations_in_window_;
      routing_.violation(violation);
    }
    // Past a record that is not one nothing can be framed: what follows is read and dropped, the
    // pipe kept open, so a later denied call's record does not end its runner with SIGPIPE.
  }
}

void RunnerIo::drain(Stream& stream, bool final) {
  char buffer[16384];
  while (stream.fd) {
    const ssize_t n = ::read(stream.fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) stream.fd.reset();  // end of file
      break;
    }
    stream.partial.append(buffer, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl; (nl = stream.partial.find('\n', start)) != std::string::npos; start = nl + 1)
      emit(stream.level, std::string_view(stream.partial).substr(start, nl - start));
    stream.partial.erase(0, start);
    while (stream.partial.size() >= kMaxLineBytes) {
      emit(stream.level, std::string_view(stream.partial).substr(0, kMaxLineBytes));
      stream.partial.erase(0, kMaxLineBytes);
    }
  }
  // The last line of a runner that ended without a newline.
  if ((final || !stream.fd) && !stream.partial.empty()) {
    emit(stream.level, stream.partial);
    stream.partial.clear();
  }
}

void RunnerIo::emit(int level, std::string_view line) {
  const auto now = Clock::now();
  if (now - window_start_ >= kWindow) {
    note_dropped();
    window_start_ = now;
    lines_in_window_ = 0;
  }
  if (lines_in_window_ >= max_lines_per_second_) {
    ++dropped_;
    return;
  }
  ++lines_in_window_;
  routing_.log(level, line);
}

void RunnerIo::note_dropped() {
  if (dropped_ == 0) return;
  const std::string text = std::to_string(dropped_) +
                           " lines of the runner's output dropped (more than " +
                           std::to_string(max_lines_per_second_) + " lines a second)";
  routing_.log(HH_LOG_WARN, text);
  dropped_ = 0;
}

void RunnerIo::serve_side_request() {
  auto broken = [&](const std::string& why) {
    {
      std::lock_guard lock(problem_mutex_);
      side_problem_ = why;
    }
    side_.close();
  };
  Message message;
  switch (side_.receive(message, kNoDeadline, wake_.get())) {
    case ChannelStatus::ok: break;
    case ChannelStatus::closed: side_.close(); return;
    case ChannelStatus::watch_ready:
    case ChannelStatus::timed_out: return;  // stopping: the loop sees the wake-up
    case ChannelStatus::malformed:
    case ChannelStatus::failed: broken("its side channel: " + side_.error()); return;
  }
  if (message.type != MessageType::service_request) {
    broken(std::string("an unexpected ") + message_type_name(message.type) +
           " message on its side channel");
    return;
  }
  Reader in(message.payload);
  Writer reply;
  std::string why;
  if (!routing_.serve(message.instance, in, reply, &why)) {
    broken(why + " on its side channel");
    return;
  }
  if (side_.send(MessageType::service_reply, message.instance, reply.bytes(), kNoDeadline,
                 wake_.get()) != ChannelStatus::ok)
    side_.close();
}

}  // namespace hookhost::sandbox
