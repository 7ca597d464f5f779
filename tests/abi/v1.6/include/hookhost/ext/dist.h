/* hookhost service "hh.dist/1" (since ABI 1.1): collectives over the processes that run this hook
 * instance, for small numeric tensors such as a loss averaged over every worker before it is
 * logged (as Lightning's sync_dist or Horovod's metric averaging). Get it with
 * host->get_service(host, HH_SERVICE_DIST); NULL when the host has none.
 *
 * The group. The processes of the job that run this instance (its [hook.NAME] ranks), ranked in
 * the job's rank order from 0. A job of one process, or an instance that runs on one process
 * only, is a group of one: rank 0, world size 1, and every collective returns at once (allreduce
 * leaves the values as they are, the mean of one value being itself).
 *
 * Collectives (allreduce, broadcast, barrier). Callable only from this instance's own lifecycle
 * calls (begin, after_create_session, before_run, after_run, end), on the thread that runs them
 * [hook-thread]; never from create(), destroy() or another thread (refused with HH_ERROR, logged
 * as plugin misbehaviour). And only collectively: every process of the group calls the same
 * function in the same callback of the same step, in the same order, with the same count (and
 * op, or root). A call the others do not join within the job's [run] collective_timeout_ms
 * (default 60000) fails with HH_ERROR and a message naming the hook, the plugin and the callback;
 * so does a call the others made differently (another function, count, op, root or callback).
 * After such a failure the service is unusable for this instance: every later collective fails
 * at once, on this process, so a hook that calls it on some processes only never leaves the job
 * hanging. The status is the only result: a failed call leaves `values` as they were.
 *
 * In every function `err` (initialised with hh_error_init; may be NULL) receives the reason of a
 * failure. */
#ifndef HOOKHOST_EXT_DIST_H
#define HOOKHOST_EXT_DIST_H

#include "../hook.h"

HH_EXTERN_C_BEGIN

#define HH_SERVICE_DIST "hh.dist/1"

/* Reductions of allreduce, element by element. MEAN is SUM divided by the world size. */
#define HH_DIST_SUM 0
#define HH_DIST_MEAN 1
#define HH_DIST_MIN 2
#define HH_DIST_MAX 3

/* The most values one allreduce or broadcast carries: collectives are for small numeric tensors
 * (metrics, counters, a flag), not for model weights. */
#define HH_DIST_MAX_COUNT 65536

typedef struct hh_dist_service {
  uint32_t struct_size;

  /* This process's rank in the instance's group, from 0 (-1, and 0 from world_size and is_chief,
   * for a host pointer the host never issued). [thread-safe] */
  int32_t (*rank)(const hh_host* host);

  /* How many processes run this instance (1 in a job of one process). [thread-safe] */
  int32_t (*world_size)(const hh_host* host);

  /* Nonzero on the job's rank 0, the chief (which writes the job's checkpoints and runs the
   * chief-only hooks), whatever the instance's own group. [thread-safe] */
  int32_t (*is_chief)(const hh_host* host);

  /* Reduces `count` doubles (0 to HH_DIST_MAX_COUNT) over the group in place with `op` (one of
   * HH_DIST_*): on return every process holds the same result. `values` may be NULL only when
   * `count` is 0. [hook-thread], collective. */
  hh_status (*allreduce)(const hh_host* host, double* values, size_t count, int32_t op,
                         hh_error* err);

  /* Copies the `count` doubles (0 to HH_DIST_MAX_COUNT) of the process whose group rank is
   * `root` into `values` on every other process. `values` may be NULL only when `count` is 0.
   * [hook-thread], collective. */
  hh_status (*broadcast)(const hh_host* host, double* values, size_t count, int32_t root,
                         hh_error* err);

  /* Returns once every process of the group has called it. [hook-thread], collective. */
  hh_status (*barrier)(const hh_host* host, hh_error* err);
} hh_dist_service;

#define HH_DIST_SERVICE_SIZE HH_STRUCT_SIZE(hh_dist_service, barrier)
/* hh.dist/1 came with ABI 1.1: its size then is its minimum. */
#define HH_DIST_SERVICE_SIZE_1_1 HH_STRUCT_SIZE(hh_dist_service, barrier)
/* Deprecated: a misnomer (1.0 had no hh.dist/1), kept so that sources using it still compile. */
#define HH_DIST_SERVICE_SIZE_1_0 HH_DIST_SERVICE_SIZE_1_1

HH_EXTERN_C_END

#endif /* HOOKHOST_EXT_DIST_H */
