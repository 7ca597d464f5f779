#include "protocol.hpp"

namespace hookhost::sandbox {

const char* message_type_name(MessageType type) {
  switch (type) {
    case MessageType::load: return "load";
    case MessageType::create: return "create";
    case MessageType::call: return "call";
    case MessageType::map_values: return "map_values";
    case MessageType::destroy: return "destroy";
    case MessageType::shutdown: return "shutdown";
    case MessageType::service_reply: return "service_reply";
    case MessageType::observe: return "observe";
    case MessageType::loaded: return "loaded";
    case MessageType::created: return "created";
    case MessageType::call_result: return "call_result";
    case MessageType::values_mapped: return "values_mapped";
    case MessageType::destroyed: return "destroyed";
    case MessageType::service_request: return "service_request";
    case MessageType::observed: return "observed";
    case MessageType::echo: return "echo";
  }
  return "unknown";
}

namespace {
template <class... F>
const char* name_of(FunctionList<F...>, ServiceOp op) {
  const char* name = "unknown";
  ((op != HostOp::none && F::op == op ? void(name = F::name.text) : void()), ...);
  return name;
}

template <class... T>
uint32_t offered(ServiceList<T...>, const hh_host& host) {
  return ((host.get_service(&host, ServiceTable<T>::id) ? ServiceTable<T>::offered_bit : 0u) | ...);
}
}  // namespace

const char* service_op_name(ServiceOp op) {
  return name_of(AllHostFunctions{}, op);
}

uint32_t offered_services(const hh_host& host) {
  return offered(BuiltinServices{}, host);
}

void Writer::put_bytes(const void* data, size_t size) {
  put<uint64_t>(size);
  if (size == 0) return;
  const size_t at = bytes_.size();
  bytes_.resize(at + size);
  std::memcpy(bytes_.data() + at, data, size);
}

void Writer::put_optional(const void* data, size_t size) {
  put<uint8_t>(data ? 1 : 0);
  if (data) put_bytes(data, size);
}

std::string_view Reader::get_bytes() {
  const auto size = get<uint64_t>();
  if (failed_ || size > bytes_.size() - offset_) {
    failed_ = true;
    offset_ = bytes_.size();
    return {};
  }
  std::string_view out(reinterpret_cast<const char*>(bytes_.data()) + offset_, size);
  offset_ += size;
  return out;
}

bool Reader::get_optional(std::string_view* out) {
  *out = {};
  if (get<uint8_t>() == 0) return false;
  *out = get_bytes();
  return !failed_;
}

std::string_view bounded_c_text(const char* text, size_t max) {
  if (!text) return {};
  return std::string_view(text, ::strnlen(text, max + 1));
}

void put_metadata(Writer& w, const PluginMetadata& metadata) {
  w.put_text(metadata.id);
  w.put_text(metadata.version);
  w.put_text(metadata.description);
  w.put<uint32_t>(metadata.abi_major);
  w.put<uint32_t>(metadata.abi_minor);
  w.put<uint32_t>(metadata.min_abi_minor);
  w.put<uint32_t>(static_cast<uint32_t>(metadata.params.size()));
  for (const ParamSpec& p : metadata.params) {
    w.put_text(p.name);
    w.put<int32_t>(p.type);
    w.put<uint8_t>(static_cast<uint8_t>(p.flag));
    w.put_text(p.default_value);
    w.put_text(p.help);
  }
}

PluginMetadata get_metadata(Reader& in) {
  PluginMetadata m;
  m.id = in.get_bytes();
  m.version = in.get_bytes();
  m.description = in.get_bytes();
  m.abi_major = in.get<uint32_t>();
  m.abi_minor = in.get<uint32_t>();
  m.min_abi_minor = in.get<uint32_t>();
  const auto count = in.get<uint32_t>();
  // A count beyond the payload stops at the first field that is missing.
  for (uint32_t i = 0; i < count && !in.failed(); ++i) {
    ParamSpec p;
    p.name = in.get_bytes();
    p.type = in.get<int32_t>();
    const auto flag = in.get<uint8_t>();
    p.flag = flag <= static_cast<uint8_t>(ParamFlag::defaulted) ? static_cast<ParamFlag>(flag)
                                                                : ParamFlag::optional;
    p.default_value = in.get_bytes();
    p.help = in.get_bytes();
    m.params.push_back(std::move(p));
  }
  return m;
}

}  // namespace hookhost::sandbox
