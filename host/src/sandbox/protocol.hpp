// What the host and a hookhost-runner say to each other. Shared by both programs, which are built
// from one tree, so the layout needs no negotiation beyond a magic number and a version checked
// in the load message.
//
// A message is a type, an instance id (the instances of one isolation group share a runner) and a
// payload of fields written by Writer and read back by Reader in the order given below. Every
// request of one side gets exactly one reply from the other, in order, on the same socket.
//
// host -> runner                                      runner -> host (reply)
//   load      u32 version, the note (put_metadata),    loaded      u8 ok, text error,
//             its SHA-256 + one fd: the plugin's bytes              u32 state_version
//             (a sealed memfd; never a path)
//   create    name, run dir, u32 services, params        created     see CreateReply in runner
//   call      u8 callback, arguments (below)             call_result u8 end, i32 status, i32 code,
//                                                                    text message
//   map_values u64 size, u64 generation + one fd         values_mapped u8 ok, u64 base address,
//                                                                   text error
//   observe   u8 call before_run, 2 contexts (before,   call_result (before_run's, when it was
//             after), [u32 n, n names it asked for       called: sent as soon as it returns) +
//             when before_run is not called], values    u32 n, n names it asked for; then
//             as after_run's                             observed    u8 after_run called, its
//                                                                    call_result fields if so
//   destroy                                              destroyed   text error
//   shutdown  (no reply: the runner exits 0)
//   service_reply  the answer to a service_request (the runner asked during one of the above)
//
// runner -> host, at any time during one of the host's requests (main channel) or at any time at
// all (side channel, for plugin threads): service_request u16 op, arguments; answered by one
// service_reply. The host validates each argument as it would a plugin's, through the real hh_host.
// Protocol 5: every forwarded function is one op with its row's codecs (rank, world_size and
// is_chief each have their own). Protocol 6: observe (an observer's step in one message).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "hookhost/host/plugin_metadata.hpp"
#include "services/host_functions.hpp"

namespace hookhost::sandbox {

inline constexpr uint32_t kFrameMagic = 0x42534848;  // "HHSB" in memory order
inline constexpr uint32_t kProtocolVersion = 6;

// A frame fits the default AF_UNIX send buffer (212992 bytes); a longer message is cut into
// frames. A message is never longer than kMaxMessageBytes: a larger one is refused unread.
inline constexpr size_t kMaxFrameBytes = 64 * 1024;
inline constexpr size_t kMaxMessageBytes = size_t{256} * 1024 * 1024;
// The most bytes of one plugin-supplied blob (a state, a feed's data) the runner sends.
inline constexpr size_t kMaxTransferBytes = kMaxMessageBytes - 64 * 1024;
static_assert(std::is_same_v<fn::state_put::Codecs, TypeList<arg::Bytes<kMaxTransferBytes>>>,
              "state_put's bytes are bounded by what one message carries");

// The runner's file descriptors, set up by the host when it spawns it.
inline constexpr int kRunnerChannelFd = 3;      // requests and replies of the hook thread
inline constexpr int kRunnerSideChannelFd = 4;  // host calls made by other plugin threads

enum class MessageType : uint16_t {
  // host -> runner
  load = 1,
  create = 2,
  call = 3,
  map_values = 4,
  destroy = 5,
  shutdown = 6,
  service_reply = 7,
  observe = 8,
  // runner -> host
  loaded = 32,
  created = 33,
  call_result = 34,
  values_mapped = 35,
  destroyed = 36,
  service_request = 37,
  observed = 38,
  // the benchmark's raw round trip
  echo = 100,
};
const char* message_type_name(MessageType type);

struct FrameHeader {
  uint32_t magic;
  uint16_t type;
  uint16_t flags;
  uint32_t instance;
};
inline constexpr uint16_t kFrameContinues = 1;  // another frame of this message follows

// The lifecycle call a `call` message carries: the Callback index of hook_dispatch.hpp.
//   0 begin                  (no arguments)
//   1 after_create_session   u32 creation, i64 global_step
//   2 before_run             i32 stop_requested, i64 global_step, i64 iteration
//   3 after_run              the same context, u32 count, then per value: u64 name offset,
//                            u64 shape offset, u32 rank, i32 dtype, u64 data offset, u64 byte
//                            size (offsets into the values arena, see shared_values.hpp)
//   4 end                    i32 outcome, i32 stop cause, text reason, i64 global_step
inline constexpr uint8_t kCallbackCount = 5;

// Host calls a plugin makes in the runner, forwarded as a service_request: u16 op, then the
// arguments as the row of the function (services/host_functions.hpp) says they travel
// (host_call_codec.hpp); the service_reply is the result, then each argument's reply part.
using ServiceOp = HostOp;
// The function an op forwards ("hh.summary/1 add_scalar"), or "unknown".
const char* service_op_name(ServiceOp op);

// The optional services the host offers the instance: ServiceTable<T>::offered_bit of each
// BuiltinServices table get_service answers for (a u32 of the create message).
uint32_t offered_services(const hh_host& host);

// How a plugin function ended in the runner.
enum class CallEnd : uint8_t { returned = 0, exception = 1, unknown_exception = 2 };

// Builds a payload. Fields are written in native byte order: both ends run on one machine.
class Writer {
 public:
  template <typename T>
  requires std::is_trivially_copyable_v<T>
  void put(T value) {
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof value);
    std::memcpy(bytes_.data() + at, &value, sizeof value);
  }
  // A length-prefixed run of bytes.
  void put_bytes(const void* data, size_t size);
  void put_text(std::string_view text) { put_bytes(text.data(), text.size()); }
  // A presence byte, then the bytes when present: how a pointer that may be NULL travels.
  void put_optional(const void* data, size_t size);

  std::span<const std::byte> bytes() const { return bytes_; }
  void clear() { bytes_.clear(); }

 private:
  std::vector<std::byte> bytes_;
};

// Reads a payload back. Never reads past the end: a short payload sets failed() and yields zeros
// and empty strings, so a malformed message is detected once, after its fields are read.
class Reader {
 public:
  explicit Reader(std::span<const std::byte> bytes) : bytes_(bytes) {}

  template <typename T>
  requires std::is_trivially_copyable_v<T> T get() {
    T value{};
    if (bytes_.size() - offset_ < sizeof value) {
      failed_ = true;
      offset_ = bytes_.size();
      return value;
    }
    std::memcpy(&value, bytes_.data() + offset_, sizeof value);
    offset_ += sizeof value;
    return value;
  }
  std::string_view get_bytes();
  // An optional written by put_optional: false when absent (or malformed).
  bool get_optional(std::string_view* out);

  bool failed() const { return failed_; }
  // True when every byte was read and none was missing.
  bool complete() const { return !failed_ && offset_ == bytes_.size(); }

 private:
  std::span<const std::byte> bytes_;
  size_t offset_ = 0;
  bool failed_ = false;
};

// A plugin's note as the load message carries it, for the runner's check of the entry symbol.
void put_metadata(Writer& w, const PluginMetadata& metadata);
// Reads it back; check in.complete() afterwards.
PluginMetadata get_metadata(Reader& in);

// A NUL-terminated text a plugin handed over, read as a host function would: at most `max` + 1
// bytes, so a text without a terminator inside the bound is still recognised as too long.
std::string_view bounded_c_text(const char* text, size_t max);

}  // namespace hookhost::sandbox
