// The runner's binding of every row of services/host_functions.hpp: a forwarded function writes
// its op and each argument with the row's codec (host_call_codec.hpp), and reads the result and
// each codec's reply part back, as host/src/sandbox/service_requests.cpp writes them. Only the
// functions answered here (the instance's name, run and configuration folders, get_service) and
// state_get's buffer are written by hand.
#include "forwarding.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

#include "host_call_codec.hpp"

namespace hookhost::runner {

using sandbox::Codec;
using sandbox::CodecLayout;
using sandbox::Message;
using sandbox::MessageType;
using sandbox::Reader;
using sandbox::ServiceOp;
using sandbox::Writer;

thread_local bool t_in_call = false;

Connection& connection() {
  static Connection* instance = new Connection;  // never destroyed: plugin threads may outlive main
  return *instance;
}

namespace {

// The host stopped talking on the main channel: nothing is left to do for this process.
constexpr int kExitHostGone = 70;

[[noreturn]] void host_gone() {
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(kExitHostGone);
}

Writer request_for(ServiceOp op) {
  Writer w;
  w.put<uint16_t>(static_cast<uint16_t>(op));
  return w;
}

// Logs on the instance's logger in the host.
void log_text(const Instance& instance, int32_t level, const std::string& text);

// A reply's fields, or the defaults when the host could not be asked.
class Reply {
 public:
  explicit Reply(std::optional<std::vector<std::byte>> payload)
      : payload_(std::move(payload)),
        reader_(payload_ ? std::span<const std::byte>(*payload_) : std::span<const std::byte>()) {}
  bool ok() const { return payload_.has_value(); }
  Reader& in() { return reader_; }

 private:
  std::optional<std::vector<std::byte>> payload_;
  Reader reader_;
};

// The instance behind a request a plugin passed; nullptr (said) when it is not one this runner
// issued, or its before_run is over or running on another thread.
Instance* open_request(hh_run_request* request, const char* function) {
  auto* instance = request ? static_cast<Instance*>(request->host_data) : nullptr;
  if (!instance || instance->magic != Instance::kMagic || &instance->request != request) {
    std::fprintf(stderr,
                 "a plugin called hh_run_request.%s with a request this host never issued; call "
                 "refused (plugin misbehaving)\n",
                 function);
    return nullptr;
  }
  if (!instance->request_open || !t_in_call) {
    log_text(*instance, HH_LOG_ERROR,
             std::string("plugin misbehaving: ") + function + " " +
                 (instance->request_open ? "from another thread than its before_run"
                                         : "on a request whose before_run has returned") +
                 " (" + instance->name + ", plugin '" + instance->plugin_id + "'); call refused");
    return nullptr;
  }
  return instance;
}

Instance* instance_of(const hh_host* host, const char* function) {
  auto* instance = host ? static_cast<Instance*>(host->host_data) : nullptr;
  if (instance && instance->magic == Instance::kMagic && &instance->host == host) return instance;
  std::fprintf(stderr,
               "a plugin called hh_host.%s with a host pointer this host never issued%s; call "
               "refused (plugin misbehaving)\n",
               function, host ? "" : " (NULL)");
  return nullptr;
}

Instance* instance_of(hh_run_request* request, const char* function) {
  return open_request(request, function);
}

// A refused handle's words in the plugin's hh_error, as the host's entry writes them (service.hpp).
template <class T>
void report_not_issued(T, const char*) {}
void report_not_issued(hh_error* error, const char* function) {
  Codec<arg::Error>::Answer{0, std::string(function) + ": not a host pointer of this host"}.apply(
      error);
}

// A forwarded function: the op, each argument by its codec; the result, then each codec's part of
// the reply, applied to the plugin's memory only once the whole reply was read.
template <class F, class Params = typename F::Params, class Codecs = typename F::Codecs>
struct Forward;

template <class F, class... C, class... Args>
struct Forward<F, TypeList<C...>, TypeList<Args...>> {
  using R = typename F::Result;
  using Layout = CodecLayout<TypeList<Args...>>;

  static R call(typename F::Handle handle, C... args) {
    Instance* instance = instance_of(handle, F::name.text);
    if (!instance) {
      (report_not_issued(args, F::name.text), ...);
      return F::fallback_value();
    }
    return forward(*instance, std::index_sequence_for<Args...>(), args...);
  }

 private:
  template <std::size_t... I>
  static R forward(const Instance& instance, std::index_sequence<I...>, C... args) {
    [[maybe_unused]] std::tuple<C&...> all(args...);
    Writer w = request_for(F::op);
    (sandbox::with_codec_args<Layout, I>(all, [&](auto&... a) { Codec<Args>::put(w, a...); }), ...);
    Reply reply(call_host(instance, w));
    Reader& in = reply.in();
    [[maybe_unused]] auto result = read_result(in);
    std::tuple<typename Codec<Args>::Answer...> answers;
    const bool read = (sandbox::with_codec_args<Layout, I>(
                           all, [&](auto&... a) { return std::get<I>(answers).read(in, a...); }) &&
                       ... && true);
    if (!reply.ok() || !read || !in.complete()) return F::fallback_value();
    (sandbox::with_codec_args<Layout, I>(all,
                                         [&](auto&... a) { std::get<I>(answers).apply(a...); }),
     ...);
    if constexpr (!std::is_void_v<R>) return result;
  }

  static auto read_result(Reader& in) {
    if constexpr (std::is_void_v<R>)
      return 0;
    else
      return in.get<R>();
  }
};

// state_get: the host's buffer holds what is stored, and only that comes back.
template <>
struct Forward<fn::state_get> {
  static hh_status call(const hh_host* h, void* buffer, size_t capacity, size_t* size) {
    const Instance* instance = instance_of(h, "state_get");
    if (!instance) return HH_ERROR;
    Writer w = request_for(ServiceOp::state_get);
    w.put<uint8_t>(buffer ? 1 : 0);
    w.put<uint64_t>(capacity);
    Reply reply(call_host(*instance, w));
    const auto status = reply.in().get<int32_t>();
    const auto needed = reply.in().get<uint64_t>();
    const std::string_view bytes = reply.in().get_bytes();
    if (!reply.ok() || !reply.in().complete() || bytes.size() > capacity ||
        (!bytes.empty() && !buffer))
      return HH_ERROR;
    if (!bytes.empty()) std::memcpy(buffer, bytes.data(), bytes.size());
    if (size) *size = needed;
    return status;
  }
};

void log_text(const Instance& instance, int32_t level, const std::string& text) {
  Forward<fn::log>::call(&instance.host, level, text.data(), text.size());
}

// The functions answered in the runner (the rows without an op): one each, or the tables do not
// compile.
template <class F>
struct Local;

template <>
struct Local<fn::instance_name> {
  static const char* call(const hh_host* h) {
    const Instance* instance = instance_of(h, "instance_name");
    return instance ? instance->name.c_str() : "";
  }
};

template <>
struct Local<fn::run_dir> {
  static const char* call(const hh_host* h) {
    const Instance* instance = instance_of(h, "run_dir");
    return instance ? instance->run_dir.c_str() : "";
  }
};

// From the create message: no round trip.
template <>
struct Local<fn::job_config_dir> {
  static const char* call(const hh_host* h) {
    const Instance* instance = instance_of(h, "hh.job/1 config_dir");
    return instance ? instance->config_dir.c_str() : "";
  }
};

// The built-in services the host offers this instance. An embedder's own services are plain
// pointers into the host and cannot cross: the host refuses such a job at start.
template <class... T>
const void* offered_table(Instance& instance, const char* id, ServiceList<T...>) {
  const void* found = nullptr;
  ((!found && std::strcmp(id, ServiceTable<T>::id) == 0 &&
            (instance.services & ServiceTable<T>::offered_bit)
        ? void(found = &std::get<T>(instance.service_tables))
        : void()),
   ...);
  return found;
}

template <>
struct Local<fn::get_service> {
  static const void* call(const hh_host* h, const char* id) {
    Instance* instance = instance_of(h, "get_service");
    if (!instance || !id || ::strnlen(id, 256) > 255) return nullptr;
    return offered_table(*instance, id, BuiltinServices{});
  }
};

template <class F>
constexpr auto stub_of() {
  if constexpr (F::op == HostOp::none)
    return &Local<F>::call;
  else
    return &Forward<F>::call;
}

template <class... F>
auto forwarded_table(FunctionList<F...>) {
  using Table = typename FirstOf<FunctionList<F...>>::type::Table;
  Table table{};
  table.struct_size = ServiceTable<Table>::size;
  ((table.*F::field = stub_of<F>()), ...);
  return table;
}

template <class... T>
ForwardedServices forwarded_services(ServiceList<T...>) {
  return {forwarded_table(typename ServiceTable<T>::functions{})...};
}

const hh_host kForwardedHost = [] {
  hh_host host = forwarded_table(HostTableFunctions{});
  host.abi_major = HH_ABI_MAJOR;
  host.abi_minor = HH_ABI_MINOR;
  return host;
}();
const hh_run_request kForwardedRequest = forwarded_table(RunRequestFunctions{});

// add_fetch of an observer's before_run in an observe message: a name the host accepted before
// is answered here, without a round trip; any other goes to the host, and what it accepts is kept.
hh_status add_fetch_remembering(hh_run_request* request, const char* name) {
  auto* instance = request ? static_cast<Instance*>(request->host_data) : nullptr;
  const bool observing = instance && instance->magic == Instance::kMagic &&
                         &instance->request == request && instance->observing &&
                         instance->request_open && t_in_call && name;
  if (!observing) return kForwardedRequest.add_fetch(request, name);
  const std::string_view text = sandbox::bounded_c_text(name, HH_MAX_NAME_LENGTH);
  const bool bounded = text.size() <= HH_MAX_NAME_LENGTH;
  auto remember = [&] {
    if (std::find(instance->asked.begin(), instance->asked.end(), text) == instance->asked.end())
      instance->asked.emplace_back(text);
  };
  if (bounded && instance->accepted_fetches.contains(text)) {
    remember();
    return HH_OK;
  }
  const hh_status status = kForwardedRequest.add_fetch(request, name);
  if (status == HH_OK && bounded) {
    instance->accepted_fetches.emplace(text);
    remember();
  }
  return status;
}
const ForwardedServices kForwardedServices = forwarded_services(BuiltinServices{});

}  // namespace

Instance::Instance()
    : host(kForwardedHost), request(kForwardedRequest), service_tables(kForwardedServices) {
  host.host_data = this;
  request.host_data = this;
  request.add_fetch = &add_fetch_remembering;
}

std::optional<std::vector<std::byte>> call_host(const Instance& instance, const Writer& request) {
  Connection& c = connection();
  Message reply;
  if (t_in_call) {
    // The host is inside this call's exchange and answers before anything else.
    if (c.main.send(MessageType::service_request, instance.id, request.bytes()) !=
            sandbox::ChannelStatus::ok ||
        c.main.receive(reply) != sandbox::ChannelStatus::ok ||
        reply.type != MessageType::service_reply)
      host_gone();
    return std::move(reply.payload);
  }
  std::lock_guard lock(c.side_mutex);
  if (!c.side) return std::nullopt;
  if (c.side.send(MessageType::service_request, instance.id, request.bytes()) !=
          sandbox::ChannelStatus::ok ||
      c.side.receive(reply) != sandbox::ChannelStatus::ok ||
      reply.type != MessageType::service_reply) {
    c.side.close();  // the host stopped serving plugin threads: later calls fail at once
    return std::nullopt;
  }
  return std::move(reply.payload);
}

}  // namespace hookhost::runner
