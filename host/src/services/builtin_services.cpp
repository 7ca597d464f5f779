// The services every job offers through get_service: hh.steps/1, hh.checkpoint/1 (requests only:
// checkpoints.cpp writes them), hh.summary/1.
// Each function checks its handle, its arguments and its thread rule before touching anything.
#include <hookhost/ext/checkpoint.h>
#include <hookhost/ext/steps.h>
#include <hookhost/ext/summary.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "../runtime/runtime_impl.hpp"
#include "hookhost/host/event_writer.hpp"

namespace hookhost {
namespace {

namespace fs = std::filesystem;

// Copies `text` into a plugin's buffer of `capacity` bytes (> 0), cut to fit, NUL-terminated.
void copy_cut(std::string_view text, char* out, size_t capacity) {
  const size_t n = std::min(text.size(), capacity - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

// Writes `message` into a plugin-owned hh_error, but only when its struct_size vouches for the
// buffer (a plugin that skipped hh_error_init gets the status without the text).
hh_status report(hh_error* err, hh_status status, const std::string& message) {
  if (err && err->struct_size >= HH_ERROR_SIZE_1_0)
    copy_cut(message, err->message, HH_ERROR_MESSAGE_SIZE);
  return status;
}

// A folder argument: NULL or "" gives `fallback`; a relative path is taken from the run directory.
bool resolve_dir(const HostServices& s, const char* dir, const fs::path& fallback, fs::path* out,
                 std::string* error) {
  if (!dir || !*dir) {
    *out = fallback;
    return true;
  }
  if (::strnlen(dir, HH_MAX_PATH_LENGTH + 1) > HH_MAX_PATH_LENGTH) {
    *error = "dir is longer than " + std::to_string(HH_MAX_PATH_LENGTH) + " bytes";
    return false;
  }
  fs::path p(dir);
  *out = (p.is_relative() ? fs::path(s.run_dir) / p : p).lexically_normal();
  return true;
}

hh_status svc_publish_last_step(const hh_host* h, int64_t step) {
  auto* s = HostServices::from(h, "hh.steps/1 publish_last_step");
  if (!s) return HH_ERROR;
  if (s->ended) {
    s->misuse("hh.steps/1 publish_last_step", "after end()");
    return HH_ERROR;
  }
  if (step < 0) {
    s->misuse("hh.steps/1 publish_last_step", "with a negative step " + std::to_string(step));
    return HH_ERROR;
  }
  auto& published = s->owner->published_last_step;
  int64_t current = published.load();
  while ((current < 0 || step < current) && !published.compare_exchange_weak(current, step)) {
  }
  return HH_OK;
}

int64_t svc_last_step(const hh_host* h) {
  auto* s = HostServices::from(h, "hh.steps/1 last_step");
  if (!s) return -1;
  Runtime::Impl& m = *s->owner;
  int64_t published = m.published_last_step.load();
  std::optional<int64_t> own = m.session.last_step();
  if (own && (published < 0 || *own < published)) return *own;
  return published;
}

hh_status svc_checkpoint_request(const hh_host* h, const char* reason) {
  constexpr const char* kWhat = "hh.checkpoint/1 request";
  auto* s = HostServices::from(h, kWhat);
  if (!s) return HH_ERROR;
  if (s->ended) {
    s->misuse(kWhat, "after end()");
    return HH_ERROR;
  }
  const std::string text = bounded_text(reason, HH_MAX_STOP_REASON);
  s->owner->record_checkpoint_request("hook '" + s->instance_name + "'" +
                                      (text.empty() ? "" : ": " + text));
  return HH_OK;
}

int32_t svc_checkpoint_last_written(const hh_host* h, char* out_path, size_t capacity,
                                    int64_t* step) {
  auto* s = HostServices::from(h, "hh.checkpoint/1 last_written");
  if (!s) return 0;
  const auto written = s->owner->last_checkpoint();
  if (!written) return 0;
  if (out_path && capacity > 0) copy_cut(written->file.string(), out_path, capacity);
  if (step) *step = written->global_step;
  return 1;
}

// The summary functions share their argument checks.
HostServices* summary_services(const hh_host* h, const char* function, const char* dir,
                               fs::path* folder, hh_error* err, hh_status* status) {
  auto* s = HostServices::from(h, function);
  if (!s) {
    *status = report(err, HH_ERROR, std::string(function) + ": not a host pointer of this host");
    return nullptr;
  }
  if (s->ended) {
    // Event files are flushed once every end() has returned: a later write would be lost.
    s->misuse(function, "after end()");
    *status = report(err, HH_ERROR, std::string(function) + ": called after end()");
    return nullptr;
  }
  std::string error;
  if (!resolve_dir(*s, dir, fs::path(s->run_dir), folder, &error)) {
    *status = report(err, HH_ERROR, std::string(function) + ": " + error);
    return nullptr;
  }
  return s;
}

// TensorBoard scalars are floats; a double beyond float's range becomes an infinity (a plain cast
// of such a value is undefined behaviour).
float to_float(double value) {
  if (std::isnan(value)) return std::numeric_limits<float>::quiet_NaN();
  if (value > std::numeric_limits<float>::max()) return std::numeric_limits<float>::infinity();
  if (value < std::numeric_limits<float>::lowest()) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(value);
}

hh_status svc_add_scalar(const hh_host* h, const char* dir, const char* tag, double value,
                         int64_t step, hh_error* err) {
  constexpr const char* kWhat = "hh.summary/1 add_scalar";
  fs::path folder;
  hh_status status = HH_OK;
  HostServices* s = summary_services(h, kWhat, dir, &folder, err, &status);
  if (!s) return status;
  if (!tag || !*tag) return report(err, HH_ERROR, std::string(kWhat) + ": tag is NULL or empty");
  if (::strnlen(tag, HH_MAX_TAG_LENGTH + 1) > HH_MAX_TAG_LENGTH)
    return report(err, HH_ERROR,
                  std::string(kWhat) + ": tag is longer than " + std::to_string(HH_MAX_TAG_LENGTH) +
                      " bytes");
  try {
    s->owner->event_writers.for_folder(folder).add_scalar(step, tag, to_float(value));
    return HH_OK;
  } catch (const std::exception& e) {
    return report(err, HH_ERROR, e.what());
  }
}

hh_status svc_add_session_log(const hh_host* h, const char* dir, int32_t log_status,
                              const char* checkpoint_path, int64_t step, hh_error* err) {
  constexpr const char* kWhat = "hh.summary/1 add_session_log";
  fs::path folder;
  hh_status status = HH_OK;
  HostServices* s = summary_services(h, kWhat, dir, &folder, err, &status);
  if (!s) return status;
  if (log_status < HH_SESSION_LOG_START || log_status > HH_SESSION_LOG_CHECKPOINT)
    return report(err, HH_ERROR,
                  std::string(kWhat) + ": status " + std::to_string(log_status) +
                      " is not one of HH_SESSION_LOG_START, _STOP, _CHECKPOINT");
  if (checkpoint_path && ::strnlen(checkpoint_path, HH_MAX_PATH_LENGTH + 1) > HH_MAX_PATH_LENGTH)
    return report(err, HH_ERROR,
                  std::string(kWhat) + ": checkpoint_path is longer than " +
                      std::to_string(HH_MAX_PATH_LENGTH) + " bytes");
  try {
    s->owner->event_writers.for_folder(folder).add_session_log(
        step, log_status, checkpoint_path ? checkpoint_path : "");
    return HH_OK;
  } catch (const std::exception& e) {
    return report(err, HH_ERROR, e.what());
  }
}

hh_status svc_summary_flush(const hh_host* h, const char* dir, hh_error* err) {
  fs::path folder;
  hh_status status = HH_OK;
  HostServices* s = summary_services(h, "hh.summary/1 flush", dir, &folder, err, &status);
  if (!s) return status;
  try {
    s->owner->event_writers.for_folder(folder).flush();
    return HH_OK;
  } catch (const std::exception& e) {
    return report(err, HH_ERROR, e.what());
  }
}

const hh_steps_service kStepsService = {HH_STEPS_SERVICE_SIZE, &svc_publish_last_step,
                                        &svc_last_step};
const hh_checkpoint_service kCheckpointService = {
    HH_CHECKPOINT_SERVICE_SIZE, &svc_checkpoint_request, &svc_checkpoint_last_written};
const hh_summary_service kSummaryService = {HH_SUMMARY_SERVICE_SIZE, &svc_add_scalar,
                                            &svc_add_session_log, &svc_summary_flush};

}  // namespace

const void* Runtime::Impl::builtin_service(const char* id) const {
  if (std::strcmp(id, HH_SERVICE_STEPS) == 0) return &kStepsService;
  if (std::strcmp(id, HH_SERVICE_CHECKPOINT) == 0) return &kCheckpointService;
  if (std::strcmp(id, HH_SERVICE_SUMMARY) == 0) return &kSummaryService;
  return nullptr;
}

}  // namespace hookhost
