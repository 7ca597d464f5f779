/* hookhost service "hh.checkpoint/1": checkpoints of the workload and every hook's state.
 * Get it with host->get_service(host, HH_SERVICE_CHECKPOINT); NULL when the host has none. */
#ifndef HOOKHOST_EXT_CHECKPOINT_H
#define HOOKHOST_EXT_CHECKPOINT_H

#include "../hook.h"

HH_EXTERN_C_BEGIN

#define HH_SERVICE_CHECKPOINT "hh.checkpoint/1"

typedef struct hh_checkpoint_service {
  uint32_t struct_size;

  /* Writes a checkpoint at the current global step into folder `dir` (created if missing) as
   * "<basename>-<step>": the workload's state and the state every hook instance stored with
   * state_put. The write is atomic (temporary file, fsync, rename, fsync of the folder) and
   * checksummed; the folder's index (file "checkpoint") is rewritten atomically too. Keeps the
   * newest `max_to_keep` checkpoints by step (0 keeps all; the newest is never deleted).
   * On success copies the checkpoint's path into out_path (NUL-terminated, truncated to
   * out_path_capacity; may be NULL). [hook-thread: only from a lifecycle call] */
  hh_status (*save)(const hh_host* host, const char* dir, const char* basename,
                    uint32_t max_to_keep, char* out_path, size_t out_path_capacity, hh_error* err);
} hh_checkpoint_service;

#define HH_CHECKPOINT_SERVICE_SIZE HH_STRUCT_SIZE(hh_checkpoint_service, save)

HH_EXTERN_C_END

#endif /* HOOKHOST_EXT_CHECKPOINT_H */
