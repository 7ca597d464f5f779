/* hookhost plugin ABI: typed tensor views.
 *
 * A view describes a tensor without owning it, the way DLPack's DLTensor does (and converts to and
 * from one without a copy: hookhost/dlpack.h). Layout: `rank` extents in `shape`; element i of the
 * flattened row-major index space lives at `data` + (sum over d of index[d] * strides[d]) elements,
 * or at `data` + i elements when `strides` is NULL (contiguous, row-major). */
#ifndef HOOKHOST_VALUE_H
#define HOOKHOST_VALUE_H

#if __STDC_HOSTED__
#include <string.h> /* not needed here; kept for plugins that relied on it through 1.0 */
#endif

#include "version.h"

HH_EXTERN_C_BEGIN

typedef int32_t hh_dtype;

#define HH_DTYPE_F32 1
#define HH_DTYPE_F64 2
#define HH_DTYPE_I32 3
#define HH_DTYPE_I64 4
#define HH_DTYPE_U8 5
#define HH_DTYPE_BOOL 6   /* one byte per element, 0 or 1 */
#define HH_DTYPE_STRING 7 /* elements are hh_str; always contiguous (strides NULL) */
#define HH_DTYPE_F16 8    /* IEEE 754 binary16 */
#define HH_DTYPE_BF16 9   /* bfloat16 */
#define HH_DTYPE_I8 10
#define HH_DTYPE_I16 11

/* Where a tensor's data lives. The codes are DLPack's DLDeviceType values. The host never hands a
 * view whose device is not HH_DEVICE_CPU to a hook that did not declare, through the extension
 * HH_EXTENSION_DEVICE_VALUES (hookhost/ext/device_values.h), that it takes such values. */
typedef struct hh_device {
  int32_t type; /* HH_DEVICE_*; 0 is invalid (hh_tensor_init sets HH_DEVICE_CPU) */
  int32_t id;   /* which device of that type; 0 for the CPU */
} hh_device;

#define HH_DEVICE_CPU 1
#define HH_DEVICE_CUDA 2
#define HH_DEVICE_CUDA_HOST 3
#define HH_DEVICE_ROCM 10

/* A string as pointer and length; not NUL-terminated unless stated. `data` may be NULL only when
 * `size` is 0. */
typedef struct hh_str {
  const char* data;
  size_t size;
} hh_str;

/* Limits a host enforces on every view a plugin hands it. */
#define HH_MAX_RANK 8
#define HH_MAX_NAME_LENGTH 1024 /* bytes of a tensor or fetch name, without its NUL */

/* A read-only, zero-copy view of one named tensor.
 * Ownership: everything a view points to belongs to whoever built it and is valid only for the
 * duration of the call that received it. A hook that needs a value later copies it. */
typedef struct hh_tensor {
  uint32_t struct_size; /* HH_TENSOR_SIZE (hh_tensor_init sets it) */
  hh_dtype dtype;
  const char* name;       /* NUL-terminated, at most HH_MAX_NAME_LENGTH bytes */
  const int64_t* shape;   /* `rank` extents, each >= 0; may be NULL when rank is 0 */
  const int64_t* strides; /* `rank` strides in elements, each >= 0; NULL = contiguous row-major */
  const void* data;       /* the first element; may be NULL only when there are no elements */
  size_t byte_size;       /* bytes readable at `data`: exactly count * element size when
                           * contiguous; at least the extent the strides reach when strided */
  uint32_t rank;          /* 0 for a scalar; at most HH_MAX_RANK */
  hh_device device;       /* where `data` lives */
} hh_tensor;

#define HH_TENSOR_SIZE HH_STRUCT_SIZE(hh_tensor, device)
#define HH_TENSOR_SIZE_1_0 HH_STRUCT_SIZE(hh_tensor, device)

/* Zeroes a view, sets struct_size and a CPU device: a rank-0 view, ready for name, dtype, data. */
static inline void hh_tensor_init(hh_tensor* t) {
  __builtin_memset(t, 0, sizeof *t);
  t->struct_size = HH_TENSOR_SIZE;
  t->device.type = HH_DEVICE_CPU;
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
    case HH_DTYPE_F16: return 2;
    case HH_DTYPE_BF16: return 2;
    case HH_DTYPE_I8: return 1;
    case HH_DTYPE_I16: return 2;
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
    case HH_DTYPE_F16: return "f16";
    case HH_DTYPE_BF16: return "bf16";
    case HH_DTYPE_I8: return "i8";
    case HH_DTYPE_I16: return "i16";
    default: return "unknown";
  }
}

/* Number of elements (1 for a scalar). Trusts the view: use it on views the host gave you (they
 * are validated); hh_tensor_element_count_checked is for views from elsewhere. */
static inline size_t hh_tensor_element_count(const hh_tensor* t) {
  size_t n = 1;
  uint32_t i;
  for (i = 0; i < t->rank; ++i) n *= (size_t)t->shape[i];
  return n;
}

/* Like hh_tensor_element_count, but returns 0 (and leaves *count alone) when the rank is above
 * HH_MAX_RANK, the shape is NULL, an extent is negative or the product overflows; 1 otherwise. */
static inline int hh_tensor_element_count_checked(const hh_tensor* t, size_t* count) {
  size_t n = 1;
  uint32_t i;
  if (t->rank > HH_MAX_RANK || (t->rank > 0 && !t->shape)) return 0;
  for (i = 0; i < t->rank; ++i) {
    if (t->shape[i] < 0) return 0;
    if (t->shape[i] != 0 && n > (size_t)-1 / (size_t)t->shape[i]) return 0;
    n *= (size_t)t->shape[i];
  }
  *count = n;
  return 1;
}

/* Offset in elements from `data` of element `i` of the flattened row-major index space. */
static inline size_t hh_tensor_element_offset(const hh_tensor* t, size_t i) {
  size_t offset = 0;
  uint32_t d;
  if (!t->strides) return i;
  for (d = t->rank; d-- > 0;) {
    const size_t extent = (size_t)t->shape[d];
    if (extent == 0) return 0;
    offset += (i % extent) * (size_t)t->strides[d];
    i /= extent;
  }
  return offset;
}

static inline double hh_half_to_double_(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const double mantissa = (double)(h & 0x3ff);
  double v;
  if (exponent == 0)
    v = mantissa / 16777216.0; /* subnormal: m * 2^-24 */
  else if (exponent == 31)
    v = mantissa == 0 ? __builtin_inf() : __builtin_nan("");
  else {
    int e; /* scaled by hand: ldexp would tie every plugin to libm */
    v = 1.0 + mantissa / 1024.0;
    for (e = exponent - 15; e > 0; --e) v *= 2.0;
    for (; e < 0; ++e) v /= 2.0;
  }
  return (h & 0x8000) ? -v : v;
}

/* Element `i` of a numeric CPU tensor as a double (0 for strings, other devices or i out of
 * range). */
static inline double hh_tensor_get_double(const hh_tensor* t, size_t i) {
  const char* p;
  if (i >= hh_tensor_element_count(t) || t->device.type != HH_DEVICE_CPU || !t->data) return 0.0;
  p = (const char*)t->data + hh_tensor_element_offset(t, i) * hh_dtype_size(t->dtype);
  switch (t->dtype) {
    case HH_DTYPE_F32: {
      float v;
      __builtin_memcpy(&v, p, 4);
      return (double)v;
    }
    case HH_DTYPE_F64: {
      double v;
      __builtin_memcpy(&v, p, 8);
      return v;
    }
    case HH_DTYPE_I32: {
      int32_t v;
      __builtin_memcpy(&v, p, 4);
      return (double)v;
    }
    case HH_DTYPE_I64: {
      int64_t v;
      __builtin_memcpy(&v, p, 8);
      return (double)v;
    }
    case HH_DTYPE_U8:
    case HH_DTYPE_BOOL: return (double)*(const uint8_t*)p;
    case HH_DTYPE_I8: return (double)*(const int8_t*)p;
    case HH_DTYPE_I16: {
      int16_t v;
      __builtin_memcpy(&v, p, 2);
      return (double)v;
    }
    case HH_DTYPE_F16: {
      uint16_t v;
      __builtin_memcpy(&v, p, 2);
      return hh_half_to_double_(v);
    }
    case HH_DTYPE_BF16: {
      uint16_t v;
      uint32_t bits;
      float f;
      __builtin_memcpy(&v, p, 2);
      bits = (uint32_t)v << 16;
      __builtin_memcpy(&f, &bits, 4);
      return (double)f;
    }
    default: return 0.0;
  }
}

HH_EXTERN_C_END

#endif /* HOOKHOST_VALUE_H */
