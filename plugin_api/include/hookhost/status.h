/* hookhost plugin ABI: status codes and the error buffer. */
#ifndef HOOKHOST_STATUS_H
#define HOOKHOST_STATUS_H

#include "version.h"

HH_EXTERN_C_BEGIN

/* Every ABI call returns an hh_status. A fixed-width integer, not an enum: the size of a C enum is
 * not fixed across compilers. New codes may be added in later minors; a host treats an unknown code
 * as HH_ERROR. */
typedef int32_t hh_status;

#define HH_OK 0    /* success */
#define HH_ERROR 1 /* this call failed; the instance stays usable (the host applies on_error) */
#define HH_ERROR_FATAL 2    /* this instance is broken: disable it */
#define HH_STOP_REQUESTED 3 /* success, and please stop the job after the current step */

/* Capacity of hh_error.message, including the terminating NUL. */
#define HH_ERROR_MESSAGE_SIZE 1024

/* Filled by a plugin when a call returns HH_ERROR or HH_ERROR_FATAL. Owned by the caller (the
 * host), zeroed before each call; the plugin writes a NUL-terminated UTF-8 message, truncating it
 * to fit. */
typedef struct hh_error {
  uint32_t struct_size;
  int32_t code; /* plugin-specific detail code; 0 when unused */
  char message[HH_ERROR_MESSAGE_SIZE];
} hh_error;

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
