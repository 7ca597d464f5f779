/* hookhost service "hh.summary/1": TensorBoard event files, one writer per folder per process,
 * shared by every hook (so a step rate and scalar summaries land in the same file, as with
 * TensorFlow's writer cache). The host owns the protobuf code; plugins never compile it. */
#ifndef HOOKHOST_EXT_SUMMARY_H
#define HOOKHOST_EXT_SUMMARY_H

#include "../hook.h"

HH_EXTERN_C_BEGIN

#define HH_SERVICE_SUMMARY "hh.summary/1"

/* SessionLog statuses, as in TensorFlow's event.proto. */
#define HH_SESSION_LOG_START 1
#define HH_SESSION_LOG_STOP 2
#define HH_SESSION_LOG_CHECKPOINT 3

typedef struct hh_summary_service {
  uint32_t struct_size;

  /* Appends Event{wall_time=now, step, summary{value{tag, simple_value}}} to the event file of
   * folder `dir` (NULL or "" = the run directory). The file is created on first use, named
   * events.out.tfevents.<seconds>.<hostname>, and starts with Event{file_version="brain.Event:2"}.
   * [thread-safe] */
  hh_status (*add_scalar)(const hh_host* host, const char* dir, const char* tag, double value,
                          int64_t step, hh_error* err);

  /* Appends Event{wall_time=now, step, session_log{status, checkpoint_path}} (checkpoint_path may
   * be NULL). [thread-safe] */
  hh_status (*add_session_log)(const hh_host* host, const char* dir, int32_t status,
                               const char* checkpoint_path, int64_t step, hh_error* err);

  /* Writes buffered events of folder `dir` to disk. [thread-safe] */
  hh_status (*flush)(const hh_host* host, const char* dir, hh_error* err);
} hh_summary_service;

#define HH_SUMMARY_SERVICE_SIZE HH_STRUCT_SIZE(hh_summary_service, flush)

HH_EXTERN_C_END

#endif /* HOOKHOST_EXT_SUMMARY_H */
