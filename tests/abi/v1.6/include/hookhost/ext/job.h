/* hookhost service "hh.job/1" (since ABI 1.1): facts about the job that runs the hook. A plugin
 * whose parameters name files reads config_dir to take relative paths from the configuration
 * file's folder, as hookhost does for its own keys, so a job behaves the same from any working
 * directory. */
#ifndef HOOKHOST_EXT_JOB_H
#define HOOKHOST_EXT_JOB_H

#include "../hook.h"

HH_EXTERN_C_BEGIN

#define HH_SERVICE_JOB "hh.job/1"

typedef struct hh_job_service {
  uint32_t struct_size;

  /* The absolute folder of the job's configuration file, without a trailing separator; the
   * working directory (when the job started) for a job that has no configuration file (an
   * embedding program, or `hookhost run` with --set only). Never NULL. Valid until destroy()
   * returns. [thread-safe] */
  const char* (*config_dir)(const hh_host* host);
} hh_job_service;

#define HH_JOB_SERVICE_SIZE HH_STRUCT_SIZE(hh_job_service, config_dir)
/* hh.job/1 came with ABI 1.1: its size then is its minimum. */
#define HH_JOB_SERVICE_SIZE_1_1 HH_STRUCT_SIZE(hh_job_service, config_dir)

HH_EXTERN_C_END

#endif /* HOOKHOST_EXT_JOB_H */
