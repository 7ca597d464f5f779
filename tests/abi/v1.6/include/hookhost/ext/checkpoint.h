/* hookhost service "hh.checkpoint/1": checkpoints of the workload and every hook's state.
 * Get it with host->get_service(host, HH_SERVICE_CHECKPOINT); NULL when the host has none.
 *
 * A hook asks for a checkpoint; the runtime writes it at the next step boundary, so the
 * workload's state and every hook's state are taken at one moment, whichever hook asked and
 * wherever it is in the hook order. Where checkpoints go, their names and how many are kept
 * belong to the job's configuration ([run] checkpoint_dir and keep_checkpoints), not to a hook. */
#ifndef HOOKHOST_EXT_CHECKPOINT_H
#define HOOKHOST_EXT_CHECKPOINT_H

#include "../hook.h"

HH_EXTERN_C_BEGIN

#define HH_SERVICE_CHECKPOINT "hh.checkpoint/1"

/* Bytes of a folder argument of any service (see also ext/summary.h). */
#define HH_MAX_PATH_LENGTH 4096

typedef struct hh_checkpoint_service {
  uint32_t struct_size;

  /* Asks for a checkpoint. The runtime writes it once the current phase is over: after every
   * hook's after_run of the step (a request made in before_run or after_run), after every hook's
   * after_create_session, or after every hook's end() -- but never when the job failed, so a
   * failing job cannot replace a good checkpoint. Several requests before one boundary give one
   * checkpoint. `reason` (UTF-8, NUL-terminated, at most HH_MAX_STOP_REASON bytes kept; may be
   * NULL) is logged with the checkpoint's path. Returns HH_OK when the request is recorded,
   * HH_ERROR after end() returned. [thread-safe] */
  hh_status (*request)(const hh_host* host, const char* reason);

  /* The newest checkpoint this job wrote, complete on disk: copies its path into `out_path`
   * (NUL-terminated, cut to `capacity`; may be NULL) and its global step into *step (may be NULL),
   * and returns 1; returns 0 when the job has written none yet. It never waits: a checkpoint still
   * being written in the background is not named until its write has completed. A checkpoint
   * that could not be written is logged by the host and does not change what this returns. In a
   * distributed job every process names the chief's checkpoint, learnt at the first step boundary
   * after the chief completed it. [thread-safe] */
  int32_t (*last_written)(const hh_host* host, char* out_path, size_t capacity, int64_t* step);
} hh_checkpoint_service;

#define HH_CHECKPOINT_SERVICE_SIZE HH_STRUCT_SIZE(hh_checkpoint_service, last_written)
#define HH_CHECKPOINT_SERVICE_SIZE_1_0 HH_STRUCT_SIZE(hh_checkpoint_service, last_written)

HH_EXTERN_C_END

#endif /* HOOKHOST_EXT_CHECKPOINT_H */
