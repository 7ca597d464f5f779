// A runner's request is served by its row (services/host_functions.hpp): the arguments are decoded
// with the row's codecs (host_call_codec.hpp) and handed to the instance's real C function, so
// the after-end rule, the thread rule and every check are the in-process ones. The reply is the
// result, then each codec's part.
#include "service_requests.hpp"

#include <array>
#include <tuple>
#include <type_traits>

#include "host_call_codec.hpp"

namespace hookhost::sandbox {

namespace {

// The table a row's function is in, for this instance: nullptr when the host does not offer it
// (or, for the run request, when no before_run is in progress).
template <class F>
auto* table_for(const hh_host& host, hh_run_request* request) {
  using Table = typename F::Table;
  if constexpr (std::is_same_v<Table, hh_host>)
    return &host;
  else if constexpr (std::is_same_v<Table, hh_run_request>)
    return request;
  else
    return static_cast<const Table*>(host.get_service(&host, ServiceTable<Table>::id));
}

template <class F>
auto handle_for(const hh_host& host, hh_run_request* request) {
  if constexpr (std::is_same_v<typename F::Table, hh_run_request>)
    return request;
  else
    return &host;
}

template <class D>
void take_detail(const D& decoded, std::string* why) {
  if constexpr (requires { decoded.why; })
    if (why->empty()) *why = decoded.why;
}

template <class F, class Codecs = typename F::Codecs>
struct Serve;

template <class F, class... Args>
struct Serve<F, TypeList<Args...>> {
  static bool run(const hh_host& host, hh_run_request* request, Reader& in, Writer& reply,
                  std::string* why) {
    std::tuple<typename Codec<Args>::Decoded...> decoded;
    const bool read = std::apply([&](auto&... d) { return (d.read(in) && ... && true); }, decoded);
    if (!read || !in.complete()) {
      why->clear();
      std::apply([&](auto&... d) { (take_detail(d, why), ...); }, decoded);
      if (why->empty()) *why = std::string("a malformed ") + F::name.text + " request";
      return false;
    }
    std::string refusal;
    std::apply([&](auto&... d) { ((refusal.empty() ? void(refusal = d.refusal()) : void()), ...); },
               decoded);
    using R = typename F::Result;
    auto call = [&]() -> R {
      const auto* table = table_for<F>(host, request);
      if (!table) return F::fallback_value();
      if (!refusal.empty()) {
        const std::string text = std::string(F::name.text) + " refused: " + refusal;
        host.log(&host, HH_LOG_ERROR, text.data(), text.size());
        return F::fallback_value();
      }
      auto args = std::apply([](auto&... d) { return std::tuple_cat(d.args()...); }, decoded);
      return std::apply(
          [&](auto... a) { return (table->*F::field)(handle_for<F>(host, request), a...); }, args);
    };
    if constexpr (std::is_void_v<R>) {
      call();
    } else {
      reply.put<R>(call());
    }
    std::apply([&](const auto&... d) { (d.put_reply(reply), ...); }, decoded);
    return true;
  }
};

// state_get: u8 has buffer, u64 capacity; reply i32 status, u64 size, the bytes. The host's buffer
// has room for what is stored now, not for what the plugin's buffer holds; a state that grew
// between the two calls is asked for again.
template <>
struct Serve<fn::state_get> {
  static bool run(const hh_host& host, hh_run_request*, Reader& in, Writer& reply,
                  std::string* why) {
    const bool has_buffer = in.get<uint8_t>() != 0;
    const auto capacity = in.get<uint64_t>();
    if (!in.complete()) {
      *why = "a malformed state_get request";
      return false;
    }
    std::vector<char> buffer;
    size_t size = 0;
    hh_status status = HH_ERROR;
    if (!has_buffer) {
      status = host.state_get(&host, nullptr, capacity, &size);
    } else {
      size_t stored = 0;
      host.state_info(&host, &stored, nullptr);
      for (int attempt = 0; attempt < 8; ++attempt) {
        const size_t room = std::min<uint64_t>(capacity, stored);
        buffer.resize(room);
        size = 0;
        status = host.state_get(&host, room ? buffer.data() : kEmptyBuffer, room, &size);
        if (status == HH_OK || size <= room || size > capacity) break;
        stored = size;
      }
    }
    reply.put<int32_t>(status);
    reply.put<uint64_t>(size);
    reply.put_bytes(buffer.data(), status == HH_OK && has_buffer ? size : 0);
    return true;
  }
};

using Handler = bool (*)(const hh_host&, hh_run_request*, Reader&, Writer&, std::string*);

template <class F>
constexpr Handler handler_of() {
  if constexpr (F::op == HostOp::none)
    return nullptr;
  else
    return &Serve<F>::run;
}

template <class... F>
constexpr std::array<Handler, kHostOpCount> handlers_by_op(FunctionList<F...>) {
  std::array<Handler, kHostOpCount> out{};
  ((out[static_cast<uint16_t>(F::op)] = handler_of<F>()), ...);
  out[0] = nullptr;  // HostOp::none: never forwarded
  return out;
}

constexpr std::array<Handler, kHostOpCount> kHandlers = handlers_by_op(AllHostFunctions{});

}  // namespace

bool serve_request(const hh_host& host, hh_run_request* request, Reader& in, Writer& reply,
                   std::string* why) {
  const auto op = in.get<uint16_t>();
  if (op < kHostOpCount && kHandlers[op]) return kHandlers[op](host, request, in, reply, why);
  *why = "a service request with the unknown op " + std::to_string(op);
  return false;
}

}  // namespace hookhost::sandbox
