/* hookhost plugin ABI: services the host gives each hook instance.
 *
 * Lifetime: the hh_host a plugin receives in create() stays valid (readable, callable) until the
 * instance's destroy() returns. After the instance's end() returned, calls that change something
 * are refused: state_put, the hh.steps/1, hh.checkpoint/1 and hh.summary/1 functions that write
 * return HH_ERROR (logged as misuse), request_stop does nothing. Calls that only read keep working
 * until destroy(). destroy() itself must not call the host.
 * Threading: each function carries a tag. [thread-safe]: any thread, including threads the plugin
 * started. [hook-thread] (the hh_run_request functions): only on the thread running this
 * instance's lifecycle call, during that call; from anywhere else it fails with HH_ERROR and a log
 * line naming the instance.
 * Ownership: strings returned by the host belong to the host (lifetime stated beside each
 * function). Data a plugin passes in is copied before the call returns.
 * Validation: the host checks everything a plugin passes (NULL pointers, lengths, sizes) and fails
 * the call with a message naming the field instead of trusting it. Limits below. */
#ifndef HOOKHOST_HOST_H
#define HOOKHOST_HOST_H

#include "status.h"
#include "value.h"

HH_EXTERN_C_BEGIN

/* Log levels, matching spdlog's order. Other values are clamped into this range. */
#define HH_LOG_TRACE 0
#define HH_LOG_DEBUG 1
#define HH_LOG_INFO 2
#define HH_LOG_WARN 3
#define HH_LOG_ERROR 4

/* Limits of what a plugin may hand the host. Longer text is cut (and marked "..."), a larger
 * state is refused. The state limit is the default; an operator may set another
 * ([run] max_state_mb). */
#define HH_MAX_LOG_MESSAGE 65536      /* bytes of one log message */
#define HH_MAX_STOP_REASON 1024       /* bytes of a stop reason */
#define HH_DEFAULT_MAX_STATE 16777216 /* bytes of one instance's stored state (16 MiB) */

typedef struct hh_host {
  uint32_t struct_size; /* HH_HOST_SIZE of the host's headers: check HH_HAS_FIELD before using a
                         * function a later minor added */
  uint32_t abi_major;   /* the host's ABI version */
  uint32_t abi_minor;
  void* host_data; /* reserved for the host; a plugin never reads or writes it */

  /* Name of this hook instance (the config section's NAME). Valid until destroy(). [thread-safe] */
  const char* (*instance_name)(const struct hh_host* host);

  /* Writes `message` (UTF-8, `size` bytes, no NUL needed; NULL writes nothing) to this instance's
   * logger, which is named after the instance. At most HH_MAX_LOG_MESSAGE bytes are kept.
   * [thread-safe] */
  void (*log)(const struct hh_host* host, int32_t level, const char* message, size_t size);

  /* Nonzero when a message at `level` would be written: lets a plugin skip formatting.
   * [thread-safe] */
  int32_t (*log_enabled)(const struct hh_host* host, int32_t level);

  /* The live global step: the number of training steps completed so far. During after_run this
   * already counts the step that just ran (the context's global_step is the value read before
   * it). [thread-safe] */
  int64_t (*global_step)(const struct hh_host* host);

  /* Asks the job to stop after the current step, with a reason (UTF-8, NUL-terminated, at most
   * HH_MAX_STOP_REASON bytes kept; NULL gives a generic one) for the log and for every hook's
   * end(). The first request wins. [thread-safe] */
  void (*request_stop)(const struct hh_host* host, const char* reason);

  /* Nonzero once a stop was requested by anyone (a hook, the operator, a signal). [thread-safe] */
  int32_t (*should_stop)(const struct hh_host* host);

  /* The job's run directory, where hooks write their outputs. Exists; valid until destroy().
   * [thread-safe] */
  const char* (*run_dir)(const struct hh_host* host);

  /* Stores this instance's state: `size` opaque bytes (data may be NULL only when size is 0),
   * copied by the host and written with the job's next checkpoint, tagged with this plugin's id
   * and its hh_plugin_entry.state_version. Replaces what was stored before. Returns HH_ERROR when
   * the state is larger than the job's limit (HH_DEFAULT_MAX_STATE unless configured), or after
   * end(). [thread-safe] */
  hh_status (*state_put)(const struct hh_host* host, const void* data, size_t size);

  /* Describes this instance's stored state: what was restored from a checkpoint when the job
   * resumed, or what state_put stored last. Returns 1 and sets *size and *version (the
   * state_version it was saved with; compare it with your own) when there is one; returns 0 when
   * there is none, which includes a checkpoint whose state for this instance name was saved by a
   * different plugin. Either pointer may be NULL. [thread-safe] */
  int32_t (*state_info)(const struct hh_host* host, size_t* size, uint32_t* version);

  /* Copies this instance's stored state into `buffer` (`capacity` bytes) under the host's lock, so
   * a concurrent state_put can never tear it. Returns HH_OK and sets *size to the bytes copied;
   * returns HH_ERROR when there is no state, or when it does not fit (then *size says how many
   * bytes it needs and nothing is copied). [thread-safe] */
  hh_status (*state_get)(const struct hh_host* host, void* buffer, size_t capacity, size_t* size);

  /* An optional service by versioned id ("hh.<name>/N"), or NULL when the host has none. The
   * returned table starts with its struct_size and stays valid until destroy(). [thread-safe] */
  const void* (*get_service)(const struct hh_host* host, const char* service_id);
} hh_host;

#define HH_HOST_SIZE HH_STRUCT_SIZE(hh_host, get_service)
#define HH_HOST_SIZE_1_0 HH_STRUCT_SIZE(hh_host, get_service)

/* Convenience: log a NUL-terminated message. */
static inline void hh_log(const hh_host* host, int32_t level, const char* message) {
  host->log(host, level, message, __builtin_strlen(message));
}

HH_EXTERN_C_END

#endif /* HOOKHOST_HOST_H */
