// libFuzzer target for hookhost ctl's protocol as the job reads it: one connection's bytes through
// the job's real control server (the token line, the request line, their limits), and the words
// of a `set` or `attach` request turned into configuration overrides as live control turns them.
// Any process of the job's user may connect, a hook granted the network among them, so every byte
// is untrusted.
//
// Input: a first byte whose low bit says whether the job's real token line comes first (else the
// bytes must bring their own, which never matches), then the bytes sent on one connection.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "control/protocol.hpp"
#include "control/server.hpp"
#include "control/token.hpp"
#include "hookhost/host/config.hpp"

namespace {

using namespace hookhost;

// What live control does with a request's words before it touches a hook: `set NAME.KEY=VALUE...`
// and `attach NAME PLUGIN KEY=VALUE...` become --set overrides the configuration reader checks.
control::Reply handle(const std::vector<std::string>& words) {
  if (words.empty()) return {false, "expected a verb\n"};
  std::vector<std::string> overrides;
  if (words[0] == "set") {
    for (std::size_t i = 1; i < words.size(); ++i) overrides.push_back("hook." + words[i]);
  } else if (words[0] == "attach" && words.size() >= 3) {
    overrides.push_back("hook." + words[1] + ".plugin=" + words[2]);
    for (std::size_t i = 3; i < words.size(); ++i)
      overrides.push_back("hook." + words[1] + "." + words[i]);
  } else {
    return {true, "status\n"};
  }
  try {
    load_job_config(std::nullopt, overrides);
  } catch (const ConfigError& e) {
    return {false, std::string(e.what()) + "\n"};
  }
  return {true, "changed\n"};
}

struct Job {
  std::filesystem::path run_dir;
  std::unique_ptr<control::Server> server;
  std::string token_line;
};

Job& job() {
  static Job* the_job = [] {
    auto* j = new Job;
    char folder[] = "/tmp/hookhost-fuzz-control-XXXXXX";
    if (!::mkdtemp(folder)) std::abort();
    j->run_dir = folder;
    control::Server::Options options;
    options.check_peer = [](pid_t) { return std::string(); };
    j->server = std::make_unique<control::Server>(j->run_dir, handle, options);
    const int dir = ::open(folder, O_PATH | O_DIRECTORY | O_CLOEXEC);
    std::string why;
    const std::optional<std::string> token = control::read_token(dir, &why);
    if (!token) std::abort();
    ::close(dir);
    j->token_line = control::encode_request({control::kTokenWord, *token});
    return j;
  }();
  return *the_job;
}

// Sends `bytes` on a new connection, ends the sending side, and reads the reply to its end.
std::string exchange(const std::string& bytes) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) std::abort();
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string path = (job().run_dir / control::kSocketName).string();
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) std::abort();
  for (std::size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the job answered early (a refusal) and closed
    sent += static_cast<std::size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string reply;
  char buffer[4096];
  for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;)
    reply.append(buffer, static_cast<std::size_t>(n));
  ::close(fd);
  return reply;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool with_token = data[0] & 1;
  const std::string request(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string reply = exchange((with_token ? job().token_line : std::string()) + request);
  if (reply.empty()) return 0;  // the connection ended before a whole request came
  const control::Reply decoded = control::decode_reply(reply);
  // The job answers only with its three first lines.
  const std::string first = reply.substr(0, reply.find('\n'));
  if (first != "ok" && first != "error" && first != "refused") std::abort();
  // Without the job's token nothing is answered but the refusal.
  if (!with_token && (decoded.ok || first != "error")) std::abort();
  return 0;
}
