// Each op reads the arguments the runner wrote (host/runner/forwarding.cpp, same op) and writes
// the reply the runner reads back there. Pointers a plugin passed as NULL arrive as absent
// optionals and are passed on as NULL, so the host's own checks decide what NULL means.
#include "service_requests.hpp"

#include <hookhost/ext/checkpoint.h>
#include <hookhost/ext/dist.h>
#include <hookhost/ext/steps.h>
#include <hookhost/ext/summary.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "view_codec.hpp"

namespace hookhost::sandbox {

namespace {

// A non-NULL pointer for a buffer of no bytes the plugin passed as non-NULL.
char kEmpty[1] = {};

struct Text {
  bool present = false;
  std::string text;
  const char* get() const { return present ? text.c_str() : nullptr; }
};

Text get_text(Reader& in) {
  std::string_view bytes;
  Text out;
  out.present = in.get_optional(&bytes);
  out.text.assign(bytes);
  return out;
}

// The error buffer of a service call: the plugin's struct_size decides, as for a plugin's own.
struct ErrorArgument {
  bool present = false;
  hh_error error{};
  hh_error* get() { return present ? &error : nullptr; }
};

ErrorArgument get_error(Reader& in) {
  ErrorArgument out;
  out.present = in.get<uint8_t>() != 0;
  const auto struct_size = in.get<uint32_t>();
  hh_error_init(&out.error);
  out.error.struct_size = std::min<uint32_t>(struct_size, HH_ERROR_SIZE);
  return out;
}

void put_error_reply(Writer& reply, hh_status status, const ErrorArgument& err) {
  reply.put<int32_t>(status);
  reply.put<int32_t>(err.error.code);
  reply.put_text(
      std::string_view(err.error.message, ::strnlen(err.error.message, HH_ERROR_MESSAGE_SIZE)));
}

template <typename Table>
const Table* service(const hh_host& host, const char* id) {
  return static_cast<const Table*>(host.get_service(&host, id));
}

// The values of an hh.dist/1 allreduce or broadcast: u8 has values (the plugin's pointer was not
// NULL), u64 count, u8 carried, then count doubles when carried. The runner carries them when
// there are any and the count is within HH_DIST_MAX_COUNT; otherwise the host's own check refuses
// the count before any value is read.
struct DistValues {
  bool has_values = false;
  bool carried = false;
  uint64_t count = 0;
  std::vector<double> values;
  double* get() {
    if (!has_values) return nullptr;
    return carried && !values.empty() ? values.data() : &empty;
  }
  double empty = 0;
};

bool get_dist_values(Reader& in, DistValues& out) {
  out.has_values = in.get<uint8_t>() != 0;
  out.count = in.get<uint64_t>();
  out.carried = in.get<uint8_t>() != 0;
  if (!out.carried) return !out.has_values || out.count > HH_DIST_MAX_COUNT || out.count == 0;
  const std::string_view bytes = in.get_bytes();
  if (!out.has_values || out.count > HH_DIST_MAX_COUNT ||
      bytes.size() != out.count * sizeof(double))
    return false;
  out.values.resize(out.count);
  if (!bytes.empty()) std::memcpy(out.values.data(), bytes.data(), bytes.size());
  return true;
}

// The status, the error and, when the call succeeded, the values back.
void put_dist_reply(Writer& reply, hh_status status, const ErrorArgument& err,
                    const DistValues& values) {
  put_error_reply(reply, status, err);
  const bool back = status == HH_OK && values.carried;
  reply.put_bytes(values.values.data(), back ? values.values.size() * sizeof(double) : 0);
}

}  // namespace

bool serve_request(const hh_host& host, hh_run_request* request, Reader& in, Writer& reply,
                   std::string* why) {
  const auto op = static_cast<ServiceOp>(in.get<uint16_t>());
  auto malformed = [&] {
    *why = std::string("a malformed ") + service_op_name(op) + " request";
    return false;
  };
  switch (op) {
    case ServiceOp::log: {
      const auto level = in.get<int32_t>();
      const auto size = in.get<uint64_t>();
      const Text message = get_text(in);
      if (!in.complete()) return malformed();
      if (!message.present) {
        host.log(&host, level, nullptr, size);
      } else if (message.text.size() == size) {
        host.log(&host, level, message.text.data(), size);
      } else if (message.text.size() == HH_MAX_LOG_MESSAGE && size > HH_MAX_LOG_MESSAGE) {
        // The runner sends the first HH_MAX_LOG_MESSAGE bytes of a longer message: all that
        // hh_host.log keeps (host.h), so the line and its "cut at" note are the in-process ones.
        host.log(&host, level, message.text.data(), size);
      } else {
        return malformed();
      }
      return true;
    }
    case ServiceOp::log_enabled: {
      const auto level = in.get<int32_t>();
      if (!in.complete()) return malformed();
      reply.put<int32_t>(host.log_enabled(&host, level));
      return true;
    }
    case ServiceOp::global_step:
      if (!in.complete()) return malformed();
      reply.put<int64_t>(host.global_step(&host));
      return true;
    case ServiceOp::request_stop: {
      const Text reason = get_text(in);
      if (!in.complete()) return malformed();
      host.request_stop(&host, reason.get());
      return true;
    }
    case ServiceOp::should_stop:
      if (!in.complete()) return malformed();
      reply.put<int32_t>(host.should_stop(&host));
      return true;
    case ServiceOp::state_put: {
      const bool has_data = in.get<uint8_t>() != 0;
      const auto size = in.get<uint64_t>();
      const bool carried = in.get<uint8_t>() != 0;
      const std::string_view bytes = carried ? in.get_bytes() : std::string_view();
      if (!in.complete() || (carried && bytes.size() != size) || (carried && !has_data))
        return malformed();
      hh_status status;
      if (!has_data) {
        status = host.state_put(&host, nullptr, size);
      } else if (carried) {
        status = host.state_put(&host, size ? bytes.data() : kEmpty, size);
      } else {
        const std::string text = "state_put refused: " + std::to_string(size) +
                                 " bytes is more than a sandboxed hook can send (" +
                                 std::to_string(kMaxTransferBytes) +
                                 " bytes); the previous state is kept";
        host.log(&host, HH_LOG_ERROR, text.data(), text.size());
        status = HH_ERROR;
      }
      reply.put<int32_t>(status);
      return true;
    }
    case ServiceOp::state_info: {
      if (!in.complete()) return malformed();
      size_t size = 0;
      uint32_t version = 0;
      reply.put<int32_t>(host.state_info(&host, &size, &version));
      reply.put<uint64_t>(size);
      reply.put<uint32_t>(version);
      return true;
    }
    case ServiceOp::state_get: {
      const bool has_buffer = in.get<uint8_t>() != 0;
      const auto capacity = in.get<uint64_t>();
      if (!in.complete()) return malformed();
      std::vector<char> buffer;
      size_t size = 0;
      hh_status status = HH_ERROR;
      if (!has_buffer) {
        status = host.state_get(&host, nullptr, capacity, &size);
      } else {
        // Room for what is stored now, not for what the plugin's buffer holds; a state that
        // grew between the two calls is asked for again.
        size_t stored = 0;
        host.state_info(&host, &stored, nullptr);
        for (int attempt = 0; attempt < 8; ++attempt) {
          const size_t room = std::min<uint64_t>(capacity, stored);
          buffer.resize(room);
          size = 0;
          status = host.state_get(&host, room ? buffer.data() : kEmpty, room, &size);
          if (status == HH_OK || size <= room || size > capacity) break;
          stored = size;
        }
      }
      reply.put<int32_t>(status);
      reply.put<uint64_t>(size);
      reply.put_bytes(buffer.data(), status == HH_OK && has_buffer ? size : 0);
      return true;
    }
    case ServiceOp::add_fetch: {
      const Text name = get_text(in);
      if (!in.complete()) return malformed();
      reply.put<int32_t>(request ? request->add_fetch(request, name.get()) : HH_ERROR);
      return true;
    }
    case ServiceOp::add_feed: {
      DecodedView view;
      if (!decode_view(in, view, why)) return false;
      hh_status status = HH_ERROR;
      if (!request) {
        status = HH_ERROR;
      } else if (!view.refusal.empty()) {
        const std::string text = "add_feed refused: " + view.refusal;
        host.log(&host, HH_LOG_ERROR, text.data(), text.size());
      } else {
        status = request->add_feed(request, view.present ? &view.view : nullptr);
      }
      reply.put<int32_t>(status);
      return true;
    }
    case ServiceOp::checkpoint_request: {
      const Text reason = get_text(in);
      if (!in.complete()) return malformed();
      const auto* svc = service<hh_checkpoint_service>(host, HH_SERVICE_CHECKPOINT);
      reply.put<int32_t>(svc ? svc->request(&host, reason.get()) : HH_ERROR);
      return true;
    }
    case ServiceOp::checkpoint_last_written: {
      const bool has_buffer = in.get<uint8_t>() != 0;
      const auto capacity = in.get<uint64_t>();
      if (!in.complete()) return malformed();
      const auto* svc = service<hh_checkpoint_service>(host, HH_SERVICE_CHECKPOINT);
      // A path is far below this; the plugin's capacity may be anything.
      std::vector<char> path(has_buffer ? std::min<uint64_t>(capacity, 64 * 1024) : 0);
      int64_t step = 0;
      const int32_t found =
          svc ? svc->last_written(&host,
                                  has_buffer ? (path.empty() ? kEmpty : path.data()) : nullptr,
                                  path.size(), &step)
              : 0;
      reply.put<int32_t>(found);
      reply.put_text(found && !path.empty()
                         ? std::string_view(path.data(), ::strnlen(path.data(), path.size()))
                         : std::string_view());
      reply.put<int64_t>(step);
      return true;
    }
    case ServiceOp::summary_add_scalar: {
      const Text dir = get_text(in);
      const Text tag = get_text(in);
      const auto value = in.get<double>();
      const auto step = in.get<int64_t>();
      ErrorArgument err = get_error(in);
      if (!in.complete()) return malformed();
      const auto* svc = service<hh_summary_service>(host, HH_SERVICE_SUMMARY);
      put_error_reply(
          reply,
          svc ? svc->add_scalar(&host, dir.get(), tag.get(), value, step, err.get()) : HH_ERROR,
          err);
      return true;
    }
    case ServiceOp::summary_add_session_log: {
      const Text dir = get_text(in);
      const auto status = in.get<int32_t>();
      const Text path = get_text(in);
      const auto step = in.get<int64_t>();
      ErrorArgument err = get_error(in);
      if (!in.complete()) return malformed();
      const auto* svc = service<hh_summary_service>(host, HH_SERVICE_SUMMARY);
      put_error_reply(
          reply,
          svc ? svc->add_session_log(&host, dir.get(), status, path.get(), step, err.get())
              : HH_ERROR,
          err);
      return true;
    }
    case ServiceOp::summary_flush: {
      const Text dir = get_text(in);
      ErrorArgument err = get_error(in);
      if (!in.complete()) return malformed();
      const auto* svc = service<hh_summary_service>(host, HH_SERVICE_SUMMARY);
      put_error_reply(reply, svc ? svc->flush(&host, dir.get(), err.get()) : HH_ERROR, err);
      return true;
    }
    case ServiceOp::steps_publish_last_step: {
      const auto step = in.get<int64_t>();
      if (!in.complete()) return malformed();
      const auto* svc = service<hh_steps_service>(host, HH_SERVICE_STEPS);
      reply.put<int32_t>(svc ? svc->publish_last_step(&host, step) : HH_ERROR);
      return true;
    }
    case ServiceOp::steps_last_step: {
      if (!in.complete()) return malformed();
      const auto* svc = service<hh_steps_service>(host, HH_SERVICE_STEPS);
      reply.put<int64_t>(svc ? svc->last_step(&host) : -1);
      return true;
    }
    case ServiceOp::dist_group: {
      if (!in.complete()) return malformed();
      const auto* svc = service<hh_dist_service>(host, HH_SERVICE_DIST);
      reply.put<int32_t>(svc ? svc->rank(&host) : -1);
      reply.put<int32_t>(svc ? svc->world_size(&host) : 0);
      reply.put<int32_t>(svc ? svc->is_chief(&host) : 0);
      return true;
    }
    case ServiceOp::dist_allreduce:
    case ServiceOp::dist_broadcast: {
      DistValues values;
      const bool values_ok = get_dist_values(in, values);
      const auto op_or_root = in.get<int32_t>();
      ErrorArgument err = get_error(in);
      if (!values_ok || !in.complete()) return malformed();
      const auto* svc = service<hh_dist_service>(host, HH_SERVICE_DIST);
      hh_status status = HH_ERROR;
      if (svc && op == ServiceOp::dist_allreduce)
        status = svc->allreduce(&host, values.get(), values.count, op_or_root, err.get());
      else if (svc)
        status = svc->broadcast(&host, values.get(), values.count, op_or_root, err.get());
      put_dist_reply(reply, status, err, values);
      return true;
    }
    case ServiceOp::dist_barrier: {
      ErrorArgument err = get_error(in);
      if (!in.complete()) return malformed();
      const auto* svc = service<hh_dist_service>(host, HH_SERVICE_DIST);
      put_error_reply(reply, svc ? svc->barrier(&host, err.get()) : HH_ERROR, err);
      return true;
    }
  }
  *why = "a service request with the unknown op " + std::to_string(static_cast<uint16_t>(op));
  return false;
}

}  // namespace hookhost::sandbox
