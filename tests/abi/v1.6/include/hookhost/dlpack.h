/* hookhost plugin ABI: tensor views to and from DLPack's DLTensor, without a copy.
 *
 * For handing the values a hook receives to NumPy, PyTorch or any other DLPack consumer, and for
 * describing a framework's DLTensor as a hookhost view. Needs the DLPack header <dlpack/dlpack.h>
 * (Debian: libdlpack-dev); no other hookhost header includes this one.
 *
 * Ownership: neither function copies or owns data. The result borrows the input's data, shape and
 * strides pointers and is valid only as long as they are: for values the host hands a hook, only
 * during that callback. A consumer that needs a value later copies it. */
#ifndef HOOKHOST_DLPACK_H
#define HOOKHOST_DLPACK_H

#include <dlpack/dlpack.h>

#include "value.h"

HH_EXTERN_C_BEGIN

/* kDLBool arrived in DLPack 0.8; 1.x drops DLPACK_VERSION for DLPACK_MAJOR_VERSION. */
#if defined(DLPACK_MAJOR_VERSION) || (defined(DLPACK_VERSION) && DLPACK_VERSION >= 80)
#define HH_DLPACK_HAS_BOOL 1
#else
#define HH_DLPACK_HAS_BOOL 0
#endif

static inline int hh_dlpack_set_type_(DLDataType* out, uint8_t code, uint8_t bits) {
  out->code = code;
  out->bits = bits;
  out->lanes = 1;
  return 1;
}

/* The DLPack type of a dtype; 0 when it has none (strings, unknown dtypes). */
static inline int hh_dtype_to_dlpack_(hh_dtype dtype, DLDataType* out) {
  switch (dtype) {
    case HH_DTYPE_F16: return hh_dlpack_set_type_(out, kDLFloat, 16);
    case HH_DTYPE_F32: return hh_dlpack_set_type_(out, kDLFloat, 32);
    case HH_DTYPE_F64: return hh_dlpack_set_type_(out, kDLFloat, 64);
    case HH_DTYPE_BF16: return hh_dlpack_set_type_(out, kDLBfloat, 16);
    case HH_DTYPE_I8: return hh_dlpack_set_type_(out, kDLInt, 8);
    case HH_DTYPE_I16: return hh_dlpack_set_type_(out, kDLInt, 16);
    case HH_DTYPE_I32: return hh_dlpack_set_type_(out, kDLInt, 32);
    case HH_DTYPE_I64: return hh_dlpack_set_type_(out, kDLInt, 64);
    case HH_DTYPE_U8: return hh_dlpack_set_type_(out, kDLUInt, 8);
#if HH_DLPACK_HAS_BOOL
    case HH_DTYPE_BOOL: return hh_dlpack_set_type_(out, kDLBool, 8);
#else
    case HH_DTYPE_BOOL: return hh_dlpack_set_type_(out, kDLUInt, 8); /* comes back as U8 */
#endif
    default: return 0;
  }
}

/* The dtype of a DLPack type; 0 when hookhost has none (vectors, complex, opaque handles, odd
 * widths). */
static inline int hh_dtype_from_dlpack_(DLDataType type, hh_dtype* out) {
  hh_dtype dtype = 0;
  if (type.lanes != 1) return 0;
  switch (type.code) {
    case kDLFloat:
      dtype = type.bits == 16   ? HH_DTYPE_F16
              : type.bits == 32 ? HH_DTYPE_F32
              : type.bits == 64 ? HH_DTYPE_F64
                                : 0;
      break;
    case kDLBfloat: dtype = type.bits == 16 ? HH_DTYPE_BF16 : 0; break;
    case kDLInt:
      dtype = type.bits == 8    ? HH_DTYPE_I8
              : type.bits == 16 ? HH_DTYPE_I16
              : type.bits == 32 ? HH_DTYPE_I32
              : type.bits == 64 ? HH_DTYPE_I64
                                : 0;
      break;
    case kDLUInt: dtype = type.bits == 8 ? HH_DTYPE_U8 : 0; break;
#if HH_DLPACK_HAS_BOOL
    case kDLBool: dtype = type.bits == 8 ? HH_DTYPE_BOOL : 0; break;
#endif
    default: break;
  }
  if (dtype == 0) return 0;
  *out = dtype;
  return 1;
}

/* Describes `view` as a DLTensor in `out`: data, device, ndim, dtype (lanes 1), shape and strides
 * point at the view's own arrays (NULL strides stay NULL: in both, compact row-major), byte_offset
 * 0. The DLTensor's pointers are not const only because DLPack's are not: consumers must treat
 * everything it points to as read-only. DLPack 1.x asks producers for strides whenever ndim > 0;
 * NumPy and PyTorch still read NULL as compact row-major.
 * Without kDLBool (DLPack before 0.8), BOOL becomes kDLUInt 8 bits and so comes back as U8.
 * Returns 1, or 0 with `out` untouched when the view cannot be expressed: NULL view or out,
 * struct_size below HH_TENSOR_SIZE_1_0, STRING or unknown dtype, rank above HH_MAX_RANK, NULL shape
 * for a rank above 0. */
static inline int hh_tensor_to_dlpack(const hh_tensor* view, DLTensor* out) {
  DLDataType type;
  if (!view || !out || view->struct_size < HH_TENSOR_SIZE_1_0) return 0;
  if (view->rank > HH_MAX_RANK || (view->rank > 0 && !view->shape)) return 0;
  if (!hh_dtype_to_dlpack_(view->dtype, &type)) return 0;
  /* Through uintptr_t: drops const without a -Wcast-qual warning in plugins that enable it. */
  out->data = (void*)(uintptr_t)view->data;
  out->device.device_type = (DLDeviceType)view->device.type;
  out->device.device_id = view->device.id;
  out->ndim = (int)view->rank;
  out->dtype = type;
  out->shape = (int64_t*)(uintptr_t)view->shape;
  out->strides = (int64_t*)(uintptr_t)view->strides;
  out->byte_offset = 0;
  return 1;
}

static inline int hh_dlpack_mul_(size_t a, size_t b, size_t* out) {
  if (b != 0 && a > (size_t)-1 / b) return 0;
  *out = a * b;
  return 1;
}

static inline int hh_dlpack_add_(size_t a, size_t b, size_t* out) {
  if (a > (size_t)-1 - b) return 0;
  *out = a + b;
  return 1;
}

/* A non-negative int64 as a size_t; 0 when negative or too big. */
static inline int hh_dlpack_to_size_(int64_t v, size_t* out) {
  if (v < 0) return 0;
#if SIZE_MAX < INT64_MAX
  if ((uint64_t)v > (uint64_t)SIZE_MAX) return 0;
#endif
  *out = (size_t)v;
  return 1;
}

/* Describes `tensor` as a view named `name` in `out` (reset with hh_tensor_init first): shape and
 * strides point at the DLTensor's arrays, data at its data plus byte_offset, and byte_size is what
 * the layout reaches (count * element size when compact; (1 + sum of (shape[d] - 1) * strides[d])
 * elements when strided; 0 when an extent is 0).
 * Returns 1, or 0 with `out` untouched when the tensor cannot be expressed: NULL tensor, name or
 * out; lanes other than 1; a type hookhost lacks (complex, opaque handles, float bits other than
 * 16/32/64, bfloat other than 16, uint other than 8, int other than 8/16/32/64, bool other than 8);
 * ndim below 0 or above HH_MAX_RANK; NULL shape for ndim above 0; a negative extent or stride
 * (hookhost views have none); a byte count that overflows size_t; NULL data with elements or with a
 * byte_offset; a device that is not an HH_DEVICE_* or a negative device id; a name longer than
 * HH_MAX_NAME_LENGTH. BOOL elements must be 0 or 1: the host checks CPU values when it gets them.
 * The host validates every view anyway; these checks keep the result a consistent view. */
static inline int hh_tensor_from_dlpack(const DLTensor* tensor, const char* name, hh_tensor* out) {
  hh_dtype dtype;
  size_t element;
  size_t count = 1;
  size_t reach = 1; /* elements the strided layout spans from `data` */
  size_t byte_size;
  size_t name_length = 0;
  int32_t device_type;
  int d;
  if (!tensor || !name || !out) return 0;
  if (!hh_dtype_from_dlpack_(tensor->dtype, &dtype)) return 0;
  element = hh_dtype_size(dtype);
  if (tensor->ndim < 0 || tensor->ndim > HH_MAX_RANK) return 0;
  if (tensor->ndim > 0 && !tensor->shape) return 0;
  for (d = 0; d < tensor->ndim; ++d) {
    size_t extent;
    if (!hh_dlpack_to_size_(tensor->shape[d], &extent)) return 0;
    if (!hh_dlpack_mul_(count, extent, &count)) return 0;
    if (tensor->strides) {
      size_t stride;
      size_t step;
      if (!hh_dlpack_to_size_(tensor->strides[d], &stride)) return 0;
      if (extent == 0) {
        reach = 0;
      } else if (reach != 0) {
        if (!hh_dlpack_mul_(extent - 1, stride, &step) || !hh_dlpack_add_(reach, step, &reach))
          return 0;
      }
    }
  }
  /* The host refuses a view whose count * element size overflows, even when strided. */
  if (!hh_dlpack_mul_(count, element, &byte_size)) return 0;
  if (tensor->strides && !hh_dlpack_mul_(reach, element, &byte_size)) return 0;
  if (!tensor->data && (count > 0 || tensor->byte_offset != 0)) return 0;
#if SIZE_MAX < UINT64_MAX
  if (tensor->byte_offset > (uint64_t)SIZE_MAX) return 0;
#endif
  device_type = (int32_t)tensor->device.device_type;
  if (device_type != HH_DEVICE_CPU && device_type != HH_DEVICE_CUDA &&
      device_type != HH_DEVICE_CUDA_HOST && device_type != HH_DEVICE_ROCM)
    return 0;
  if (tensor->device.device_id < 0) return 0;
  while (name[name_length] != '\0') {
    if (++name_length > HH_MAX_NAME_LENGTH) return 0;
  }

  hh_tensor_init(out);
  out->name = name;
  out->dtype = dtype;
  out->rank = (uint32_t)tensor->ndim;
  out->shape = tensor->shape;
  out->strides = tensor->strides;
  out->data = tensor->data ? (const char*)tensor->data + (size_t)tensor->byte_offset : NULL;
  out->byte_size = byte_size;
  out->device.type = device_type;
  out->device.id = (int32_t)tensor->device.device_id;
  return 1;
}

HH_EXTERN_C_END

#endif /* HOOKHOST_DLPACK_H */
