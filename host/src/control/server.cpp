#include "control/server.hpp"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "control/token.hpp"

namespace hookhost::control {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// How long accepting rests when descriptors run short: doubled while they stay short.
constexpr milliseconds kFirstRest{50};
constexpr milliseconds kLongestRest{1000};
// How long a reply may wait for a client that does not read it.
constexpr milliseconds kSendLimit{2000};

std::runtime_error socket_error(const fs::path& path, const std::string& what) {
  return std::runtime_error("control socket " + path.string() + ": " + what + ": " +
                            std::strerror(errno));
}

void send_all(int fd, const std::string& bytes) {
  const auto deadline = Clock::now() + kSendLimit;
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n =
        ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      pollfd p{fd, POLLOUT, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) == 0) return;
      continue;
    }
    if (n <= 0) return;  // the caller went away: nothing to tell
    done += static_cast<std::size_t>(n);
  }
}

int poll_timeout(Clock::time_point until) {
  const auto left = std::chrono::duration_cast<milliseconds>(until - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left + 1, 0, 60000));
}

}  // namespace

struct Server::Waiting {
  UniqueFd fd;
  pid_t pid = 0;
  std::string bytes;
  Clock::time_point deadline;
};

std::string socket_address_in(int folder_fd) {
  return "/proc/self/fd/" + std::to_string(folder_fd) + "/" + kSocketName;
}

Server::Server(const fs::path& run_dir, Handler handler, Options options)
    : path_(run_dir / kSocketName), handler_(std::move(handler)), options_(std::move(options)) {
  folder_.reset(::open(run_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!folder_) throw socket_error(path_, "cannot open its folder");
  // A socket left by a killed job: nothing listens on it (the run directory's lock says so).
  struct stat st {};
  if (::fstatat(folder_.get(), kSocketName, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!S_ISSOCK(st.st_mode))
      throw std::runtime_error("control socket " + path_.string() +
                               ": a file that is not a socket has its name; move it away");
    if (::unlinkat(folder_.get(), kSocketName, 0) != 0)
      throw socket_error(path_, "cannot remove the one a previous job left");
  }
  token_ = write_token(folder_.get());
  listener_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!listener_) throw socket_error(path_, "socket");
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string name = socket_address_in(folder_.get());
  std::memcpy(address.sun_path, name.c_str(), name.size() + 1);
  if (::bind(listener_.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
    throw socket_error(path_, "bind");
  // The owner only; SO_PEERCRED and the token are the checks that count (a connect may come
  // before this).
  if (::fchmodat(folder_.get(), kSocketName, 0600, 0) != 0) throw socket_error(path_, "chmod");
  if (::listen(listener_.get(), 16) != 0) throw socket_error(path_, "listen");
  auto [read_end, write_end] = open_pipe();
  if (!read_end) throw socket_error(path_, "pipe");
  stop_read_ = std::move(read_end);
  stop_write_ = std::move(write_end);
  thread_ = std::thread([this] { serve(); });
}

Server::~Server() {
  // The name goes first, so no client connects while the thread stops; one queued meanwhile is
  // closed unanswered with the listener, which the client reads as the job gone.
  if (folder_) ::unlinkat(folder_.get(), kSocketName, 0);
  if (stop_write_) (void)!::write(stop_write_.get(), "x", 1);
  if (thread_.joinable()) thread_.join();
  if (folder_) remove_token(folder_.get());
}

void Server::serve() {
  std::vector<Waiting> waiting;
  auto next_tick = Clock::now() + options_.tick_interval;
  Clock::time_point rest_until{};  // accepting rests until then (descriptors ran short)
  milliseconds rest = kFirstRest;
  std::vector<pollfd> fds;
  for (;;) {
    auto now = Clock::now();
    if (now >= next_tick) {
      if (options_.tick) options_.tick();
      next_tick = now + options_.tick_interval;
    }
    const bool accepting = now >= rest_until && waiting.size() < options_.max_waiting;
    fds.assign({{stop_read_.get(), POLLIN, 0}, {accepting ? listener_.get() : -1, POLLIN, 0}});
    auto wake = next_tick;
    if (!accepting && now < rest_until) wake = std::min(wake, rest_until);
    for (const Waiting& w : waiting) {
      fds.push_back({w.fd.get(), POLLIN, 0});
      wake = std::min(wake, w.deadline);
    }
    const int ready = ::poll(fds.data(), fds.size(), poll_timeout(wake));
    if (ready < 0 && errno != EINTR) return;
    if (ready > 0 && fds[0].revents != 0) return;
    // Requests that came whole are answered in the order of their connections; the time spent
    // answering is not counted against the others' deadlines.
    for (std::size_t i = 0; ready > 0 && i < waiting.size(); ++i) {
      if (fds[i + 2].revents == 0) continue;
      const auto started = Clock::now();
      if (read_ready(waiting[i])) waiting[i].fd.reset();
      const auto busy = Clock::now() - started;
      for (Waiting& w : waiting) w.deadline += busy;
    }
    now = Clock::now();
    for (Waiting& w : waiting)
      if (w.fd && now >= w.deadline)
        send_all(w.fd.get(),
                 encode_reply({false,
                               "a request is the control token's line, then one line of "
                               "tab-separated words ending in a newline, at most " +
                                   std::to_string(kMaxRequestBytes) + " bytes, sent within " +
                                   std::to_string(options_.request_limit.count()) + " ms\n"}));
    std::erase_if(waiting, [&](const Waiting& w) { return !w.fd || now >= w.deadline; });
    if (ready > 0 && (fds[1].revents & POLLIN)) {
      if (const int shortage = accept_ready(waiting); shortage == 0) {
        rest = kFirstRest;
      } else {
        // The connection stays queued, so the listener stays readable: polling it again at once
        // would spin. Accepting rests, and takes it once descriptors are free again.
        if (rest == kFirstRest && options_.note)
          options_.note("cannot accept a connection: " + std::string(std::strerror(shortage)) +
                        "; accepting rests until descriptors are free");
        rest_until = Clock::now() + rest;
        rest = std::min(rest * 2, kLongestRest);
      }
    }
  }
}

int Server::accept_ready(std::vector<Waiting>& waiting) {
  while (waiting.size() < options_.max_waiting) {
    UniqueFd connection(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!connection) {
      const int error = errno;
      if (error == EINTR || error == ECONNABORTED) continue;
      if (error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM) return error;
      return 0;  // EAGAIN: nothing more queued
    }
    Waiting w;
    w.fd = std::move(connection);
    w.deadline = Clock::now() + options_.request_limit;
    ucred peer{};
    socklen_t size = sizeof peer;
    if (::getsockopt(w.fd.get(), SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0) continue;
    w.pid = peer.pid;
    if (peer.uid != ::geteuid()) {
      refuse(w, "this job answers only its own user (uid " + std::to_string(::geteuid()) +
                    "), not uid " + std::to_string(peer.uid));
      continue;
    }
    if (options_.check_peer)
      if (const std::string why = options_.check_peer(peer.pid); !why.empty()) {
        refuse(w, why);
        continue;
      }
    waiting.push_back(std::move(w));
  }
  return 0;
}

void Server::refuse(Waiting& connection, const std::string& why) {
  send_all(connection.fd.get(), encode_reply({false, "refused: " + why + "\n"}));
  if (options_.note) options_.note("refused: " + why);
}

bool Server::read_ready(Waiting& w) {
  char buffer[4096];
  const ssize_t n = ::recv(w.fd.get(), buffer, sizeof buffer, MSG_DONTWAIT);
  if (n < 0) return errno != EINTR && errno != EAGAIN;
  if (n == 0) return true;  // gone before its request came whole
  w.bytes.append(buffer, static_cast<std::size_t>(n));
  const std::size_t first = w.bytes.find('\n');
  if (first == std::string::npos) {
    if (w.bytes.size() <= kMaxRequestBytes) return false;
    refuse(w, "no valid control token (the peer, pid " + std::to_string(w.pid) + ")");
    return true;
  }
  const auto token_words = decode_request(w.bytes.substr(0, first));
  if (!token_words || token_words->size() != 2 || (*token_words)[0] != kTokenWord ||
      !same_token((*token_words)[1], token_)) {
    refuse(w, "no valid control token (the peer, pid " + std::to_string(w.pid) +
                  ", sent none that matches the job's)");
    return true;
  }
  const std::size_t second = w.bytes.find('\n', first + 1);
  if (second == std::string::npos) {
    if (w.bytes.size() - first - 1 <= kMaxRequestBytes) return false;
    send_all(w.fd.get(), encode_reply({false, "a request is at most " +
                                                  std::to_string(kMaxRequestBytes) + " bytes\n"}));
    return true;
  }
  const std::string line = w.bytes.substr(first + 1, second - first - 1);
  const auto words = decode_request(line);
  Reply reply;
  if (!words) {
    reply = {false, "a request is one line of tab-separated words ending in a newline\n"};
  } else {
    try {
      reply = handler_(*words);
    } catch (const std::exception& e) {
      reply = {false, std::string(e.what()) + "\n"};
    }
  }
  send_all(w.fd.get(), encode_reply(reply));
  return true;
}

}  // namespace hookhost::control
