#include "job/signal_bridge.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <tuple>

namespace hookhost {
namespace {

std::atomic<int> g_write_end{-1};
struct sigaction g_previous_int, g_previous_term;

extern "C" void write_signal_to_pipe(int sig) {
  const int saved_errno = errno;  // the interrupted code may be reading errno
  const int fd = g_write_end.load();
  const unsigned char byte = static_cast<unsigned char>(sig);
  if (fd >= 0) {
    [[maybe_unused]] const ssize_t n = ::write(fd, &byte, 1);
  }
  errno = saved_errno;
}

}  // namespace

const char* signal_name(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "a signal";
  }
}

SignalBridge::SignalBridge(std::function<void(int, int)> on_signal)
    : on_signal_(std::move(on_signal)) {
  std::tie(read_end_, write_end_) = open_pipe();
  if (!read_end_)
    throw std::runtime_error(std::string("cannot create the signal pipe: ") + std::strerror(errno));
  int expected = -1;
  if (!g_write_end.compare_exchange_strong(expected, write_end_.get())) {
    throw std::logic_error("only one SignalBridge may exist at a time");
  }
  thread_ = std::thread([this] { loop(); });
  struct sigaction sa {};
  sa.sa_handler = write_signal_to_pipe;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // a hook's read() or sleep keeps going; it polls should_stop()
  ::sigaction(SIGINT, &sa, &g_previous_int);
  ::sigaction(SIGTERM, &sa, &g_previous_term);
}

SignalBridge::~SignalBridge() {
  ::sigaction(SIGINT, &g_previous_int, nullptr);
  ::sigaction(SIGTERM, &g_previous_term, nullptr);
  g_write_end = -1;
  const unsigned char quit = 0;
  [[maybe_unused]] ssize_t n = ::write(write_end_.get(), &quit, 1);
  thread_.join();
}

void SignalBridge::loop() {
  for (;;) {
    unsigned char byte = 0;
    const ssize_t n = ::read(read_end_.get(), &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || byte == 0) return;
    on_signal_(byte, ++count_);
  }
}

}  // namespace hookhost
