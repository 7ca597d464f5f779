// Framed messages over one end of an AF_UNIX SOCK_SEQPACKET socketpair: the packet boundaries
// keep frames whole, a closed peer reads as end of file, and a descriptor can travel with a
// message (SCM_RIGHTS). Every wait is a poll with the remaining deadline, optionally also on a
// second descriptor (a pidfd, so the death of the peer process is seen at once): no busy waiting
// and no unbounded block unless the caller asks for one. Used by one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "protocol.hpp"
#include "support/unique_fd.hpp"

namespace hookhost::sandbox {

using Clock = std::chrono::steady_clock;
inline constexpr Clock::time_point kNoDeadline = Clock::time_point::max();

struct Message {
  MessageType type = MessageType::echo;
  uint32_t instance = 0;
  std::vector<std::byte> payload;
  UniqueFd fd;  // the descriptor that came with the message, if any
};

enum class ChannelStatus {
  ok,
  closed,       // the peer closed its end (or died)
  timed_out,    // the deadline passed
  watch_ready,  // the watched descriptor became readable first (the peer process ended)
  malformed,    // the peer sent something that is not a frame of this protocol (error() says)
  failed,       // a system call failed (error() says)
};

class Channel {
 public:
  Channel() = default;
  explicit Channel(UniqueFd socket);

  // A connected pair, both ends close-on-exec. Throws std::system_error.
  static std::pair<UniqueFd, UniqueFd> make_pair();

  int fd() const { return socket_.get(); }
  explicit operator bool() const { return static_cast<bool>(socket_); }
  void close() { socket_.reset(); }

  // Sends one message, cut into frames; `attach` (unless -1) travels with the first frame and
  // stays owned by the caller. Waits for room in the socket until `deadline`.
  ChannelStatus send(MessageType type, uint32_t instance, std::span<const std::byte> payload,
                     Clock::time_point deadline = kNoDeadline, int watch_fd = -1, int attach = -1);

  // Receives one whole message. Data already sent wins over the watched descriptor, so a peer's
  // last words are read before its death is reported.
  ChannelStatus receive(Message& out, Clock::time_point deadline = kNoDeadline, int watch_fd = -1);

  // Why the last call returned malformed or failed.
  const std::string& error() const { return error_; }

 private:
  // Waits until the socket has `events`; ok, timed_out, watch_ready or failed.
  ChannelStatus wait_for(short events, Clock::time_point deadline, int watch_fd);
  ChannelStatus malformed(std::string why);

  UniqueFd socket_;
  std::vector<std::byte> frame_;  // one frame, reused
  std::string error_;
};

}  // namespace hookhost::sandbox
