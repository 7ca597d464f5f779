/* hookhost plugin ABI: initialising an hh_hook in C, so a C hook sets only what it implements.
 *
 *   hh_hook_init(&self->hook, self);          every callback NULL: "not implemented"
 *   self->hook.after_run = my_after_run;      then set what you need
 *   self->hook.destroy = my_destroy;          destroy is always yours (required): you allocated */
#ifndef HOOKHOST_DEFAULTS_H
#define HOOKHOST_DEFAULTS_H

#include "hook.h"

HH_EXTERN_C_BEGIN

/* Zeroes the hook, sets struct_size and hook_data. Callbacks left NULL are never called and cost
 * nothing per step. */
static inline void hh_hook_init(hh_hook* hook, void* hook_data) {
  __builtin_memset(hook, 0, sizeof *hook);
  hook->struct_size = HH_HOOK_SIZE;
  hook->hook_data = hook_data;
}

HH_EXTERN_C_END

#endif /* HOOKHOST_DEFAULTS_H */
