/* hookhost plugin ABI: services the host gives each hook instance.
 *
 * Threading: every function in hh_host is [thread-safe]: a plugin may call it from any thread,
 * including threads it started, from create() until destroy() returns. After destroy() the
 * pointer is dangling.
 * Ownership: strings and buffers returned by the host belong to the host; the lifetime of each is
 * stated beside the function. Data a plugin passes in is copied before the call returns. */
#ifndef HOOKHOST_HOST_H
#define HOOKHOST_HOST_H

#include "status.h"
#include "value.h"

HH_EXTERN_C_BEGIN

/* Log levels, matching spdlog's order. */
#define HH_LOG_TRACE 0
#define HH_LOG_DEBUG 1
#define HH_LOG_INFO 2
#define HH_LOG_WARN 3
#define HH_LOG_ERROR 4

typedef struct hh_host {
  uint32_t struct_size;
  void* host_data; /* reserved for the host; a plugin never reads or writes it */

  /* Name of this hook instance (the config section's NAME). Valid until destroy(). */
  const char* (*instance_name)(const struct hh_host* host);

  /* Writes `message` (UTF-8, `size` bytes, no NUL needed) to this instance's logger, which is
   * named after the instance. [thread-safe] */
  void (*log)(const struct hh_host* host, int32_t level, const char* message, size_t size);

  /* Nonzero when a message at `level` would be written: lets a plugin skip formatting.
   * [thread-safe] */
  int32_t (*log_enabled)(const struct hh_host* host, int32_t level);

  /* The live global step: the number of training steps completed so far. During after_run this
   * already counts the step that just ran (the context's global_step is the value read before
   * it). [thread-safe] */
  int64_t (*global_step)(const struct hh_host* host);

  /* Asks the job to stop after the current step, with a reason for the log and for every hook's
   * end(). The first reason wins. [thread-safe] */
  void (*request_stop)(const struct hh_host* host, const char* reason);

  /* Nonzero once a stop was requested by anyone (a hook, the operator, a signal). [thread-safe] */
  int32_t (*should_stop)(const struct hh_host* host);

  /* The job's run directory, where hooks write their outputs. Exists; valid until destroy().
   * [thread-safe] */
  const char* (*run_dir)(const struct hh_host* host);

  /* Stores this instance's state: opaque bytes, copied by the host and written with the job's
   * next checkpoint under the instance's name. Replaces what was stored before. Returns HH_OK or
   * HH_ERROR (out of memory). [thread-safe] */
  hh_status (*state_put)(const struct hh_host* host, const void* data, size_t size);

  /* The state stored for this instance: what was restored from a checkpoint when the job resumed,
   * or what state_put stored last. Sets *data to NULL and *size to 0 when there is none. The bytes
   * stay valid until the next state_put of this instance or destroy(). [thread-safe] */
  void (*state_get)(const struct hh_host* host, const void** data, size_t* size);

  /* An optional service by versioned id ("hh.<name>/N"), or NULL when the host has none.
   * The returned table stays valid until destroy(). [thread-safe] */
  const void* (*get_service)(const struct hh_host* host, const char* service_id);
} hh_host;

#define HH_HOST_SIZE HH_STRUCT_SIZE(hh_host, get_service)

/* Convenience: log a NUL-terminated message. */
static inline void hh_log(const hh_host* host, int32_t level, const char* message) {
  host->log(host, level, message, strlen(message));
}

HH_EXTERN_C_END

#endif /* HOOKHOST_HOST_H */
