// hh.summary/1: scalars and session logs into TensorBoard event files, one writer per folder,
// owned by the job. Every call keeps working after end() until destroy returns (a plugin's thread
// may flush late): the writers outlive every hook, and what they still hold is written when the
// job's runtime is destroyed.
#include <hookhost/ext/summary.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "context/host_services.hpp"
#include "context/service_context.hpp"
#include "services.hpp"
#include "storage/event_writer.hpp"
#include "storage/folder_beneath.hpp"

namespace hookhost {

template <>
SummaryService& service_detail::service_for<SummaryService>(HostServices& caller) {
  return caller.context->services().summaries;
}

namespace {

// The `dir` argument checked for length: NULL or "" as "".
std::string_view dir_text(const char* dir) {
  if (!dir) return {};
  const std::size_t size = ::strnlen(dir, HH_MAX_PATH_LENGTH + 1);
  if (size > HH_MAX_PATH_LENGTH)
    throw Misuse("dir is longer than " + std::to_string(HH_MAX_PATH_LENGTH) + " bytes");
  return std::string_view(dir, size);
}

// An unconfined caller's folder as text: "" is the run directory; a relative path is taken from
// it, an absolute one as it is. The text only picks the writer (EventWriters resolves each new
// spelling once), so resolving it here must not allocate per record: a relative one is built in
// a buffer kept by the thread.
std::string_view event_folder(const HostServices& caller, std::string_view dir) {
  if (dir.empty()) return caller.run_dir;
  if (dir.front() == '/') return dir;
  thread_local std::string joined;
  joined.assign(caller.run_dir).append("/").append(dir);
  return joined;
}

// Whether the absolute `path` is `root` or below it, by name.
bool below(std::string_view path, std::string_view root) {
  while (root.size() > 1 && root.back() == '/') root.remove_suffix(1);
  return path.starts_with(root) && (path.size() == root.size() || path[root.size()] == '/');
}

// A confined caller's writer: the folder resolved beneath its run folder, or, for an absolute
// path, beneath the widest folder its policy lets it write that holds it, never through a link.
EventFileWriter& confined_writer(const HostServices& caller, std::string_view dir) {
  EventWriters& writers = caller.context->event_writers();
  if (dir.empty() || dir.front() != '/')
    return writers.for_folder_beneath(caller.run_dir, dir, "the run folder");
  const std::string* widest = nullptr;
  for (const std::string& root : caller.write_roots)
    if (below(dir, root) && (!widest || root.size() < widest->size())) widest = &root;
  if (!widest)
    throw PathRefused("EXDEV: '" + std::string(dir) +
                      "' resolves outside the folders the hook may write");
  std::string_view relative = dir.substr(std::min(widest->size(), dir.size()));
  while (!relative.empty() && relative.front() == '/') relative.remove_prefix(1);
  return writers.for_folder_beneath(*widest, relative, "the folder " + *widest);
}

// The writer `dir` names for `caller`. A refused path is the plugin's to fix: misuse, so the host
// names it in the hook's log and the hook's call fails with the reason.
EventFileWriter& writer_for(const HostServices& caller, const char* dir) {
  const std::string_view text = dir_text(dir);
  try {
    if (!caller.write_roots.empty()) return confined_writer(caller, text);
    return caller.context->event_writers().for_folder(event_folder(caller, text));
  } catch (const PathRefused& e) {
    throw Misuse("dir: " + std::string(e.what()));
  }
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
  dir_text(dir);
  if (!tag || !*tag) throw Misuse("tag is NULL or empty");
  const std::size_t tag_size = ::strnlen(tag, HH_MAX_TAG_LENGTH + 1);
  if (tag_size > HH_MAX_TAG_LENGTH)
    throw Misuse("tag is longer than " + std::to_string(HH_MAX_TAG_LENGTH) + " bytes");
  EventFileWriter& writer = writer_for(caller, dir);
  writer.add_scalar(step, std::string_view(tag, tag_size), to_float(value), record_wall_time());
  return HH_OK;
}

hh_status SummaryService::add_session_log(HostServices& caller, const char* dir, int32_t status,
                                          const char* checkpoint_path, int64_t step, hh_error*) {
  dir_text(dir);
  if (status < HH_SESSION_LOG_START || status > HH_SESSION_LOG_CHECKPOINT)
    throw Misuse("status " + std::to_string(status) +
                 " is not one of HH_SESSION_LOG_START, _STOP, _CHECKPOINT");
  if (checkpoint_path && ::strnlen(checkpoint_path, HH_MAX_PATH_LENGTH + 1) > HH_MAX_PATH_LENGTH)
    throw Misuse("checkpoint_path is longer than " + std::to_string(HH_MAX_PATH_LENGTH) + " bytes");
  EventFileWriter& writer = writer_for(caller, dir);
  writer.add_session_log(step, status, checkpoint_path ? checkpoint_path : "", record_wall_time());
  return HH_OK;
}

hh_status SummaryService::flush(HostServices& caller, const char* dir, hh_error*) {
  writer_for(caller, dir).flush();
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
