#include "control/client.hpp"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <stdexcept>

#include "control/server.hpp"
#include "control/token.hpp"
#include "support/unique_fd.hpp"

namespace hookhost::control {
namespace fs = std::filesystem;

namespace {

// poll for input on `fd`, at most `wait`. With `interrupted`, every signal stays blocked from the
// look at the flag until ppoll waits, so one that comes just before the wait interrupts it rather
// than being missed (a Ctrl-C between the request's send and the wait).
int wait_readable(int fd, std::chrono::milliseconds wait,
                  const volatile std::sig_atomic_t* interrupted) {
  pollfd p{fd, POLLIN, 0};
  if (!interrupted) return ::poll(&p, 1, static_cast<int>(wait.count()));
  sigset_t all, previous;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, &previous);
  if (*interrupted) {
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw Interrupted();
  }
  const timespec limit{static_cast<time_t>(wait.count() / 1000),
                       static_cast<long>(wait.count() % 1000) * 1000000};
  const int ready = ::ppoll(&p, 1, &limit, &previous);
  const int error = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  errno = error;
  return ready;
}

}  // namespace

Reply send_request(const fs::path& run_dir, const std::vector<std::string>& words,
                   std::chrono::milliseconds timeout,
                   const volatile std::sig_atomic_t* interrupted) {
  const auto check_interrupted = [&] {
    if (interrupted && *interrupted) throw Interrupted();
  };
  std::string request = encode_request(words);
  const fs::path socket_path = run_dir / kSocketName;
  UniqueFd folder(::open(run_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!folder)
    throw std::runtime_error(run_dir.string() + ": " + std::strerror(errno) +
                             " (name the run directory of a running job: its [run] run_dir or "
                             "--run-dir)");
  // The job's token goes first; without it the job refuses and says so.
  std::string why_no_token;
  if (const std::optional<std::string> token = read_token(folder.get(), &why_no_token))
    request = encode_request({kTokenWord, *token}) + request;
  else if (fs::exists(socket_path))
    throw std::runtime_error("cannot read the job's control token (" + why_no_token +
                             "): only the job's own user may control it, from outside its hooks");
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string name = socket_address_in(folder.get());
  std::memcpy(address.sun_path, name.c_str(), name.size() + 1);
  int connected;
  // A Unix socket's connect waits only while the job's queue is full; interrupted, it is retried.
  while ((connected = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address),
                                sizeof address)) != 0 &&
         errno == EINTR)
    check_interrupted();
  if (connected != 0) {
    const int error = errno;
    if (error == ENOENT)
      throw std::runtime_error(
          "no job is running in " + run_dir.string() + " (it has no " + kSocketName +
          "): the job has ended or was never started there, or it is a rank folder of a "
          "distributed job, whose live control is the chief's run directory");
    if (error == ECONNREFUSED)
      throw std::runtime_error("no job listens on " + socket_path.string() +
                               " (a job that was killed leaves it behind; the next run of the "
                               "job replaces it)");
    if (error == EACCES)
      throw std::runtime_error(socket_path.string() +
                               ": permission denied: only the job's own user may control it");
    throw std::runtime_error(socket_path.string() + ": connect: " + std::strerror(error));
  }
  // Whoever listens on the name gets the token: it must be this user's job, not a socket another
  // user left in a shared folder.
  ucred server{};
  socklen_t size = sizeof server;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &server, &size) != 0)
    throw std::runtime_error(socket_path.string() + ": SO_PEERCRED: " + std::strerror(errno));
  if (server.uid != ::geteuid())
    throw std::runtime_error(socket_path.string() + " is served by uid " +
                             std::to_string(server.uid) + ", not by you (uid " +
                             std::to_string(::geteuid()) +
                             "): it is not your job's; nothing was sent to it (run your jobs in "
                             "a folder only you can write)");
  for (std::size_t done = 0; done < request.size();) {
    const ssize_t n = ::send(fd.get(), request.data() + done, request.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) {
      check_interrupted();
      continue;
    }
    if (n <= 0) break;  // the job answered before reading it all (a refusal): read its answer
    done += static_cast<std::size_t>(n);
  }
  std::string reply;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    const int ready = left.count() > 0 ? wait_readable(fd.get(), left, interrupted) : 0;
    if (ready < 0 && errno == EINTR) {
      check_interrupted();
      continue;
    }
    if (ready == 0)
      throw std::runtime_error("the job in " + run_dir.string() + " did not answer within " +
                               std::to_string(timeout.count()) +
                               " ms (it answers one request at a time; try again, or a longer "
                               "--timeout)");
    const ssize_t n = ::recv(fd.get(), buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) {
      check_interrupted();
      continue;
    }
    if (n <= 0) break;
    reply.append(buffer, static_cast<std::size_t>(n));
  }
  // Closed with no byte: the job ended between the connection and its answer (its server stopped
  // with this connection still queued), as good as no job.
  if (reply.empty())
    throw std::runtime_error("the job in " + run_dir.string() +
                             " closed the connection without an answer: it has ended");
  return decode_reply(reply);
}

}  // namespace hookhost::control
