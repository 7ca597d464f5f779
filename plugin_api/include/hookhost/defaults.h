/* hookhost plugin ABI: no-op callbacks for C authors, so a C hook writes only what it uses.
 *
 *   hh_hook_init(&self->hook, self);          every callback a no-op, destroy not set
 *   self->hook.after_run = my_after_run;      then override what you need
 *   self->hook.destroy = my_destroy;          destroy is always yours: you allocated */
#ifndef HOOKHOST_DEFAULTS_H
#define HOOKHOST_DEFAULTS_H

#include "hook.h"

HH_EXTERN_C_BEGIN

static inline hh_status hh_default_begin(hh_hook* hook, hh_error* err) {
  (void)hook;
  (void)err;
  return HH_OK;
}

static inline hh_status hh_default_after_create_session(hh_hook* hook,
                                                        const hh_session_info* session,
                                                        hh_error* err) {
  (void)hook;
  (void)session;
  (void)err;
  return HH_OK;
}

static inline hh_status hh_default_before_run(hh_hook* hook, const hh_run_context* context,
                                              hh_run_request* request, hh_error* err) {
  (void)hook;
  (void)context;
  (void)request;
  (void)err;
  return HH_OK;
}

static inline hh_status hh_default_after_run(hh_hook* hook, const hh_run_context* context,
                                             const hh_run_values* values, hh_error* err) {
  (void)hook;
  (void)context;
  (void)values;
  (void)err;
  return HH_OK;
}

static inline hh_status hh_default_end(hh_hook* hook, const hh_end_info* info, hh_error* err) {
  (void)hook;
  (void)info;
  (void)err;
  return HH_OK;
}

/* Sets struct_size and hook_data, and every lifecycle callback to its no-op default. Leaves
 * destroy NULL: the host refuses a hook without one. */
static inline void hh_hook_init(hh_hook* hook, void* hook_data) {
  memset(hook, 0, sizeof *hook);
  hook->struct_size = HH_HOOK_SIZE;
  hook->hook_data = hook_data;
  hook->begin = hh_default_begin;
  hook->after_create_session = hh_default_after_create_session;
  hook->before_run = hh_default_before_run;
  hook->after_run = hh_default_after_run;
  hook->end = hh_default_end;
}

HH_EXTERN_C_END

#endif /* HOOKHOST_DEFAULTS_H */
