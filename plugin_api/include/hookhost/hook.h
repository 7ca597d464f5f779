/* hookhost plugin ABI: the hook instance and its lifecycle calls.
 *
 * Lifecycle of one instance, enforced by the host:
 *   create -> begin -> after_create_session (once per session creation; repeats after a recovery)
 *          -> (before_run -> after_run)* -> end (exactly once) -> destroy (exactly once)
 * A step whose session call failed gets no after_run. A hook disabled after a failure (in any call,
 * begin included) gets no further calls except end() with outcome HH_OUTCOME_FAILED, then
 * destroy(). Every instance whose begin() was called gets exactly one end().
 *
 * Threading: the host serialises all calls on one instance ([hook-thread]), but the OS thread may
 * change between calls, so a plugin must not keep state in thread-locals between calls.
 * Different instances may be called concurrently.
 *
 * Errors: every call returns HH_OK, HH_STOP_REQUESTED, or HH_ERROR / HH_ERROR_FATAL with a message
 * in `err`. Nothing else may cross the boundary: no C++ exception, no longjmp. */
#ifndef HOOKHOST_HOOK_H
#define HOOKHOST_HOOK_H

#include "host.h"
#include "status.h"

HH_EXTERN_C_BEGIN

/* Given to after_create_session. */
typedef struct hh_session_info {
  uint32_t struct_size;
  int64_t global_step; /* the global step of the new session (restored from a checkpoint or 0) */
  uint32_t creation;   /* 1 for the first session, 2 after the first recovery, ... */
} hh_session_info;

/* Given to before_run and after_run of one step; the same values in both. */
typedef struct hh_run_context {
  uint32_t struct_size;
  int64_t global_step; /* the global step read before this step ran (TensorFlow's "stale" step) */
  int64_t iteration;   /* how many steps this job has run before this one in this process */
  int32_t stop_requested; /* nonzero when a stop was requested before this call */
} hh_run_context;

/* Filled by a hook in before_run. Host-owned; valid only during before_run. */
typedef struct hh_run_request {
  uint32_t struct_size;
  void* host_data; /* reserved for the host */

  /* Adds a fetch by tensor name; its value arrives in this hook's after_run. The name is copied.
   * Returns HH_ERROR when the workload provides no such tensor (the message says which it has). */
  hh_status (*add_fetch)(struct hh_run_request* request, const char* name);

  /* Adds a feed: the value replaces the named tensor for this step. The view is copied. A feed of
   * a tensor already fed by an earlier hook or by the caller is a conflict and fails this hook's
   * before_run. */
  hh_status (*add_feed)(struct hh_run_request* request, const hh_tensor* value);
} hh_run_request;

/* Given to after_run: exactly the values this hook fetched, in the order requested. Host-owned;
 * valid only during after_run. */
typedef struct hh_run_values {
  uint32_t struct_size;
  const hh_tensor* tensors;
  uint32_t count;
} hh_run_values;

/* How the job ended. */
typedef int32_t hh_outcome;
#define HH_OUTCOME_COMPLETED 1 /* the workload ran out of data */
#define HH_OUTCOME_STOPPED 2   /* a stop was requested; see hh_end_info.stop_cause */
#define HH_OUTCOME_FAILED 3    /* the job, or this hook, failed; see hh_end_info.reason */

typedef int32_t hh_stop_cause;
#define HH_STOP_CAUSE_NONE 0
#define HH_STOP_CAUSE_HOOK 1       /* a hook requested it */
#define HH_STOP_CAUSE_STEP_LIMIT 2 /* the host's or workload's step limit */
#define HH_STOP_CAUSE_SIGNAL 3     /* SIGINT or SIGTERM */
#define HH_STOP_CAUSE_HOST 4       /* the embedding program asked */

/* Given to end(). Beyond TensorFlow: end() is always delivered, and says how the job ended. */
typedef struct hh_end_info {
  uint32_t struct_size;
  hh_outcome outcome;
  hh_stop_cause stop_cause; /* HH_STOP_CAUSE_NONE unless outcome is HH_OUTCOME_STOPPED */
  const char* reason;       /* human-readable, NUL-terminated, never NULL; valid during end() */
  int64_t global_step;      /* the final global step */
} hh_end_info;

/* Outcome name ("completed", "stopped", "failed"). Never NULL; static storage. */
static inline const char* hh_outcome_name(hh_outcome outcome) {
  switch (outcome) {
    case HH_OUTCOME_COMPLETED: return "completed";
    case HH_OUTCOME_STOPPED: return "stopped";
    case HH_OUTCOME_FAILED: return "failed";
    default: return "unknown";
  }
}

/* One hook instance, created by hh_plugin_entry.create. The plugin owns this struct and everything
 * it points to until destroy() returns. */
typedef struct hh_hook {
  uint32_t struct_size;
  void* hook_data; /* reserved for the plugin; the host never reads it */

  /* Once, before the first session exists. [hook-thread & created] */
  hh_status (*begin)(struct hh_hook* hook, hh_error* err);

  /* After each session creation, the first and every recovery. [hook-thread & begun] */
  hh_status (*after_create_session)(struct hh_hook* hook, const hh_session_info* session,
                                    hh_error* err);

  /* Before each step: may add fetches and feeds through `request`, and may return
   * HH_STOP_REQUESTED (the step still runs). [hook-thread & session] */
  hh_status (*before_run)(struct hh_hook* hook, const hh_run_context* context,
                          hh_run_request* request, hh_error* err);

  /* After each step that ran: `values` holds exactly what this hook fetched in before_run.
   * [hook-thread & after before_run of the same step] */
  hh_status (*after_run)(struct hh_hook* hook, const hh_run_context* context,
                         const hh_run_values* values, hh_error* err);

  /* Exactly once, last: how the job (or this hook) ended. [hook-thread & after begin] */
  hh_status (*end)(struct hh_hook* hook, const hh_end_info* info, hh_error* err);

  /* Frees the instance. Must join any thread the plugin started; must not call the host.
   * [hook-thread & after end, or when begin was never called] */
  void (*destroy)(struct hh_hook* hook);
} hh_hook;

#define HH_HOOK_SIZE HH_STRUCT_SIZE(hh_hook, destroy)
#define HH_SESSION_INFO_SIZE HH_STRUCT_SIZE(hh_session_info, creation)
#define HH_RUN_CONTEXT_SIZE HH_STRUCT_SIZE(hh_run_context, stop_requested)
#define HH_RUN_REQUEST_SIZE HH_STRUCT_SIZE(hh_run_request, add_feed)
#define HH_RUN_VALUES_SIZE HH_STRUCT_SIZE(hh_run_values, count)
#define HH_END_INFO_SIZE HH_STRUCT_SIZE(hh_end_info, global_step)

/* The fetched value named `name`, or NULL. */
static inline const hh_tensor* hh_find_value(const hh_run_values* values, const char* name) {
  uint32_t i;
  for (i = 0; i < values->count; ++i)
    if (strcmp(values->tensors[i].name, name) == 0) return &values->tensors[i];
  return NULL;
}

/* Writes a NUL-terminated message into `err` (truncating) and returns `status`. */
static inline hh_status hh_fail(hh_error* err, hh_status status, const char* message) {
  if (err) {
    size_t n = strlen(message);
    if (n >= HH_ERROR_MESSAGE_SIZE) n = HH_ERROR_MESSAGE_SIZE - 1;
    memcpy(err->message, message, n);
    err->message[n] = '\0';
  }
  return status;
}

HH_EXTERN_C_END

#endif /* HOOKHOST_HOOK_H */
