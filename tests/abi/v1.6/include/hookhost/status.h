/* hookhost plugin ABI: status codes and the error buffer. */
#ifndef HOOKHOST_STATUS_H
#define HOOKHOST_STATUS_H

#if __STDC_HOSTED__
#include <string.h> /* not needed here; kept for plugins that relied on it through 1.0 */
#endif

#include "version.h"

HH_EXTERN_C_BEGIN

/* Every ABI call returns an hh_status. A fixed-width integer, not an enum: the size of a C enum is
 * not fixed across compilers. A later minor may add codes; a host treats a code it does not know,
 * returned by a plugin, as HH_ERROR and says so in the log.
 *
 * What the host does with each code a lifecycle call returns (docs/abi.md has the full table):
 *  HH_OK              nothing: the call succeeded.
 *  HH_STOP_REQUESTED  the call succeeded, and the job stops after the current step (from begin or
 *                     after_create_session: before the first step; from end: nothing to stop).
 *  HH_ERROR           the call failed; the instance's on_error policy decides: `continue` keeps
 *                     calling it, `disable` (the default) disables it, `stop` disables it and
 *                     stops the job after the step, `fail` fails the job.
 *  HH_ERROR_FATAL     the instance is broken: it is disabled whatever the policy, and `stop` or
 *                     `fail` still stop or fail the job.
 * A disabled instance gets no further call except end() (outcome HH_OUTCOME_FAILED) and destroy().
 */
typedef int32_t hh_status;

#define HH_OK 0
#define HH_ERROR 1
#define HH_ERROR_FATAL 2
#define HH_STOP_REQUESTED 3

/* Capacity of hh_error.message, including the terminating NUL. */
#define HH_ERROR_MESSAGE_SIZE 1024

/* Filled by whoever fails a call, owned by whoever makes it. For lifecycle calls the host owns it
 * and resets it before each call (struct_size set, code 0, message ""); for host services
 * (hh.summary/1) the plugin owns it and must initialise it with hh_error_init (the host writes
 * into it only when its struct_size covers `message`). The message is UTF-8 and NUL-terminated; a
 * reader that finds no NUL inside the buffer cuts the text at the buffer's end. */
typedef struct hh_error {
  uint32_t struct_size;
  int32_t code; /* optional detail code chosen by the failing side; 0 = none. The host prints a
                 * nonzero code after the message ("(code 7)") */
  char message[HH_ERROR_MESSAGE_SIZE];
} hh_error;

#define HH_ERROR_SIZE HH_STRUCT_SIZE(hh_error, message)
#define HH_ERROR_SIZE_1_0 HH_STRUCT_SIZE(hh_error, message)

/* Zeroes `err` and sets its struct_size. Use it on every hh_error a plugin hands to the host. */
static inline void hh_error_init(hh_error* err) {
  __builtin_memset(err, 0, sizeof *err);
  err->struct_size = HH_ERROR_SIZE;
}

/* English name of a status code. Never NULL; static storage. */
static inline const char* hh_status_str(hh_status status) {
  switch (status) {
    case HH_OK: return "ok";
    case HH_ERROR: return "error";
    case HH_ERROR_FATAL: return "fatal error";
    case HH_STOP_REQUESTED: return "stop requested";
    default: return "unknown status";
  }
}

HH_EXTERN_C_END

#endif /* HOOKHOST_STATUS_H */
