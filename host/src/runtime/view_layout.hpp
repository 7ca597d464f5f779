// Layout arithmetic on a tensor view that both the host's checks (tensor.cpp) and the sandbox's
// codec (which the runner links without the host library) need: inline, in one place.
#pragma once

#include <cstddef>
#include <cstdint>

#include <hookhost/value.h>

namespace hookhost {

inline bool known_device(int32_t type) {
  return type == HH_DEVICE_CPU || type == HH_DEVICE_CUDA || type == HH_DEVICE_CUDA_HOST ||
         type == HH_DEVICE_ROCM;
}

// The bytes a strided layout reaches from `data`: (max offset + 1) elements, or 0 when empty.
// False when that overflows size_t. Strides are non-negative (check_view refuses others).
inline bool strided_extent(const hh_tensor& v, std::size_t element, std::size_t* bytes) {
  std::size_t last = 0;
  for (uint32_t d = 0; d < v.rank; ++d) {
    if (v.shape[d] == 0) {
      *bytes = 0;
      return true;
    }
    std::size_t step = 0;
    if (__builtin_mul_overflow(static_cast<std::size_t>(v.shape[d] - 1),
                               static_cast<std::size_t>(v.strides[d]), &step) ||
        __builtin_add_overflow(last, step, &last))
      return false;
  }
  return !__builtin_add_overflow(last, std::size_t{1}, &last) &&
         !__builtin_mul_overflow(last, element, bytes);
}

}  // namespace hookhost
