// libFuzzer target for what the host decodes from a hookhost-runner: frames on the channel
// (Channel::receive), service requests served through an hh_host (serve_request, views through
// decode_view) and the replies the host reads (loaded, created, call_result, values_mapped,
// destroyed). The runner runs plugin code, so every byte here is untrusted.
//
// Input: up to 16 datagrams, each a u16 length (native order) then that many bytes, sent as the
// runner would send them; the host's end then reads until the channel closes.
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include <hookhost/ext/checkpoint.h>
#include <hookhost/ext/dist.h>
#include <hookhost/ext/steps.h>
#include <hookhost/ext/summary.h>

#include "channel.hpp"
#include "protocol.hpp"
#include "service_requests.hpp"
#include "view_codec.hpp"

namespace {

using namespace hookhost::sandbox;

// The stored state and what a plugin could read back: enough host to exercise every op.
std::string g_state;

// Reads every byte a host function was handed, so a view or text that points outside what the
// decoder built is caught by ASan.
volatile unsigned char g_sink;
void touch(const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) g_sink = g_sink + bytes[i];
}
void touch_text(const char* text) {
  if (text) touch(text, std::strlen(text));
}

const char* instance_name(const hh_host*) {
  return "fuzz";
}
void log(const hh_host*, int32_t, const char* message, size_t size) {
  if (message) touch(message, std::min<size_t>(size, HH_MAX_LOG_MESSAGE));
}
int32_t log_enabled(const hh_host*, int32_t) {
  return 1;
}
int64_t global_step(const hh_host*) {
  return 7;
}
void request_stop(const hh_host*, const char* reason) {
  touch_text(reason);
}
int32_t should_stop(const hh_host*) {
  return 0;
}
const char* run_dir(const hh_host*) {
  return "/nonexistent";
}
hh_status state_put(const hh_host*, const void* data, size_t size) {
  if (!data) return HH_ERROR;
  touch(data, size);
  g_state.assign(static_cast<const char*>(data), std::min<size_t>(size, 1 << 16));
  return HH_OK;
}
int32_t state_info(const hh_host*, size_t* size, uint32_t* version) {
  if (size) *size = g_state.size();
  if (version) *version = 1;
  return 1;
}
hh_status state_get(const hh_host*, void* buffer, size_t capacity, size_t* size) {
  if (size) *size = g_state.size();
  if (!buffer || capacity < g_state.size()) return HH_ERROR;
  std::memcpy(buffer, g_state.data(), g_state.size());
  return HH_OK;
}
// The built-in services, so every forwarded row's codecs are decoded and their buffers touched.
hh_status ckpt_request(const hh_host*, const char* reason) {
  touch_text(reason);
  return HH_OK;
}
int32_t ckpt_last_written(const hh_host*, char* out, size_t capacity, int64_t* step) {
  if (out && capacity > 0) out[0] = '\0';
  if (step) *step = 1;
  return 1;
}
hh_status add_scalar(const hh_host*, const char* dir, const char* tag, double, int64_t,
                     hh_error* err) {
  touch_text(dir);
  touch_text(tag);
  if (err) touch(err->message, sizeof err->message);
  return HH_OK;
}
hh_status add_session_log(const hh_host*, const char* dir, int32_t, const char* path, int64_t,
                          hh_error*) {
  touch_text(dir);
  touch_text(path);
  return HH_OK;
}
hh_status flush(const hh_host*, const char* dir, hh_error*) {
  touch_text(dir);
  return HH_OK;
}
hh_status publish_last_step(const hh_host*, int64_t) {
  return HH_OK;
}
int64_t last_step(const hh_host*) {
  return 3;
}
hh_status skip_until(const hh_host*, int64_t) {
  return HH_OK;
}
int32_t rank(const hh_host*) {
  return 0;
}
hh_status collective(const hh_host*, double* values, size_t count, int32_t, hh_error*) {
  if (values && count <= HH_DIST_MAX_COUNT) touch(values, count * sizeof(double));
  return HH_OK;
}
hh_status barrier(const hh_host*, hh_error*) {
  return HH_OK;
}
const hh_checkpoint_service kCheckpoint = {HH_CHECKPOINT_SERVICE_SIZE, ckpt_request,
                                           ckpt_last_written};
const hh_summary_service kSummary = {HH_SUMMARY_SERVICE_SIZE, add_scalar, add_session_log, flush};
const hh_steps_service kSteps = {HH_STEPS_SERVICE_SIZE, publish_last_step, last_step, skip_until};
const hh_dist_service kDist = {HH_DIST_SERVICE_SIZE, rank,       rank,   rank,
                               collective,           collective, barrier};

const void* get_service(const hh_host*, const char* id) {
  if (!id) return nullptr;
  if (std::strcmp(id, HH_SERVICE_CHECKPOINT) == 0) return &kCheckpoint;
  if (std::strcmp(id, HH_SERVICE_SUMMARY) == 0) return &kSummary;
  if (std::strcmp(id, HH_SERVICE_STEPS) == 0) return &kSteps;
  if (std::strcmp(id, HH_SERVICE_DIST) == 0) return &kDist;
  return nullptr;
}

hh_status add_fetch(hh_run_request*, const char* name) {
  touch_text(name);
  return HH_OK;
}
hh_status add_feed(hh_run_request*, const hh_tensor* value) {
  if (!value) return HH_ERROR;
  touch_text(value->name);
  for (uint32_t i = 0; value->shape && i < value->rank; ++i) touch(&value->shape[i], 8);
  for (uint32_t i = 0; value->strides && i < value->rank; ++i) touch(&value->strides[i], 8);
  const ReadablePart part = readable_part(*value);
  if (!part.valid || !value->data) return HH_ERROR;
  if (value->dtype == HH_DTYPE_STRING) {
    const auto* items = static_cast<const hh_str*>(value->data);
    for (size_t i = 0; i < part.count; ++i) touch(items[i].data, items[i].size);
  } else {
    touch(value->data, part.bytes);
  }
  return HH_OK;
}

hh_host make_host() {
  hh_host host{};
  host.struct_size = sizeof host;
  host.instance_name = instance_name;
  host.log = log;
  host.log_enabled = log_enabled;
  host.global_step = global_step;
  host.request_stop = request_stop;
  host.should_stop = should_stop;
  host.run_dir = run_dir;
  host.state_put = state_put;
  host.state_info = state_info;
  host.state_get = state_get;
  host.get_service = get_service;
  return host;
}

// What the host reads from each reply (process_dispatch.cpp, runner_group.cpp), field by field.
void read_reply(const Message& message) {
  Reader in(message.payload);
  switch (message.type) {
    case MessageType::loaded:
      in.get<uint8_t>();
      in.get_bytes();
      in.get<uint32_t>();
      break;
    case MessageType::created:
      in.get<int32_t>();
      in.get_bytes();
      in.get<uint8_t>();
      in.get<uint32_t>();
      in.get<uint8_t>();
      in.get<uint8_t>();
      break;
    case MessageType::call_result:
      in.get<uint8_t>();
      in.get<int32_t>();
      in.get<int32_t>();
      in.get_bytes();
      break;
    case MessageType::values_mapped:
      in.get<uint8_t>();
      in.get<uint64_t>();
      in.get_bytes();
      break;
    case MessageType::destroyed: in.get_bytes(); break;
    default: return;
  }
  (void)in.complete();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [host_end, runner_end] = Channel::make_pair();
  for (int n = 0; n < 16 && size >= 2; ++n) {
    uint16_t length;
    std::memcpy(&length, data, 2);
    data += 2;
    size -= 2;
    length = static_cast<uint16_t>(std::min<size_t>(length, size));
    if (::send(runner_end.get(), data, length, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) break;
    data += length;
    size -= length;
  }
  runner_end.reset();  // the host then reads what was sent, and "closed"

  const hh_host host = make_host();
  hh_run_request request{};
  request.struct_size = HH_RUN_REQUEST_SIZE;
  request.add_fetch = add_fetch;
  request.add_feed = add_feed;
  g_state.clear();

  Channel channel(std::move(host_end));
  Message message;
  Writer reply;
  for (int n = 0; n < 16 && channel.receive(message) == ChannelStatus::ok; ++n) {
    if (message.type == MessageType::service_request) {
      Reader in(message.payload);
      std::string why;
      reply.clear();
      // Once with a request open (before_run), once without (the side channel).
      serve_request(host, &request, in, reply, &why);
      Reader again(message.payload);
      serve_request(host, nullptr, again, reply, &why);
    } else {
      read_reply(message);
    }
  }
  return 0;
}
