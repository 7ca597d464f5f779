#include "channel.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace hookhost::sandbox {

namespace {

constexpr size_t kHeaderBytes = sizeof(FrameHeader);
constexpr size_t kMaxFdsPerFrame = 4;  // room to receive (and close) a peer's surplus descriptors

std::string errno_text(const char* what, int error) {
  return std::string(what) + ": " + std::strerror(error);
}

// A deadline as ppoll's timeout: NULL for none, zero when it has passed.
const timespec* remaining(Clock::time_point deadline, timespec* out) {
  if (deadline == kNoDeadline) return nullptr;
  const auto left = deadline - Clock::now();
  const auto ns =
      std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(left).count());
  out->tv_sec = static_cast<time_t>(ns / 1000000000);
  out->tv_nsec = static_cast<long>(ns % 1000000000);
  return out;
}

}  // namespace

Channel::Channel(UniqueFd socket) : socket_(std::move(socket)) {}

std::pair<UniqueFd, UniqueFd> Channel::make_pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0)
    throw std::system_error(errno, std::generic_category(), "socketpair");
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

ChannelStatus Channel::malformed(std::string why) {
  error_ = std::move(why);
  return ChannelStatus::malformed;
}

ChannelStatus Channel::wait_for(short events, Clock::time_point deadline, int watch_fd) {
  for (;;) {
    pollfd fds[2] = {{socket_.get(), events, 0}, {watch_fd, POLLIN, 0}};
    timespec ts;
    const int n = ::ppoll(fds, watch_fd >= 0 ? 2 : 1, remaining(deadline, &ts), nullptr);
    if (n < 0) {
      if (errno == EINTR) continue;
      error_ = errno_text("poll", errno);
      return ChannelStatus::failed;
    }
    if (n == 0) return ChannelStatus::timed_out;
    // Readable data, a hang-up or an error on the socket: let the caller's recv/send say which.
    if (fds[0].revents) return ChannelStatus::ok;
    if (watch_fd >= 0 && fds[1].revents) return ChannelStatus::watch_ready;
  }
}

ChannelStatus Channel::send(MessageType type, uint32_t instance, std::span<const std::byte> payload,
                            Clock::time_point deadline, int watch_fd, int attach) {
  if (!socket_) return ChannelStatus::closed;
  size_t offset = 0;
  bool first = true;
  do {
    const size_t chunk = std::min(payload.size() - offset, kMaxFrameBytes - kHeaderBytes);
    FrameHeader header{kFrameMagic, static_cast<uint16_t>(type),
                       static_cast<uint16_t>(offset + chunk < payload.size() ? kFrameContinues : 0),
                       instance};
    iovec iov[2] = {{&header, kHeaderBytes},
                    {const_cast<std::byte*>(payload.data()) + offset, chunk}};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = chunk ? 2 : 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (first && attach >= 0) {
      std::memset(control, 0, sizeof control);
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
      cmsg->cmsg_level = SOL_SOCKET;
      cmsg->cmsg_type = SCM_RIGHTS;
      cmsg->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(cmsg), &attach, sizeof(int));
    }
    for (;;) {
      // A packet socket sends a frame whole or not at all.
      if (::sendmsg(socket_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0) break;
      const int error = errno;
      if (error == EINTR) continue;
      if (error == EAGAIN || error == EWOULDBLOCK) {
        const ChannelStatus waited = wait_for(POLLOUT, deadline, watch_fd);
        if (waited != ChannelStatus::ok) return waited;
        continue;
      }
      if (error == EPIPE || error == ECONNRESET || error == ENOTCONN) return ChannelStatus::closed;
      error_ = errno_text("send", error);
      return ChannelStatus::failed;
    }
    offset += chunk;
    first = false;
  } while (offset < payload.size());
  return ChannelStatus::ok;
}

ChannelStatus Channel::receive(Message& out, Clock::time_point deadline, int watch_fd) {
  out.payload.clear();
  out.fd.reset();
  if (!socket_) return ChannelStatus::closed;
  frame_.resize(kMaxFrameBytes);
  bool first = true;
  for (;;) {
    const ChannelStatus waited = wait_for(POLLIN, deadline, watch_fd);
    if (waited != ChannelStatus::ok) return waited;
    iovec iov{frame_.data(), frame_.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerFrame)];
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(socket_.get(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) {
      const int error = errno;
      if (error == EINTR || error == EAGAIN || error == EWOULDBLOCK) continue;
      if (error == ECONNRESET) return ChannelStatus::closed;
      error_ = errno_text("receive", error);
      return ChannelStatus::failed;
    }
    // Descriptors first, so every one received is owned (and closed) whatever follows.
    std::vector<UniqueFd> fds;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        fds.emplace_back(fd);
      }
    }
    if (n == 0) return ChannelStatus::closed;  // frames are never empty: this is end of file
    if (msg.msg_flags & MSG_TRUNC)
      return malformed("a frame longer than " + std::to_string(kMaxFrameBytes) + " bytes");
    if (msg.msg_flags & MSG_CTRUNC) return malformed("too many descriptors with one frame");
    if (static_cast<size_t>(n) < kHeaderBytes)
      return malformed("a frame of " + std::to_string(n) + " bytes, shorter than its header");
    FrameHeader header;
    std::memcpy(&header, frame_.data(), kHeaderBytes);
    if (header.magic != kFrameMagic) return malformed("a frame without the protocol's magic");
    if (fds.size() > 1 || (!fds.empty() && !first))
      return malformed("a descriptor where none was expected");
    if (first) {
      out.type = static_cast<MessageType>(header.type);
      out.instance = header.instance;
      if (!fds.empty()) out.fd = std::move(fds.front());
    } else if (header.type != static_cast<uint16_t>(out.type) || header.instance != out.instance) {
      return malformed("a continuation frame of another message");
    }
    const size_t body = static_cast<size_t>(n) - kHeaderBytes;
    if (out.payload.size() + body > kMaxMessageBytes)
      return malformed("a message longer than " + std::to_string(kMaxMessageBytes) + " bytes");
    out.payload.insert(out.payload.end(), frame_.begin() + kHeaderBytes, frame_.begin() + n);
    if (!(header.flags & kFrameContinues)) return ChannelStatus::ok;
    first = false;
  }
}

}  // namespace hookhost::sandbox
