/* hookhost extension "hh.device-values/1", offered BY A HOOK through hh_hook.get_extension: the
 * hook takes fetched values whose data lives on a device other than the CPU (an accelerator
 * pointer the hook must not dereference on the host). Without it, the host never hands such a
 * value to the hook: the after_run that would receive one fails instead, naming the tensor and its
 * device. */
#ifndef HOOKHOST_EXT_DEVICE_VALUES_H
#define HOOKHOST_EXT_DEVICE_VALUES_H

#include "../hook.h"

HH_EXTERN_C_BEGIN

#define HH_EXTENSION_DEVICE_VALUES "hh.device-values/1"

typedef struct hh_device_values_extension {
  uint32_t struct_size;
  /* Nonzero when this hook takes values on `device`. [hook-thread] */
  int32_t (*accepts)(const hh_hook* hook, hh_device device);
} hh_device_values_extension;

#define HH_DEVICE_VALUES_EXTENSION_SIZE HH_STRUCT_SIZE(hh_device_values_extension, accepts)
#define HH_DEVICE_VALUES_EXTENSION_SIZE_1_0 HH_STRUCT_SIZE(hh_device_values_extension, accepts)

HH_EXTERN_C_END

#endif /* HOOKHOST_EXT_DEVICE_VALUES_H */
