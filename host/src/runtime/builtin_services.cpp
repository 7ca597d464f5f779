// The services every job offers through get_service: hh.steps/1, hh.checkpoint/1, hh.summary/1.
// Each function checks its handle, its arguments and its thread rule before touching anything.
#include <hookhost/ext/checkpoint.h>
#include <hookhost/ext/steps.h>
#include <hookhost/ext/summary.h>

#include <cstring>
#include <filesystem>

#include "hookhost/host/checkpoint.hpp"
#include "hookhost/host/event_writer.hpp"
#include "runtime_impl.hpp"

namespace hookhost {
namespace {

namespace fs = std::filesystem;

// Writes `message` into a plugin-owned hh_error, but only when its struct_size vouches for the
// buffer (a plugin that skipped hh_error_init gets the status without the text).
hh_status report(hh_error* err, hh_status status, const std::string& message) {
  if (err && err->struct_size >= HH_ERROR_SIZE_1_0) {
    const size_t n = std::min(message.size(), size_t{HH_ERROR_MESSAGE_SIZE - 1});
    std::memcpy(err->message, message.data(), n);
    err->message[n] = '\0';
  }
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

hh_status svc_checkpoint_save(const hh_host* h, const char* dir, const char* basename,
                              uint32_t max_to_keep, char* out_path, size_t capacity,
                              hh_error* err) {
  constexpr const char* kWhat = "hh.checkpoint/1 save";
  auto* s = HostServices::from(h, kWhat);
  if (!s) return report(err, HH_ERROR, "hh.checkpoint/1 save: not a host pointer of this host");
  if (t_current_call != s) {
    // The workload's state may only be read between steps, on the thread running the hook.
    const std::string what =
        "outside one of this hook's lifecycle calls (from another thread, "
        "or after the call returned); it is [hook-thread]";
    s->misuse(kWhat, what);
    return report(err, HH_ERROR, std::string(kWhat) + " called " + what);
  }
  Runtime::Impl& m = *s->owner;
  try {
    fs::path folder;
    std::string error;
    if (!resolve_dir(*s, dir, fs::path(s->run_dir) / "checkpoints", &folder, &error))
      return report(err, HH_ERROR, std::string(kWhat) + ": " + error);
    std::string base = "model.ckpt";
    if (basename && *basename) {
      if (::strnlen(basename, HH_MAX_BASENAME_LENGTH + 1) > HH_MAX_BASENAME_LENGTH)
        return report(err, HH_ERROR,
                      std::string(kWhat) + ": basename is longer than " +
                          std::to_string(HH_MAX_BASENAME_LENGTH) + " bytes");
      base = basename;
      if (base.find('/') != std::string::npos || base == "." || base == "..")
        return report(
            err, HH_ERROR,
            std::string(kWhat) + ": basename '" + base + "' must be a file name, not a path");
    }
    Checkpoint checkpoint;
    checkpoint.global_step = m.live_step.load();
    checkpoint.workload_state = m.session.save_state();
    checkpoint.hook_states = m.collect_hook_states();
    fs::path written = write_checkpoint(folder, base, checkpoint, max_to_keep);
    if (out_path && capacity > 0) {
      std::string text = written.string();
      size_t n = std::min(text.size(), capacity - 1);
      std::memcpy(out_path, text.data(), n);
      out_path[n] = '\0';
    }
    return HH_OK;
  } catch (const std::exception& e) {
    return report(err, HH_ERROR, e.what());
  }
}

// The summary functions share their argument checks.
HostServices* summary_services(const hh_host* h, const char* function, const char* dir,
                               fs::path* folder, hh_error* err, hh_status* status) {
  auto* s = HostServices::from(h, function);
  if (!s) {
    *status = report(err, HH_ERROR, std::string(function) + ": not a host pointer of this host");
    return nullptr;
  }
  std::string error;
  if (!resolve_dir(*s, dir, fs::path(s->run_dir), folder, &error)) {
    *status = report(err, HH_ERROR, std::string(function) + ": " + error);
    return nullptr;
  }
  return s;
}

hh_status svc_add_scalar(const hh_host* h, const char* dir, const char* tag, double value,
                         int64_t step, hh_error* err) {
  constexpr const char* kWhat = "hh.summary/1 add_scalar";
  fs::path folder;
  hh_status status = HH_OK;
  if (!summary_services(h, kWhat, dir, &folder, err, &status)) return status;
  if (!tag || !*tag) return report(err, HH_ERROR, std::string(kWhat) + ": tag is NULL or empty");
  if (::strnlen(tag, HH_MAX_TAG_LENGTH + 1) > HH_MAX_TAG_LENGTH)
    return report(err, HH_ERROR,
                  std::string(kWhat) + ": tag is longer than " + std::to_string(HH_MAX_TAG_LENGTH) +
                      " bytes");
  try {
    event_writer_for(folder).add_scalar(step, tag, static_cast<float>(value));
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
  if (!summary_services(h, kWhat, dir, &folder, err, &status)) return status;
  if (log_status < HH_SESSION_LOG_START || log_status > HH_SESSION_LOG_CHECKPOINT)
    return report(err, HH_ERROR,
                  std::string(kWhat) + ": status " + std::to_string(log_status) +
                      " is not one of HH_SESSION_LOG_START, _STOP, _CHECKPOINT");
  if (checkpoint_path && ::strnlen(checkpoint_path, HH_MAX_PATH_LENGTH + 1) > HH_MAX_PATH_LENGTH)
    return report(err, HH_ERROR,
                  std::string(kWhat) + ": checkpoint_path is longer than " +
                      std::to_string(HH_MAX_PATH_LENGTH) + " bytes");
  try {
    event_writer_for(folder).add_session_log(step, log_status,
                                             checkpoint_path ? checkpoint_path : "");
    return HH_OK;
  } catch (const std::exception& e) {
    return report(err, HH_ERROR, e.what());
  }
}

hh_status svc_summary_flush(const hh_host* h, const char* dir, hh_error* err) {
  fs::path folder;
  hh_status status = HH_OK;
  if (!summary_services(h, "hh.summary/1 flush", dir, &folder, err, &status)) return status;
  try {
    event_writer_for(folder).flush();
    return HH_OK;
  } catch (const std::exception& e) {
    return report(err, HH_ERROR, e.what());
  }
}

const hh_steps_service kStepsService = {HH_STEPS_SERVICE_SIZE, &svc_publish_last_step,
                                        &svc_last_step};
const hh_checkpoint_service kCheckpointService = {HH_CHECKPOINT_SERVICE_SIZE, &svc_checkpoint_save};
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
