/* hookhost plugin ABI v1: the umbrella header. Include this from C plugins. */
#ifndef HOOKHOST_HOOKHOST_H
#define HOOKHOST_HOOKHOST_H

#include "version.h"
#include "status.h"
#include "value.h"
#include "host.h"
#include "hook.h"
#include "entry.h"
#include "ext/checkpoint.h"
#include "ext/steps.h"
#include "ext/summary.h"

#endif /* HOOKHOST_HOOKHOST_H */
