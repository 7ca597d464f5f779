/* lr_warmup: a hookhost hook in plain C99. For the first `warmup_steps` global steps it feeds the
 * learning rate, rising linearly from `start_lr` to `target_lr`; after that it feeds nothing and
 * the workload's own schedule takes over. It follows the global step, not a local counter, so a
 * job resumed in the middle of the warmup continues where it was.
 *
 * Everything a C author needs is in <hookhost/hookhost.h>: start an hh_hook from the no-op
 * defaults (hh_hook_init), set the callbacks you need and destroy, describe the parameters once
 * with HH_PLUGIN_DEFINE, and return statuses (never longjmp). */
#include <hookhost/hookhost.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct lr_warmup {
  hh_hook hook; /* first member: the host holds a pointer to it */
  const hh_host* host;
  double start_lr;
  double target_lr;
  int64_t warmup_steps;
  char tensor[256];
  int finished_logged;
} lr_warmup;

static hh_status warmup_after_create_session(hh_hook* hook, const hh_session_info* session,
                                             hh_error* err) {
  lr_warmup* w = (lr_warmup*)hook->hook_data;
  char message[512]; /* room for the longest tensor name */
  (void)err;
  if (session->global_step < w->warmup_steps) {
    snprintf(message, sizeof message, "warming %s up from step %lld until step %lld", w->tensor,
             (long long)session->global_step, (long long)w->warmup_steps);
    hh_log(w->host, HH_LOG_INFO, message);
  }
  return HH_OK;
}

static hh_status warmup_before_run(hh_hook* hook, const hh_run_context* context,
                                   hh_run_request* request, hh_error* err) {
  lr_warmup* w = (lr_warmup*)hook->hook_data;
  /* The step about to run is step number global_step + 1 of warmup_steps. */
  int64_t step = context->global_step + 1;
  float value;
  hh_tensor feed;
  char message[512]; /* room for the longest tensor name */

  if (step > w->warmup_steps) {
    if (!w->finished_logged) {
      w->finished_logged = 1;
      snprintf(message, sizeof message,
               "warmup done at global step %lld: %s now follows the workload's schedule",
               (long long)w->warmup_steps, w->tensor);
      hh_log(w->host, HH_LOG_INFO, message);
    }
    return HH_OK;
  }
  if (step < 1) step = 1;
  value =
      (float)(w->start_lr + (w->target_lr - w->start_lr) * (double)step / (double)w->warmup_steps);

  hh_tensor_init(&feed); /* struct_size, a CPU device, everything else zero */
  feed.name = w->tensor;
  feed.dtype = HH_DTYPE_F32;
  feed.data = &value; /* the host copies the view before add_feed returns */
  feed.byte_size = sizeof value;
  if (request->add_feed(request, &feed) != HH_OK) {
    /* The host records its own, more precise reason; this message is a fallback. */
    snprintf(message, sizeof message, "the workload refused a feed of '%s'", w->tensor);
    return hh_fail(err, HH_ERROR, message);
  }
  return HH_OK;
}

static void warmup_destroy(hh_hook* hook) {
  free(hook->hook_data);
}

static hh_status warmup_create(const hh_host* host, const hh_create_args* args, hh_hook** out,
                               hh_error* err) {
  const hh_param_value* start = hh_find_param(args, "start_lr");
  const hh_param_value* target = hh_find_param(args, "target_lr");
  const hh_param_value* steps = hh_find_param(args, "warmup_steps");
  const hh_param_value* tensor = hh_find_param(args, "tensor");
  char message[160];
  lr_warmup* w;

  /* The host has validated types and required values; the ranges are ours to check. */
  if (steps->int_value <= 0) {
    snprintf(message, sizeof message, "parameter 'warmup_steps' must be > 0, got %lld",
             (long long)steps->int_value);
    return hh_fail(err, HH_ERROR, message);
  }
  if (!(target->float_value > 0.0)) {
    snprintf(message, sizeof message, "parameter 'target_lr' must be > 0, got %g",
             target->float_value);
    return hh_fail(err, HH_ERROR, message);
  }
  if (start->float_value < 0.0 || start->float_value > target->float_value) {
    snprintf(message, sizeof message,
             "parameter 'start_lr' must be between 0 and 'target_lr' (%g), got %g",
             target->float_value, start->float_value);
    return hh_fail(err, HH_ERROR, message);
  }
  if (strlen(tensor->string_value) >= sizeof w->tensor)
    return hh_fail(err, HH_ERROR, "parameter 'tensor': the name is too long");

  w = (lr_warmup*)calloc(1, sizeof *w);
  if (!w) return hh_fail(err, HH_ERROR, "out of memory");
  w->host = host;
  w->start_lr = start->float_value;
  w->target_lr = target->float_value;
  w->warmup_steps = steps->int_value;
  strcpy(w->tensor, tensor->string_value);
  hh_hook_init(&w->hook, w); /* no-op defaults for the callbacks this hook does not need */
  w->hook.after_create_session = warmup_after_create_session;
  w->hook.before_run = warmup_before_run;
  w->hook.destroy = warmup_destroy;
  *out = &w->hook;
  return HH_OK;
}

#define LR_WARMUP_PARAMS(P)                                                            \
  P(target_lr, FLOAT, REQUIRED, "", "learning rate reached at the end of the warmup")  \
  P(warmup_steps, INT, DEFAULT, "100", "global steps the warmup lasts")                \
  P(start_lr, FLOAT, DEFAULT, "0",                                                     \
    "learning rate the ramp starts from (the first step gets one increment above it)") \
  P(tensor, STRING, DEFAULT, "learning_rate", "name of the f32 tensor to feed")

HH_PLUGIN_DEFINE("lr_warmup", "1.0.0",
                 "Feeds a linearly warmed-up learning rate for the first steps", LR_WARMUP_PARAMS,
                 warmup_create)
