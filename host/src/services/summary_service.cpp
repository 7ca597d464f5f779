// hh.summary/1: scalars and session logs into TensorBoard event files, one writer per folder,
// owned by the job. Every call keeps working after end() until destroy returns (a plugin's thread
// may flush late): the writers outlive every hook, and what they still hold is written when the
// job's runtime is destroyed.
#include <hookhost/ext/summary.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "context/host_services.hpp"
#include "context/service_context.hpp"
#include "services.hpp"
#include "storage/event_writer.hpp"

namespace hookhost {

template <>
SummaryService& service_detail::service_for<SummaryService>(HostServices& caller) {
  return caller.context->services().summaries;
}

namespace {

// A folder argument as text: NULL or "" is the run directory; a relative path is taken from it.
// The text only picks the writer (EventWriters resolves each new spelling once), so resolving it
// here must not allocate per record: a relative one is built in a buffer kept by the thread.
std::string_view event_folder(const HostServices& caller, const char* dir) {
  if (!dir || !*dir) return caller.run_dir;
  const std::size_t size = ::strnlen(dir, HH_MAX_PATH_LENGTH + 1);
  if (size > HH_MAX_PATH_LENGTH)
    throw Misuse("dir is longer than " + std::to_string(HH_MAX_PATH_LENGTH) + " bytes");
  if (dir[0] == '/') return std::string_view(dir, size);
  thread_local std::string joined;
  joined.assign(caller.run_dir).append("/").append(dir, size);
  return joined;
}

// TensorBoard scalars are floats; a double beyond float's range becomes an infinity (a plain cast
// of such a value is undefined behaviour).
float to_float(double value) {
  if (std::isnan(value)) return std::numeric_limits<float>::quiet_NaN();
  if (value > std::numeric_limits<float>::max()) return std::numeric_limits<float>::infinity();
  if (value < std::numeric_limits<float>::lowest()) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(value);
}

// An observer's record carries the time its step ran, as it would on the step; others, now.
double record_wall_time() {
  return t_observed_wall_ns != 0 ? static_cast<double>(t_observed_wall_ns) * 1e-9 : 0;
}

}  // namespace

hh_status SummaryService::add_scalar(HostServices& caller, const char* dir, const char* tag,
                                     double value, int64_t step, hh_error*) {
  const std::string_view folder = event_folder(caller, dir);
  if (!tag || !*tag) throw Misuse("tag is NULL or empty");
  const std::size_t tag_size = ::strnlen(tag, HH_MAX_TAG_LENGTH + 1);
  if (tag_size > HH_MAX_TAG_LENGTH)
    throw Misuse("tag is longer than " + std::to_string(HH_MAX_TAG_LENGTH) + " bytes");
  caller.context->event_writers().for_folder(folder).add_scalar(
      step, std::string_view(tag, tag_size), to_float(value), record_wall_time());
  return HH_OK;
}

hh_status SummaryService::add_session_log(HostServices& caller, const char* dir, int32_t status,
                                          const char* checkpoint_path, int64_t step, hh_error*) {
  const std::string_view folder = event_folder(caller, dir);
  if (status < HH_SESSION_LOG_START || status > HH_SESSION_LOG_CHECKPOINT)
    throw Misuse("status " + std::to_string(status) +
                 " is not one of HH_SESSION_LOG_START, _STOP, _CHECKPOINT");
  if (checkpoint_path && ::strnlen(checkpoint_path, HH_MAX_PATH_LENGTH + 1) > HH_MAX_PATH_LENGTH)
    throw Misuse("checkpoint_path is longer than " + std::to_string(HH_MAX_PATH_LENGTH) + " bytes");
  caller.context->event_writers().for_folder(folder).add_session_log(
      step, status, checkpoint_path ? checkpoint_path : "", record_wall_time());
  return HH_OK;
}

hh_status SummaryService::flush(HostServices& caller, const char* dir, hh_error*) {
  caller.context->event_writers().for_folder(event_folder(caller, dir)).flush();
  return HH_OK;
}

namespace {
const hh_summary_service kSummary =
    in_process_table<SummaryFunctions, &SummaryService::add_scalar,
                     &SummaryService::add_session_log, &SummaryService::flush>();
}  // namespace

const void* SummaryService::table() const {
  return &kSummary;
}

}  // namespace hookhost
