/* hookhost plugin ABI: typed tensor views. */
#ifndef HOOKHOST_VALUE_H
#define HOOKHOST_VALUE_H

#include <string.h>

#include "version.h"

HH_EXTERN_C_BEGIN

typedef int32_t hh_dtype;

#define HH_DTYPE_F32 1
#define HH_DTYPE_F64 2
#define HH_DTYPE_I32 3
#define HH_DTYPE_I64 4
#define HH_DTYPE_U8 5
#define HH_DTYPE_BOOL 6   /* one byte per element, 0 or 1 */
#define HH_DTYPE_STRING 7 /* elements are hh_str */

/* A string as pointer and length; not NUL-terminated unless stated. */
typedef struct hh_str {
  const char* data;
  size_t size;
} hh_str;

#define HH_MAX_RANK 8

/* A read-only, zero-copy view of one named tensor.
 * Ownership: everything a view points to belongs to whoever built it and is valid only for the
 * duration of the call that received it. A hook that needs a value later copies it. */
typedef struct hh_tensor {
  uint32_t struct_size;
  const char* name; /* NUL-terminated */
  hh_dtype dtype;
  uint32_t rank;        /* 0 for a scalar; at most HH_MAX_RANK */
  const int64_t* shape; /* `rank` extents; may be NULL when rank is 0 */
  const void* data;     /* element data, row-major; hh_str elements for HH_DTYPE_STRING */
  size_t byte_size;     /* bytes at `data` */
} hh_tensor;

/* Number of elements (1 for a scalar). */
static inline size_t hh_tensor_element_count(const hh_tensor* t) {
  size_t n = 1;
  uint32_t i;
  for (i = 0; i < t->rank; ++i) n *= (size_t)t->shape[i];
  return n;
}

/* Element size in bytes for a dtype; 0 for an unknown dtype. */
static inline size_t hh_dtype_size(hh_dtype dtype) {
  switch (dtype) {
    case HH_DTYPE_F32: return 4;
    case HH_DTYPE_F64: return 8;
    case HH_DTYPE_I32: return 4;
    case HH_DTYPE_I64: return 8;
    case HH_DTYPE_U8: return 1;
    case HH_DTYPE_BOOL: return 1;
    case HH_DTYPE_STRING: return sizeof(hh_str);
    default: return 0;
  }
}

/* Name of a dtype ("f32", ...). Never NULL; static storage. */
static inline const char* hh_dtype_name(hh_dtype dtype) {
  switch (dtype) {
    case HH_DTYPE_F32: return "f32";
    case HH_DTYPE_F64: return "f64";
    case HH_DTYPE_I32: return "i32";
    case HH_DTYPE_I64: return "i64";
    case HH_DTYPE_U8: return "u8";
    case HH_DTYPE_BOOL: return "bool";
    case HH_DTYPE_STRING: return "string";
    default: return "unknown";
  }
}

/* Element `i` of a numeric tensor as a double (0 for strings or out-of-range indices). */
static inline double hh_tensor_get_double(const hh_tensor* t, size_t i) {
  if (i >= hh_tensor_element_count(t)) return 0.0;
  switch (t->dtype) {
    case HH_DTYPE_F32: {
      float v;
      memcpy(&v, (const char*)t->data + i * 4, 4);
      return (double)v;
    }
    case HH_DTYPE_F64: {
      double v;
      memcpy(&v, (const char*)t->data + i * 8, 8);
      return v;
    }
    case HH_DTYPE_I32: {
      int32_t v;
      memcpy(&v, (const char*)t->data + i * 4, 4);
      return (double)v;
    }
    case HH_DTYPE_I64: {
      int64_t v;
      memcpy(&v, (const char*)t->data + i * 8, 8);
      return (double)v;
    }
    case HH_DTYPE_U8:
    case HH_DTYPE_BOOL: return (double)((const uint8_t*)t->data)[i];
    default: return 0.0;
  }
}

HH_EXTERN_C_END

#endif /* HOOKHOST_VALUE_H */
