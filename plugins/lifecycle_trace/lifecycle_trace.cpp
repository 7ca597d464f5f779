// lifecycle_trace: appends one JSON object per lifecycle call to a file (JSON Lines), so an author
// can see exactly which calls a hook received, in which order, with which steps and values.
// Format: docs/lifecycle-trace.md.
// Confined, it writes the trace file its path parameter names (default: trace.jsonl in its run
// folder).
#define HH_PLUGIN_NEEDS HH_NEEDS_WRITE_PARAM(path)
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <hookhost/hook.hpp>
#include <hookhost/sdk/json.hpp>

namespace {

namespace fs = std::filesystem;
using hookhost::append_json_string;

// Shortest text that reads back as the same value. JSON has no NaN or infinities, so those are
// written as the strings "NaN", "Infinity" and "-Infinity" (as protobuf's JSON mapping does).
template <typename T>
void append_json_number(std::string& out, T value) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(value)) {
      out += "\"NaN\"";
      return;
    }
    if (std::isinf(value)) {
      out += value > 0 ? "\"Infinity\"" : "\"-Infinity\"";
      return;
    }
  }
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, ec == std::errc() ? end : buffer);
}

template <typename T>
T element(const hh_tensor& t, std::size_t i) {
  T value;
  // Element i in row-major order, wherever the view's strides put it.
  std::memcpy(&value,
              static_cast<const char*>(t.data) + hh_tensor_element_offset(&t, i) * sizeof(T),
              sizeof(T));
  return value;
}

void append_json_element(std::string& out, const hookhost::TensorView& view, std::size_t i) {
  const hh_tensor& t = view.raw();
  switch (t.dtype) {
    case HH_DTYPE_F32: append_json_number(out, element<float>(t, i)); break;
    case HH_DTYPE_F64: append_json_number(out, element<double>(t, i)); break;
    case HH_DTYPE_I32: append_json_number(out, element<int32_t>(t, i)); break;
    case HH_DTYPE_I64: append_json_number(out, element<int64_t>(t, i)); break;
    case HH_DTYPE_U8: append_json_number(out, element<uint8_t>(t, i)); break;
    case HH_DTYPE_BOOL: out += element<uint8_t>(t, i) ? "true" : "false"; break;
    case HH_DTYPE_I8:
    case HH_DTYPE_I16:
      append_json_number(out, static_cast<int64_t>(hh_tensor_get_double(&t, i)));
      break;
    case HH_DTYPE_F16:
    case HH_DTYPE_BF16: append_json_number(out, hh_tensor_get_double(&t, i)); break;
    case HH_DTYPE_STRING: append_json_string(out, view.string_at(i)); break;
    default: out += "null";
  }
}

// A scalar as one value, anything else as a flat list of its elements in row-major order.
void append_json_tensor(std::string& out, const hookhost::TensorView& view) {
  if (view.shape().empty()) {
    append_json_element(out, view, 0);
    return;
  }
  out += '[';
  for (std::size_t i = 0; i < view.size(); ++i) {
    if (i) out += ',';
    append_json_element(out, view, i);
  }
  out += ']';
}

class LifecycleTrace : public hookhost::Hook {
 public:
  explicit LifecycleTrace(const hookhost::CreateContext& ctx) : Hook(ctx) {
    const fs::path path =
        host().resolve_path(params().has("path") ? params().get_string("path") : "trace.jsonl");
    if (params().has("fetch")) fetch_ = params().get_string_list("fetch");
    std::error_code ec;
    if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
    // Opened once, for appending: each line below is one write(2), and O_APPEND makes every
    // write land whole at the end of the file even when several instances share it.
    fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw hookhost::Error("parameter 'path': cannot open '" + path.string() +
                            "' for appending: " + std::strerror(errno));
  }
  ~LifecycleTrace() override {
    if (fd_ >= 0) ::close(fd_);
  }

  void begin() override { write_line(start_line("begin") + "null}"); }

  void after_create_session(const hh_session_info& session) override {
    write_line(start_line("after_create_session") + std::to_string(session.global_step) + "}");
  }

  void before_run(const hh_run_context& context, hookhost::RunRequest& request) override {
    write_line(start_line("before_run") + std::to_string(context.global_step) + "}");
    for (const auto& name : fetch_) request.fetch(name);
  }

  void after_run(const hh_run_context& context, const hookhost::RunValues& values) override {
    std::string line = start_line("after_run") + std::to_string(context.global_step);
    line += ",\"fetched\":{";
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (i) line += ',';
      append_json_string(line, values[i].name());
      line += ':';
      append_json_tensor(line, values[i]);
    }
    write_line(line + "}}");
  }

  void end(const hh_end_info& info) override {
    std::string line = start_line("end") + std::to_string(info.global_step);
    line += ",\"outcome\":";
    append_json_string(line, hh_outcome_name(info.outcome));
    line += ",\"reason\":";
    append_json_string(line, info.reason ? info.reason : "");
    write_line(line + "}");
  }

 private:
  // Everything up to and including `"global_step":`.
  std::string start_line(std::string_view callback) const {
    std::string line = "{\"instance\":";
    append_json_string(line, instance_name());
    line += ",\"callback\":";
    append_json_string(line, callback);
    line += ",\"global_step\":";
    return line;
  }

  void write_line(std::string line) const {
    line += '\n';
    ssize_t written;
    do {
      written = ::write(fd_, line.data(), line.size());
    } while (written < 0 && errno == EINTR);
    if (written != static_cast<ssize_t>(line.size()))
      throw hookhost::Error(written < 0
                                ? std::string("cannot write the trace: ") + std::strerror(errno)
                                : std::string("short write to the trace (disk full?)"));
  }

  std::vector<std::string> fetch_;
  int fd_ = -1;
};

}  // namespace

#define LIFECYCLE_TRACE_PARAMS(P)                                                                 \
  P(path, STRING, OPTIONAL, "",                                                                   \
    "JSON Lines file to append to; relative to the run directory; default <run dir>/trace.jsonl") \
  P(fetch, STRING_LIST, OPTIONAL, "", "tensors to fetch in before_run and show in after_run")

HOOKHOST_PLUGIN(LifecycleTrace, "lifecycle_trace", "1.0.0",
                "Appends one JSON line per lifecycle call (call order, steps, values, outcome)",
                LIFECYCLE_TRACE_PARAMS)
