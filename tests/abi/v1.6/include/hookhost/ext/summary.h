/* hookhost service "hh.summary/1": TensorBoard event files, one writer per folder per job, shared
 * by every hook (so a step rate and scalar summaries land in the same file, as with TensorFlow's
 * writer cache). The host owns the protobuf code; plugins never compile it. */
#ifndef HOOKHOST_EXT_SUMMARY_H
#define HOOKHOST_EXT_SUMMARY_H

#include "../hook.h"

HH_EXTERN_C_BEGIN

#define HH_SERVICE_SUMMARY "hh.summary/1"

/* SessionLog statuses, as in TensorFlow's event.proto. */
#define HH_SESSION_LOG_START 1
#define HH_SESSION_LOG_STOP 2
#define HH_SESSION_LOG_CHECKPOINT 3

#define HH_MAX_TAG_LENGTH 1024 /* bytes of a summary tag */

/* In every function: `dir` NULL or "" = the run directory, a relative path is taken from the run
 * directory (at most HH_MAX_PATH_LENGTH bytes, see ext/checkpoint.h); `err` (initialised with
 * hh_error_init) receives the reason of a failure. */
typedef struct hh_summary_service {
  uint32_t struct_size;

  /* Appends Event{wall_time=now, step, summary{value{tag, simple_value}}} to the event file of
   * folder `dir` (from an observer's call, wall_time is the time its step ran, since 1.4). The file
   * is created on first use, named events.out.tfevents.<seconds>.<hostname>, and starts with
   * Event{file_version="brain.Event:2"}. `tag` is non-empty UTF-8, at most HH_MAX_TAG_LENGTH bytes.
   * [thread-safe] */
  hh_status (*add_scalar)(const hh_host* host, const char* dir, const char* tag, double value,
                          int64_t step, hh_error* err);

  /* Appends Event{wall_time=now, step, session_log{status, checkpoint_path}} (checkpoint_path may
   * be NULL; wall_time as in add_scalar). `status` is one of HH_SESSION_LOG_*. [thread-safe] */
  hh_status (*add_session_log)(const hh_host* host, const char* dir, int32_t status,
                               const char* checkpoint_path, int64_t step, hh_error* err);

  /* Writes buffered events of folder `dir` to disk. [thread-safe] */
  hh_status (*flush)(const hh_host* host, const char* dir, hh_error* err);
} hh_summary_service;

#define HH_SUMMARY_SERVICE_SIZE HH_STRUCT_SIZE(hh_summary_service, flush)
#define HH_SUMMARY_SERVICE_SIZE_1_0 HH_STRUCT_SIZE(hh_summary_service, flush)

HH_EXTERN_C_END

#endif /* HOOKHOST_EXT_SUMMARY_H */
