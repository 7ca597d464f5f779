// hookhost ctl's protocol (docs/operations.md): one request per connection, one line of
// tab-separated words ending in '\n' (a verb, then its arguments); the reply is "ok" or "error" on
// its first line ("refused" for an error that wants the operator's consent), then text, and the
// job closes the connection. Before its request, a client sends the job's token
// (control/token.hpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace hookhost::control {

// The socket's name in the run directory.
inline constexpr const char* kSocketName = "control.sock";
// A request longer than this is refused unread.
inline constexpr std::size_t kMaxRequestBytes = 64 * 1024;

struct Reply {
  bool ok = false;
  std::string text;  // what the caller prints; lines end in '\n'
  // Not ok for want of the operator's consent on the command line (`set` without
  // --allow-widen): hookhost ctl exits 2, as for a usage error. Sent as "refused".
  bool needs_consent = false;
};

// "status\n", "attach\tNAME\tPLUGIN\tKEY=VALUE\n", ... Throws std::invalid_argument when a word
// holds a tab, a newline or a NUL (it could not be told apart from the next word).
std::string encode_request(const std::vector<std::string>& words);
// The words of one request line (without its '\n'); nullopt when it is empty.
std::optional<std::vector<std::string>> decode_request(const std::string& line);

std::string encode_reply(const Reply& reply);
// A reply as received: its first line says ok or error. A reply cut short is an error saying so.
Reply decode_reply(const std::string& bytes);

}  // namespace hookhost::control
