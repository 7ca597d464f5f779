// Each function writes its op and arguments in the order host/src/sandbox/service_requests.cpp
// reads them, and reads the reply in the order it is written there. Text a plugin passes is read
// as the host would read it: up to the host's limit plus one byte, so "too long" stays visible.
#include "forwarding.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "view_codec.hpp"

namespace hookhost::runner {

using sandbox::bounded_c_text;
using sandbox::kMaxTransferBytes;
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

// An optional text, NULL kept.
void put_text(Writer& w, const char* text, size_t max) {
  const std::string_view bounded = bounded_c_text(text, max);
  w.put_optional(text ? bounded.data() : nullptr, bounded.size());
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

void log_text(const Instance& instance, int32_t level, const std::string& text) {
  Writer w = request_for(ServiceOp::log);
  w.put<int32_t>(level);
  w.put<uint64_t>(text.size());
  w.put_optional(text.data(), text.size());
  call_host(instance, w);
}

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

int32_t ask_i32(const Instance& instance, const Writer& w, int32_t fallback) {
  Reply reply(call_host(instance, w));
  const auto value = reply.in().get<int32_t>();
  return reply.ok() && reply.in().complete() ? value : fallback;
}

int64_t ask_i64(const Instance& instance, const Writer& w, int64_t fallback) {
  Reply reply(call_host(instance, w));
  const auto value = reply.in().get<int64_t>();
  return reply.ok() && reply.in().complete() ? value : fallback;
}

// ---- hh_host ------------------------------------------------------------------------------

const char* fwd_instance_name(const hh_host* h) {
  const Instance* instance = instance_of(h, "instance_name");
  return instance ? instance->name.c_str() : "";
}

void fwd_log(const hh_host* h, int32_t level, const char* message, size_t size) {
  const Instance* instance = instance_of(h, "log");
  if (!instance) return;
  Writer w = request_for(ServiceOp::log);
  w.put<int32_t>(level);
  w.put<uint64_t>(size);
  // hh_host.log keeps at most HH_MAX_LOG_MESSAGE bytes: the rest is never read.
  w.put_optional(message, message ? std::min<size_t>(size, HH_MAX_LOG_MESSAGE) : 0);
  call_host(*instance, w);
}

int32_t fwd_log_enabled(const hh_host* h, int32_t level) {
  const Instance* instance = instance_of(h, "log_enabled");
  if (!instance) return 0;
  Writer w = request_for(ServiceOp::log_enabled);
  w.put<int32_t>(level);
  return ask_i32(*instance, w, 0);
}

int64_t fwd_global_step(const hh_host* h) {
  const Instance* instance = instance_of(h, "global_step");
  return instance ? ask_i64(*instance, request_for(ServiceOp::global_step), 0) : 0;
}

void fwd_request_stop(const hh_host* h, const char* reason) {
  const Instance* instance = instance_of(h, "request_stop");
  if (!instance) return;
  Writer w = request_for(ServiceOp::request_stop);
  put_text(w, reason, HH_MAX_STOP_REASON);
  call_host(*instance, w);
}

int32_t fwd_should_stop(const hh_host* h) {
  const Instance* instance = instance_of(h, "should_stop");
  return instance ? ask_i32(*instance, request_for(ServiceOp::should_stop), 0) : 0;
}

const char* fwd_run_dir(const hh_host* h) {
  const Instance* instance = instance_of(h, "run_dir");
  return instance ? instance->run_dir.c_str() : "";
}

hh_status fwd_state_put(const hh_host* h, const void* data, size_t size) {
  const Instance* instance = instance_of(h, "state_put");
  if (!instance) return HH_ERROR;
  Writer w = request_for(ServiceOp::state_put);
  w.put<uint8_t>(data ? 1 : 0);
  w.put<uint64_t>(size);
  // A state beyond what one message carries is refused by the host without its bytes.
  const bool carried = data && size <= kMaxTransferBytes;
  w.put<uint8_t>(carried ? 1 : 0);
  if (carried) w.put_bytes(data, size);
  return ask_i32(*instance, w, HH_ERROR);
}

int32_t fwd_state_info(const hh_host* h, size_t* size, uint32_t* version) {
  const Instance* instance = instance_of(h, "state_info");
  if (!instance) return 0;
  Reply reply(call_host(*instance, request_for(ServiceOp::state_info)));
  const auto found = reply.in().get<int32_t>();
  const auto stored = reply.in().get<uint64_t>();
  const auto stored_version = reply.in().get<uint32_t>();
  const bool ok = reply.ok() && reply.in().complete();
  if (size) *size = ok ? stored : 0;
  if (version) *version = ok ? stored_version : 0;
  return ok ? found : 0;
}

hh_status fwd_state_get(const hh_host* h, void* buffer, size_t capacity, size_t* size) {
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

const void* fwd_get_service(const hh_host* h, const char* id) {
  Instance* instance = instance_of(h, "get_service");
  if (!instance || !id || ::strnlen(id, 256) > 255) return nullptr;
  // Only the services this runner knows how to forward, and only when the host offers them: an
  // embedder's own services are plain pointers into the host and cannot cross.
  if (std::strcmp(id, HH_SERVICE_CHECKPOINT) == 0 &&
      (instance->services & sandbox::kOffersCheckpoint))
    return &instance->checkpoint;
  if (std::strcmp(id, HH_SERVICE_SUMMARY) == 0 && (instance->services & sandbox::kOffersSummary))
    return &instance->summary;
  if (std::strcmp(id, HH_SERVICE_STEPS) == 0 && (instance->services & sandbox::kOffersSteps))
    return &instance->steps;
  if (std::strcmp(id, HH_SERVICE_JOB) == 0 && (instance->services & sandbox::kOffersJob))
    return &instance->job;
  if (std::strcmp(id, HH_SERVICE_DIST) == 0 && (instance->services & sandbox::kOffersDist))
    return &instance->dist;
  return nullptr;
}

// ---- hh_run_request -------------------------------------------------------------------------

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

hh_status fwd_add_fetch(hh_run_request* request, const char* name) {
  Instance* instance = open_request(request, "add_fetch");
  if (!instance) return HH_ERROR;
  Writer w = request_for(ServiceOp::add_fetch);
  put_text(w, name, HH_MAX_NAME_LENGTH);
  return ask_i32(*instance, w, HH_ERROR);
}

hh_status fwd_add_feed(hh_run_request* request, const hh_tensor* value) {
  Instance* instance = open_request(request, "add_feed");
  if (!instance) return HH_ERROR;
  Writer w = request_for(ServiceOp::add_feed);
  sandbox::encode_view(w, value);
  return ask_i32(*instance, w, HH_ERROR);
}

// ---- services -------------------------------------------------------------------------------

// A service's hh_error travels as its presence and struct_size; the host's message comes back.
void put_error(Writer& w, const hh_error* err) {
  w.put<uint8_t>(err ? 1 : 0);
  w.put<uint32_t>(err ? err->struct_size : 0);
}

// The host wrote into its copy only what it would have written into the plugin's buffer.
void copy_error(hh_error* err, int32_t code, std::string_view message) {
  if (err && err->struct_size >= HH_ERROR_SIZE_1_0) {
    if (!message.empty()) {
      const size_t n = std::min(message.size(), size_t{HH_ERROR_MESSAGE_SIZE - 1});
      std::memcpy(err->message, message.data(), n);
      err->message[n] = '\0';
    }
    if (code != 0) err->code = code;
  }
}

hh_status error_reply(const Instance& instance, const Writer& w, hh_error* err) {
  Reply reply(call_host(instance, w));
  const auto status = reply.in().get<int32_t>();
  const auto code = reply.in().get<int32_t>();
  const std::string_view message = reply.in().get_bytes();
  if (!reply.ok() || !reply.in().complete()) return HH_ERROR;
  copy_error(err, code, message);
  return status;
}

hh_status fwd_checkpoint_request(const hh_host* h, const char* reason) {
  const Instance* instance = instance_of(h, "hh.checkpoint/1 request");
  if (!instance) return HH_ERROR;
  Writer w = request_for(ServiceOp::checkpoint_request);
  put_text(w, reason, HH_MAX_STOP_REASON);
  return ask_i32(*instance, w, HH_ERROR);
}

int32_t fwd_checkpoint_last_written(const hh_host* h, char* out_path, size_t capacity,
                                    int64_t* step) {
  const Instance* instance = instance_of(h, "hh.checkpoint/1 last_written");
  if (!instance) return 0;
  Writer w = request_for(ServiceOp::checkpoint_last_written);
  w.put<uint8_t>(out_path ? 1 : 0);
  w.put<uint64_t>(capacity);
  Reply reply(call_host(*instance, w));
  const auto found = reply.in().get<int32_t>();
  const std::string_view path = reply.in().get_bytes();
  const auto written_step = reply.in().get<int64_t>();
  if (!reply.ok() || !reply.in().complete() || !found) return 0;
  if (out_path && capacity > 0) {
    const size_t n = std::min(path.size(), capacity - 1);
    std::memcpy(out_path, path.data(), n);
    out_path[n] = '\0';
  }
  if (step) *step = written_step;
  return found;
}

hh_status fwd_summary_add_scalar(const hh_host* h, const char* dir, const char* tag, double value,
                                 int64_t step, hh_error* err) {
  const Instance* instance = instance_of(h, "hh.summary/1 add_scalar");
  if (!instance) return HH_ERROR;
  Writer w = request_for(ServiceOp::summary_add_scalar);
  put_text(w, dir, HH_MAX_PATH_LENGTH);
  put_text(w, tag, HH_MAX_TAG_LENGTH);
  w.put<double>(value);
  w.put<int64_t>(step);
  put_error(w, err);
  return error_reply(*instance, w, err);
}

hh_status fwd_summary_add_session_log(const hh_host* h, const char* dir, int32_t status,
                                      const char* checkpoint_path, int64_t step, hh_error* err) {
  const Instance* instance = instance_of(h, "hh.summary/1 add_session_log");
  if (!instance) return HH_ERROR;
  Writer w = request_for(ServiceOp::summary_add_session_log);
  put_text(w, dir, HH_MAX_PATH_LENGTH);
  w.put<int32_t>(status);
  put_text(w, checkpoint_path, HH_MAX_PATH_LENGTH);
  w.put<int64_t>(step);
  put_error(w, err);
  return error_reply(*instance, w, err);
}

hh_status fwd_summary_flush(const hh_host* h, const char* dir, hh_error* err) {
  const Instance* instance = instance_of(h, "hh.summary/1 flush");
  if (!instance) return HH_ERROR;
  Writer w = request_for(ServiceOp::summary_flush);
  put_text(w, dir, HH_MAX_PATH_LENGTH);
  put_error(w, err);
  return error_reply(*instance, w, err);
}

hh_status fwd_steps_publish_last_step(const hh_host* h, int64_t last_step) {
  const Instance* instance = instance_of(h, "hh.steps/1 publish_last_step");
  if (!instance) return HH_ERROR;
  Writer w = request_for(ServiceOp::steps_publish_last_step);
  w.put<int64_t>(last_step);
  return ask_i32(*instance, w, HH_ERROR);
}

const char* fwd_job_config_dir(const hh_host* h) {
  const Instance* instance = instance_of(h, "hh.job/1 config_dir");
  return instance ? instance->config_dir.c_str() : "";
}

int64_t fwd_steps_last_step(const hh_host* h) {
  const Instance* instance = instance_of(h, "hh.steps/1 last_step");
  return instance ? ask_i64(*instance, request_for(ServiceOp::steps_last_step), -1) : -1;
}

// rank, world_size and is_chief in one round trip; `field` picks one, `fallback` when the host
// cannot be asked.
int32_t dist_group_field(const hh_host* h, const char* function, int field, int32_t fallback) {
  const Instance* instance = instance_of(h, function);
  if (!instance) return fallback;
  Reply reply(call_host(*instance, request_for(ServiceOp::dist_group)));
  int32_t fields[3];
  for (int32_t& f : fields) f = reply.in().get<int32_t>();
  return reply.ok() && reply.in().complete() ? fields[field] : fallback;
}

int32_t fwd_dist_rank(const hh_host* h) {
  return dist_group_field(h, "hh.dist/1 rank", 0, -1);
}

int32_t fwd_dist_world_size(const hh_host* h) {
  return dist_group_field(h, "hh.dist/1 world_size", 1, 0);
}

int32_t fwd_dist_is_chief(const hh_host* h) {
  return dist_group_field(h, "hh.dist/1 is_chief", 2, 0);
}

// The values travel both ways. A NULL pointer or a count beyond HH_DIST_MAX_COUNT is sent without
// them (nothing past the limit is read), for the host to refuse with its own message.
hh_status dist_values_call(const hh_host* h, const char* function, ServiceOp op, double* values,
                           size_t count, int32_t op_or_root, hh_error* err) {
  const Instance* instance = instance_of(h, function);
  if (!instance) return HH_ERROR;
  Writer w = request_for(op);
  const bool carried = values && count > 0 && count <= HH_DIST_MAX_COUNT;
  w.put<uint8_t>(values ? 1 : 0);
  w.put<uint64_t>(count);
  w.put<uint8_t>(carried ? 1 : 0);
  if (carried) w.put_bytes(values, count * sizeof(double));
  w.put<int32_t>(op_or_root);
  put_error(w, err);
  Reply reply(call_host(*instance, w));
  const auto status = reply.in().get<int32_t>();
  const auto code = reply.in().get<int32_t>();
  const std::string_view message = reply.in().get_bytes();
  const std::string_view result = reply.in().get_bytes();
  if (!reply.ok() || !reply.in().complete()) return HH_ERROR;
  const bool back = status == HH_OK && carried;
  if (result.size() != (back ? count * sizeof(double) : 0)) return HH_ERROR;
  copy_error(err, code, message);
  if (back) std::memcpy(values, result.data(), result.size());
  return status;
}

hh_status fwd_dist_allreduce(const hh_host* h, double* values, size_t count, int32_t op,
                             hh_error* err) {
  return dist_values_call(h, "hh.dist/1 allreduce", ServiceOp::dist_allreduce, values, count, op,
                          err);
}

hh_status fwd_dist_broadcast(const hh_host* h, double* values, size_t count, int32_t root,
                             hh_error* err) {
  return dist_values_call(h, "hh.dist/1 broadcast", ServiceOp::dist_broadcast, values, count, root,
                          err);
}

hh_status fwd_dist_barrier(const hh_host* h, hh_error* err) {
  const Instance* instance = instance_of(h, "hh.dist/1 barrier");
  if (!instance) return HH_ERROR;
  Writer w = request_for(ServiceOp::dist_barrier);
  put_error(w, err);
  return error_reply(*instance, w, err);
}

}  // namespace

Instance::Instance() {
  host.struct_size = HH_HOST_SIZE;
  host.abi_major = HH_ABI_MAJOR;
  host.abi_minor = HH_ABI_MINOR;
  host.host_data = this;
  host.instance_name = &fwd_instance_name;
  host.log = &fwd_log;
  host.log_enabled = &fwd_log_enabled;
  host.global_step = &fwd_global_step;
  host.request_stop = &fwd_request_stop;
  host.should_stop = &fwd_should_stop;
  host.run_dir = &fwd_run_dir;
  host.state_put = &fwd_state_put;
  host.state_info = &fwd_state_info;
  host.state_get = &fwd_state_get;
  host.get_service = &fwd_get_service;

  request.struct_size = HH_RUN_REQUEST_SIZE;
  request.host_data = this;
  request.add_fetch = &fwd_add_fetch;
  request.add_feed = &fwd_add_feed;

  checkpoint = {HH_CHECKPOINT_SERVICE_SIZE, &fwd_checkpoint_request, &fwd_checkpoint_last_written};
  summary = {HH_SUMMARY_SERVICE_SIZE, &fwd_summary_add_scalar, &fwd_summary_add_session_log,
             &fwd_summary_flush};
  steps = {HH_STEPS_SERVICE_SIZE, &fwd_steps_publish_last_step, &fwd_steps_last_step};
  job = {HH_JOB_SERVICE_SIZE, &fwd_job_config_dir};
  dist = {HH_DIST_SERVICE_SIZE, &fwd_dist_rank, &fwd_dist_world_size, &fwd_dist_is_chief,
          &fwd_dist_allreduce, &fwd_dist_broadcast, &fwd_dist_barrier};
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
