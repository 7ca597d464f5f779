#include "control/server.hpp"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

namespace hookhost::control {
namespace fs = std::filesystem;

namespace {

std::runtime_error socket_error(const fs::path& path, const std::string& what) {
  return std::runtime_error("control socket " + path.string() + ": " + what + ": " +
                            std::strerror(errno));
}

// Reads one request line, waiting at most `limit` for it. Empty when none came whole.
std::string read_line(int fd, std::chrono::milliseconds limit) {
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  char buffer[4096];
  while (line.size() <= kMaxRequestBytes) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return {};
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return {};
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return {};
    line.append(buffer, static_cast<std::size_t>(n));
    if (const std::size_t eol = line.find('\n'); eol != std::string::npos) {
      line.resize(eol);
      return line.empty() ? std::string(1, '\0') : line;  // an empty line is a bad request
    }
  }
  return {};
}

void send_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the caller went away: nothing to tell
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

std::string socket_address_in(int folder_fd) {
  return "/proc/self/fd/" + std::to_string(folder_fd) + "/" + kSocketName;
}

Server::Server(const fs::path& run_dir, Handler handler, std::function<void()> tick,
               std::chrono::milliseconds tick_interval)
    : path_(run_dir / kSocketName),
      handler_(std::move(handler)),
      tick_(std::move(tick)),
      tick_interval_(tick_interval) {
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
  listener_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener_) throw socket_error(path_, "socket");
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string name = socket_address_in(folder_.get());
  std::memcpy(address.sun_path, name.c_str(), name.size() + 1);
  if (::bind(listener_.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
    throw socket_error(path_, "bind");
  // The owner only; SO_PEERCRED below is the check that counts (a connect may come before this).
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
}

void Server::serve() {
  for (;;) {
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {stop_read_.get(), POLLIN, 0}};
    const int ready = ::poll(fds, 2, static_cast<int>(tick_interval_.count()));
    if (ready < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    if (tick_) tick_();
    if (ready <= 0 || !(fds[0].revents & POLLIN)) continue;
    UniqueFd connection(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (connection) answer(std::move(connection));
  }
}

void Server::answer(UniqueFd connection) {
  ucred peer{};
  socklen_t size = sizeof peer;
  if (::getsockopt(connection.get(), SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0) return;
  if (peer.uid != ::geteuid()) {
    send_all(connection.get(),
             encode_reply({false, "refused: this job answers only its own user (uid " +
                                      std::to_string(::geteuid()) + "), not uid " +
                                      std::to_string(peer.uid) + "\n"}));
    return;
  }
  const std::string line = read_line(connection.get(), std::chrono::seconds(5));
  Reply reply;
  const auto words = line == std::string(1, '\0') ? std::nullopt : decode_request(line);
  if (!words) {
    reply = {false, "a request is one line of tab-separated words ending in a newline, at most " +
                        std::to_string(kMaxRequestBytes) + " bytes, sent within 5 s\n"};
  } else {
    try {
      reply = handler_(*words);
    } catch (const std::exception& e) {
      reply = {false, std::string(e.what()) + "\n"};
    }
  }
  send_all(connection.get(), encode_reply(reply));
}

}  // namespace hookhost::control
