/* hookhost plugin ABI: versioning.
 *
 * Only what is declared under hookhost/ is public; anything else may change without notice.
 *
 * Rules for ABI major 1:
 *  - Within a major, structs only grow at the end, enums only gain values, and new capabilities
 *    arrive as new service ids ("hh.<name>/N"). Nothing shipped is reordered, removed or re-typed.
 *  - Every struct that crosses the boundary starts with `uint32_t struct_size`, set by its producer
 * to HH_STRUCT_SIZE(type, last_field). A reader checks HH_HAS_FIELD before touching a field that a
 *    later minor appended.
 *  - The entry symbol carries the major in its name (hookhost_plugin_v1). A host accepts a plugin
 *    when the majors are equal and the plugin's minor is not newer than the host's. */
#ifndef HOOKHOST_VERSION_H
#define HOOKHOST_VERSION_H

#include <stddef.h>
#include <stdint.h>

#define HH_ABI_MAJOR 1
#define HH_ABI_MINOR 0

/* The hookhost product version (host and SDK), independent of the ABI version. */
#define HOOKHOST_VERSION_MAJOR 0
#define HOOKHOST_VERSION_MINOR 1
#define HOOKHOST_VERSION_PATCH 0
#define HOOKHOST_VERSION_STRING "0.1.0"

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

static inline int hh_abi_is_compatible(uint32_t plugin_major, uint32_t plugin_minor) {
  return plugin_major == HH_ABI_MAJOR && plugin_minor <= HH_ABI_MINOR;
}

#endif /* HOOKHOST_VERSION_H */
