/* hookhost plugin ABI: the hook instance and its lifecycle calls.
 *
 * Lifecycle of one instance, enforced by the host:
 *   create -> begin -> after_create_session (once per session creation; repeats after a recovery)
 *          -> (before_run -> after_run)* -> end (exactly once) -> destroy (exactly once)
 * A step whose session call failed gets no after_run. A hook disabled after a failure (in any call,
 * begin included) gets no further calls except end() with outcome HH_OUTCOME_FAILED, then
 * destroy(). Every instance whose begin() was called gets exactly one end(). What each returned
 * status does is stated in status.h.
 *
 * A callback left NULL is not implemented: the host never calls it, costs nothing for it, and
 * treats it as returning HH_OK (a NULL before_run fetches nothing; its after_run, when set, is
 * still called with no values). Only destroy is required. The host copies the callback pointers
 * once, when create() returns: changing them later has no effect.
 *
 * Threading: the host serialises all calls on one instance ([hook-thread]), but the OS thread may
 * change between calls, so a plugin must not keep state in thread-locals between calls.
 * Different instances may be called concurrently.
 *
 * Errors: every call returns a status, with a message in `err` for HH_ERROR / HH_ERROR_FATAL.
 * Nothing else may cross the boundary: no C++ exception, no longjmp. */
#ifndef HOOKHOST_HOOK_H
#define HOOKHOST_HOOK_H

#include "host.h"
#include "status.h"

HH_EXTERN_C_BEGIN

/* Given to after_create_session. */
typedef struct hh_session_info {
  uint32_t struct_size;
  uint32_t creation;   /* 1 for the first session, 2 after the first recovery, ... */
  int64_t global_step; /* the global step of the new session (restored from a checkpoint or 0) */
} hh_session_info;

/* Given to before_run and after_run of one step; the same values in both, except stop_requested. */
typedef struct hh_run_context {
  uint32_t struct_size;
  int32_t stop_requested; /* nonzero when a stop was requested before this call */
  int64_t global_step;    /* the global step read before this step ran (TensorFlow's "stale"
                           * step) */
  int64_t iteration;      /* how many steps this job has run before this one in this process */
  /* ABI 1.4 (read it after HH_HAS_FIELD(ctx, hh_run_context, wall_time_ns)): for a call made
   * behind the step (an observer, docs/observers.md), the host's wall clock (CLOCK_REALTIME, ns
   * since the Unix epoch) when this step's run returned; 0 for a call made on the step, whose own
   * clock reads the step's time. */
  int64_t wall_time_ns;
} hh_run_context;

/* Filled by a hook in before_run. Host-owned; usable only during that before_run, on its thread:
 * a call through a request kept past it is refused (HH_ERROR) and logged as plugin misbehaviour. */
typedef struct hh_run_request {
  uint32_t struct_size;
  void* host_data; /* reserved for the host */

  /* Adds a fetch by tensor name (NUL-terminated, at most HH_MAX_NAME_LENGTH bytes); its value
   * arrives in this hook's after_run. The name is copied. Returns HH_ERROR when the workload
   * provides no such tensor (the host's message says which it has); that fails this before_run. */
  hh_status (*add_fetch)(struct hh_run_request* request, const char* name);

  /* Adds a feed: the value replaces the named tensor for this step. The view is validated (see
   * docs/abi.md: struct_size, dtype, rank, extents, strides, byte_size, data, string elements) and
   * copied. An invalid view, or a feed of a tensor already fed by an earlier hook or by the caller
   * (a conflict), returns HH_ERROR and fails this before_run. */
  hh_status (*add_feed)(struct hh_run_request* request, const hh_tensor* value);
} hh_run_request;

/* Given to after_run: exactly the values this hook fetched, in the order requested. Host-owned;
 * valid only during after_run. Read element i with hh_run_value(values, i): the array's stride is
 * tensor_stride, which may be larger than your sizeof(hh_tensor). */
typedef struct hh_run_values {
  uint32_t struct_size;
  uint32_t count;
  const hh_tensor* tensors;
  uint32_t tensor_stride; /* bytes from one element to the next */
} hh_run_values;

/* How the job ended. */
typedef int32_t hh_outcome;
#define HH_OUTCOME_COMPLETED 1 /* the workload ran out of data */
#define HH_OUTCOME_STOPPED 2   /* a stop was requested; see hh_end_info.stop_cause */
#define HH_OUTCOME_FAILED 3    /* the job, or this hook, failed; see hh_end_info.reason */
/* Since 1.6: this hook was taken off a job that runs on (hookhost ctl detach, or a hook recreated
 * by ctl set); see hh_end_info.reason. A plugin built against an older minor gets
 * HH_OUTCOME_STOPPED with HH_STOP_CAUSE_HOST instead: it never sees a value it does not know. */
#define HH_OUTCOME_DETACHED 4

typedef int32_t hh_stop_cause;
#define HH_STOP_CAUSE_NONE 0
#define HH_STOP_CAUSE_HOOK 1 /* a hook requested it (a step limit hook included) */
/* 2 is reserved and never produced. */
#define HH_STOP_CAUSE_SIGNAL 3 /* SIGINT or SIGTERM */
#define HH_STOP_CAUSE_HOST 4   /* the embedding program asked */

/* Given to end(). Beyond TensorFlow: end() is always delivered, and says how the job ended. */
typedef struct hh_end_info {
  uint32_t struct_size;
  hh_outcome outcome;
  hh_stop_cause stop_cause; /* HH_STOP_CAUSE_NONE unless outcome is HH_OUTCOME_STOPPED */
  const char* reason;       /* human-readable, NUL-terminated, never NULL; valid during end() */
  int64_t global_step;      /* the final global step */
} hh_end_info;

/* Outcome name ("completed", "stopped", "failed", "detached"). Never NULL; static storage. */
static inline const char* hh_outcome_name(hh_outcome outcome) {
  switch (outcome) {
    case HH_OUTCOME_COMPLETED: return "completed";
    case HH_OUTCOME_STOPPED: return "stopped";
    case HH_OUTCOME_FAILED: return "failed";
    case HH_OUTCOME_DETACHED: return "detached";
    default: return "unknown";
  }
}

/* One hook instance, created by hh_plugin_entry.create. The plugin owns this struct and everything
 * it points to until destroy() returns. Every callback but destroy may be NULL. */
typedef struct hh_hook {
  uint32_t struct_size; /* HH_HOOK_SIZE */
  void* hook_data;      /* reserved for the plugin; the host never reads it */

  /* Once, before the first session exists. [hook-thread & created] */
  hh_status (*begin)(struct hh_hook* hook, hh_error* err);

  /* After each session creation, the first and every recovery (session->creation > 1).
   * [hook-thread & begun] */
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

  /* Frees the instance. Required (never NULL). Must join any thread the plugin started; must not
   * call the host. [hook-thread & after end, or when begin was never called] */
  void (*destroy)(struct hh_hook* hook);

  /* An optional interface this instance offers the host, by versioned id ("hh.<name>/N", see
   * hookhost/ext/), or NULL. May itself be NULL (no extensions). The host asks once, right after
   * create(); the returned table starts with its struct_size and must stay valid until destroy().
   * [hook-thread & created] */
  const void* (*get_extension)(const struct hh_hook* hook, const char* extension_id);
} hh_hook;

#define HH_HOOK_SIZE HH_STRUCT_SIZE(hh_hook, get_extension)
#define HH_SESSION_INFO_SIZE HH_STRUCT_SIZE(hh_session_info, global_step)
#define HH_RUN_CONTEXT_SIZE HH_STRUCT_SIZE(hh_run_context, wall_time_ns)
#define HH_RUN_REQUEST_SIZE HH_STRUCT_SIZE(hh_run_request, add_feed)
#define HH_RUN_VALUES_SIZE HH_STRUCT_SIZE(hh_run_values, tensor_stride)
#define HH_END_INFO_SIZE HH_STRUCT_SIZE(hh_end_info, global_step)

/* The ABI 1.0 sizes: the smallest struct_size a reader ever accepts. */
#define HH_HOOK_SIZE_1_0 HH_STRUCT_SIZE(hh_hook, get_extension)
#define HH_SESSION_INFO_SIZE_1_0 HH_STRUCT_SIZE(hh_session_info, global_step)
#define HH_RUN_CONTEXT_SIZE_1_0 HH_STRUCT_SIZE(hh_run_context, iteration)
#define HH_RUN_REQUEST_SIZE_1_0 HH_STRUCT_SIZE(hh_run_request, add_feed)
#define HH_RUN_VALUES_SIZE_1_0 HH_STRUCT_SIZE(hh_run_values, tensor_stride)
#define HH_END_INFO_SIZE_1_0 HH_STRUCT_SIZE(hh_end_info, global_step)

/* Value `i` (< values->count) of an after_run, read with the producer's stride. */
static inline const hh_tensor* hh_run_value(const hh_run_values* values, uint32_t i) {
  return (const hh_tensor*)(const void*)((const char*)values->tensors +
                                         (size_t)i * values->tensor_stride);
}

/* The fetched value named `name`, or NULL. */
static inline const hh_tensor* hh_find_value(const hh_run_values* values, const char* name) {
  uint32_t i;
  for (i = 0; i < values->count; ++i)
    if (__builtin_strcmp(hh_run_value(values, i)->name, name) == 0) return hh_run_value(values, i);
  return NULL;
}

/* Writes a NUL-terminated message into `err` (truncating) and returns `status`. For an hh_error
 * the host passed to a lifecycle call, or one the plugin initialised with hh_error_init. */
static inline hh_status hh_fail(hh_error* err, hh_status status, const char* message) {
  if (err && err->struct_size >= HH_ERROR_SIZE_1_0) {
    size_t n = message ? __builtin_strlen(message) : 0;
    if (n >= HH_ERROR_MESSAGE_SIZE) n = HH_ERROR_MESSAGE_SIZE - 1;
    if (n) __builtin_memcpy(err->message, message, n);
    err->message[n] = '\0';
  }
  return status;
}

HH_EXTERN_C_END

#endif /* HOOKHOST_HOOK_H */
