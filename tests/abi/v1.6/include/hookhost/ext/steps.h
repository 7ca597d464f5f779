/* hookhost service "hh.steps/1": the step at which the job is expected to end, when anyone
 * knows it (a step-limit hook publishes it; the workload may know its own), so that progress
 * displays can show a total. */
#ifndef HOOKHOST_EXT_STEPS_H
#define HOOKHOST_EXT_STEPS_H

#include "../hook.h"

HH_EXTERN_C_BEGIN

#define HH_SERVICE_STEPS "hh.steps/1"

typedef struct hh_steps_service {
  uint32_t struct_size;

  /* Publishes a global step (>= 0) at which this hook will stop the job. The smallest published
   * limit wins. Returns HH_ERROR for a negative step or after end(). [thread-safe] */
  hh_status (*publish_last_step)(const hh_host* host, int64_t last_step);

  /* The expected final global step: the smallest published limit or the workload's own end,
   * whichever is smaller; -1 when unknown. [thread-safe] */
  int64_t (*last_step)(const hh_host* host);

  /* Since ABI 1.5 (HH_HAS_FIELD(service, hh_steps_service, skip_until)): this hook needs no
   * before_run and no after_run for the steps whose context's global_step is below `global_step`,
   * and the host skips both calls for them (a sandboxed hook's messages with them), from the next
   * step on. A hook that keeps its own step schedule calls it when its schedule fires, with the
   * step it fires at next. A later call replaces it (0: every step again); a new session and a
   * restart of the hook clear it. Returns HH_ERROR for a negative step or after end().
   * [thread-safe] */
  hh_status (*skip_until)(const hh_host* host, int64_t global_step);
} hh_steps_service;

#define HH_STEPS_SERVICE_SIZE HH_STRUCT_SIZE(hh_steps_service, skip_until)
#define HH_STEPS_SERVICE_SIZE_1_0 HH_STRUCT_SIZE(hh_steps_service, last_step)
#define HH_STEPS_SERVICE_SIZE_1_5 HH_STRUCT_SIZE(hh_steps_service, skip_until)

HH_EXTERN_C_END

#endif /* HOOKHOST_EXT_STEPS_H */
