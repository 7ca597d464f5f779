// The job's end of hookhost ctl: a Unix socket in the run directory, mode 0600. A connection is
// answered only when it comes from the job's own user (SO_PEERCRED), from no process the job
// refuses (a hook's runner or anything it started: Options::check_peer), and sends the job's
// control token (control/token.hpp) before its request. One thread serves: connections are read
// side by side, each within its own deadline, so an idle one holds up no other; requests are
// answered one at a time, in the order they arrive whole, so changes apply in the order received.
#pragma once

#include <sys/types.h>

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
  struct Options {
    // Called on the server's thread about every `tick_interval`.
    std::function<void()> tick;
    std::chrono::milliseconds tick_interval{200};
    // Why a connection from process `pid` is refused ("the peer (pid 12) is hook 'x''s runner"),
    // or "" to admit it.
    std::function<std::string(pid_t pid)> check_peer;
    // Told each refusal and each trouble accepting (for the job's log).
    std::function<void(const std::string& text)> note;
    // How long a connection may take to send its request (the time spent answering others is
    // not counted).
    std::chrono::milliseconds request_limit{5000};
    std::size_t max_waiting = 64;  // connections read at once; more wait in the listen queue
  };

  // Listens on <run_dir>/control.sock, replacing one a killed job left behind (the caller holds
  // the run directory's lock), writes a new control token, and starts serving. Throws
  // std::runtime_error naming the socket.
  Server(const std::filesystem::path& run_dir, Handler handler, Options options);
  ~Server();  // stops serving (a request being answered is finished first), removes the socket
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  struct Waiting;
  void serve();
  // Accepts what the listener holds; the errno when it must rest (descriptors ran short), else 0.
  int accept_ready(std::vector<Waiting>& waiting);
  // Reads what came; true when the connection is done with (answered, refused or gone).
  bool read_ready(Waiting& connection);
  void refuse(Waiting& connection, const std::string& why);

  std::filesystem::path path_;
  UniqueFd folder_;  // the run directory, O_PATH: the socket is named through it
  UniqueFd listener_;
  UniqueFd stop_read_, stop_write_;
  Handler handler_;
  Options options_;
  std::string token_;
  std::thread thread_;
};

// The socket's address through an open folder (/proc/self/fd/N/control.sock): a run directory's
// path may be longer than a socket address holds.
std::string socket_address_in(int folder_fd);

}  // namespace hookhost::control
