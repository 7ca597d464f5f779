// The job's end of hookhost ctl: a Unix socket in the run directory, mode 0600, answering only
// processes of the job's own user (SO_PEERCRED). One thread serves the connections one at a time,
// in the order they arrive, so changes apply in the order received.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "control/protocol.hpp"
#include "support/unique_fd.hpp"

namespace hookhost::control {

class Server {
 public:
  // Answers one request's words (on the server's thread). What it throws becomes an error reply.
  using Handler = std::function<Reply(const std::vector<std::string>& words)>;

  // Listens on <run_dir>/control.sock, replacing one a killed job left behind (the caller holds
  // the run directory's lock), and starts serving. `tick` is called on the server's thread about
  // every `tick_interval` while it waits. Throws std::runtime_error naming the socket.
  Server(const std::filesystem::path& run_dir, Handler handler, std::function<void()> tick = {},
         std::chrono::milliseconds tick_interval = std::chrono::milliseconds(200));
  ~Server();  // stops serving (a request being answered is finished first), removes the socket
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  void serve();
  void answer(UniqueFd connection);

  std::filesystem::path path_;
  UniqueFd folder_;  // the run directory, O_PATH: the socket is named through it
  UniqueFd listener_;
  UniqueFd stop_read_, stop_write_;
  Handler handler_;
  std::function<void()> tick_;
  std::chrono::milliseconds tick_interval_;
  std::thread thread_;
};

// The socket's address through an open folder (/proc/self/fd/N/control.sock): a run directory's
// path may be longer than a socket address holds.
std::string socket_address_in(int folder_fd);

}  // namespace hookhost::control
