/* hookhost plugin ABI: versioning. ABI 1.6 is the current minor: 1.0 as frozen, plus the services
 * hh.dist/1 (ext/dist.h) and hh.job/1 (ext/job.h) and the note's placement= line (1.1), plus the
 * note's needs.* lines, written with HH_PLUGIN_NEEDS (1.2), plus the note's mode= line, written
 * with HH_PLUGIN_MODE (1.3), plus hh_run_context.wall_time_ns and the note's cadence line (1.4),
 * plus hh.steps/1 skip_until (1.5), plus the outcome HH_OUTCOME_DETACHED (1.6). docs/abi.md states the
 * full contract; each minor's headers are frozen byte for byte under tests/abi/v1.MINOR/.
 *
 * The headers need only the compiler's freestanding headers (stddef.h, stdint.h): string
 * functions are the compiler's builtins, and nothing needs libm.
 *
 * Only what is declared under hookhost/ is public; anything else may change without notice.
 *
 * Rules for ABI major 1 (what a later minor may do, and what never changes):
 *  - Every struct that crosses the boundary starts with `uint32_t struct_size`, set by its producer
 *    to the struct's size macro (HH_TENSOR_SIZE, ...). Its ABI 1.0 size (HH_TENSOR_SIZE_1_0, ...)
 *    is its minimum forever (HH_<NAME>_SIZE_1_1 for a struct that 1.1 introduced): a reader
 *    accepts any struct_size at least that big, and reads a field
 *    that a later minor appended only after HH_HAS_FIELD says the producer wrote it.
 *  - A later minor may append fields at the end of a struct, add values to a code list (statuses,
 *    dtypes, devices, ...), and add service or extension ids ("hh.<name>/N"). Nothing shipped in
 *    1.0 is ever reordered, removed, re-typed or given another meaning.
 *  - Arrays of structs never use the reader's sizeof as their stride: each array travels with its
 *    element stride (param_stride, tensor_stride), and is read through the accessors
 *    (hh_entry_param, hh_create_param, hh_run_value).
 *  - The entry symbol carries the major in its name (hookhost_plugin_v1). A host loads a plugin
 *    when the majors are equal and the host's minor is at least the plugin's min_abi_minor (the
 *    lowest host minor the plugin runs on: by default the minor it was built against). */
#ifndef HOOKHOST_VERSION_H
#define HOOKHOST_VERSION_H

#include <stddef.h>
#include <stdint.h>

#define HH_ABI_MAJOR 1
#define HH_ABI_MINOR 6

/* The hookhost product version (host and SDK), independent of the ABI version. */
#define HOOKHOST_VERSION_MAJOR 1
#define HOOKHOST_VERSION_MINOR 0
#define HOOKHOST_VERSION_PATCH 0
#define HOOKHOST_VERSION_STRING "1.0.0"

/* Size of a struct up to and including its last field. Not sizeof(): trailing padding must not make
 * an older producer appear to provide a field it does not know. */
#define HH_STRUCT_SIZE(type, last_field) \
  ((uint32_t)(offsetof(type, last_field) + sizeof(((type*)0)->last_field)))

/* True when the struct pointed to by `p` (of type `type`) is large enough to hold `field`. */
#define HH_HAS_FIELD(p, type, field) \
  ((p)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

#ifdef __cplusplus
#define HH_EXTERN_C extern "C"
#define HH_EXTERN_C_BEGIN extern "C" {
#define HH_EXTERN_C_END }
#else
#define HH_EXTERN_C
#define HH_EXTERN_C_BEGIN
#define HH_EXTERN_C_END
#endif

#define HH_EXPORT __attribute__((visibility("default")))

/* Nonzero when a host of this ABI loads a plugin of major `plugin_major` that needs at least host
 * minor `plugin_min_minor`. */
static inline int hh_abi_is_compatible(uint32_t plugin_major, uint32_t plugin_min_minor) {
  return plugin_major == HH_ABI_MAJOR && plugin_min_minor <= HH_ABI_MINOR;
}

#endif /* HOOKHOST_VERSION_H */
