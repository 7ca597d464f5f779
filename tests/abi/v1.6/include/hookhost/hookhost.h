/* hookhost plugin ABI 1.x (HH_ABI_MINOR in version.h says which minor): the umbrella header.
 * Include this from C plugins. */
#ifndef HOOKHOST_HOOKHOST_H
#define HOOKHOST_HOOKHOST_H

#include "defaults.h"
#include "entry.h"
#include "ext/checkpoint.h"
#include "ext/dist.h"
#include "ext/device_values.h"
#include "ext/job.h"
#include "ext/steps.h"
#include "ext/summary.h"
#include "hook.h"
#include "host.h"
#include "status.h"
#include "value.h"
#include "version.h"

#endif /* HOOKHOST_HOOKHOST_H */
