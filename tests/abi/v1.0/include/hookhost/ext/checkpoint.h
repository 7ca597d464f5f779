/* hookhost service "hh.checkpoint/1": checkpoints of the workload and every hook's state.
 * Get it with host->get_service(host, HH_SERVICE_CHECKPOINT); NULL when the host has none. */
#ifndef HOOKHOST_EXT_CHECKPOINT_H
#define HOOKHOST_EXT_CHECKPOINT_H

#include "../hook.h"

HH_EXTERN_C_BEGIN

#define HH_SERVICE_CHECKPOINT "hh.checkpoint/1"

/* Limits on the text arguments. */
#define HH_MAX_PATH_LENGTH 4096    /* bytes of a folder argument */
#define HH_MAX_BASENAME_LENGTH 255 /* bytes of a basename; no '/' */

typedef struct hh_checkpoint_service {
  uint32_t struct_size;

  /* Writes a checkpoint at the current global step into folder `dir` (NULL or "" = the run
   * directory's "checkpoints"; a relative path is taken from the run directory; created if
   * missing) as "<basename>-<step>" (basename NULL or "" = "model.ckpt"): the workload's state and
   * the state every hook instance stored with state_put. The write is atomic (temporary file,
   * fsync, rename, fsync of the folder) and checksummed; the folder's index (file "checkpoint") is
   * rewritten atomically too. Keeps the newest `max_to_keep` checkpoints by step (0 keeps all; the
   * newest is never deleted). On success copies the checkpoint's path into out_path
   * (NUL-terminated, truncated to out_path_capacity; may be NULL). `err` (initialised with
   * hh_error_init) receives the reason of a failure. [hook-thread] */
  hh_status (*save)(const hh_host* host, const char* dir, const char* basename,
                    uint32_t max_to_keep, char* out_path, size_t out_path_capacity, hh_error* err);
} hh_checkpoint_service;

#define HH_CHECKPOINT_SERVICE_SIZE HH_STRUCT_SIZE(hh_checkpoint_service, save)
#define HH_CHECKPOINT_SERVICE_SIZE_1_0 HH_STRUCT_SIZE(hh_checkpoint_service, save)

HH_EXTERN_C_END

#endif /* HOOKHOST_EXT_CHECKPOINT_H */
