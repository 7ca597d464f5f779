#include "hookhost/host/tensor.hpp"

#include "runtime/view_layout.hpp"

#include <cstring>
#include <stdexcept>

namespace hookhost {
namespace {

template <typename T>
Tensor make_scalar(hh_dtype dtype, T value) {
  hh_tensor v;
  hh_tensor_init(&v);
  v.name = "";
  v.dtype = dtype;
  v.data = &value;
  v.byte_size = sizeof(T);
  return Tensor::from_view(v);
}

std::string device_text(hh_device d) {
  return std::to_string(d.type) + ":" + std::to_string(d.id);
}

}  // namespace

std::string check_name(const char* name) {
  if (!name) return "the name is NULL";
  if (::strnlen(name, HH_MAX_NAME_LENGTH + 1) > HH_MAX_NAME_LENGTH)
    return "the name is longer than " + std::to_string(HH_MAX_NAME_LENGTH) + " bytes";
  return {};
}

std::string check_view(const hh_tensor& v) {
  if (v.struct_size < HH_TENSOR_SIZE_1_0)
    return "struct_size is " + std::to_string(v.struct_size) + ", below the ABI 1.0 size " +
           std::to_string(HH_TENSOR_SIZE_1_0) + " (initialise views with hh_tensor_init)";
  if (std::string e = check_name(v.name); !e.empty()) return "name: " + e;
  const size_t element = hh_dtype_size(v.dtype);
  if (element == 0) return "dtype " + std::to_string(v.dtype) + " is not a known HH_DTYPE_*";
  if (v.rank > HH_MAX_RANK)
    return "rank " + std::to_string(v.rank) + " is above HH_MAX_RANK (" +
           std::to_string(HH_MAX_RANK) + ")";
  if (v.rank > 0 && !v.shape) return "shape is NULL for rank " + std::to_string(v.rank);
  for (uint32_t d = 0; d < v.rank; ++d)
    if (v.shape[d] < 0)
      return "shape[" + std::to_string(d) + "] is negative (" + std::to_string(v.shape[d]) + ")";
  size_t count = 0;
  if (!hh_tensor_element_count_checked(&v, &count)) return "the element count overflows size_t";
  size_t contiguous_bytes = 0;
  if (__builtin_mul_overflow(count, element, &contiguous_bytes))
    return "the byte size of " + std::to_string(count) + " elements overflows size_t";
  if (!known_device(v.device.type))
    return "device.type " + std::to_string(v.device.type) +
           " is not a known HH_DEVICE_* (initialise views with hh_tensor_init)";
  if (v.device.id < 0) return "device.id is negative (" + std::to_string(v.device.id) + ")";
  if (v.strides) {
    if (v.dtype == HH_DTYPE_STRING) return "strides must be NULL for a string tensor";
    for (uint32_t d = 0; d < v.rank; ++d)
      if (v.strides[d] < 0)
        return "strides[" + std::to_string(d) + "] is negative (" + std::to_string(v.strides[d]) +
               "); ABI 1.0 views have non-negative strides";
    size_t reach = 0;
    if (!strided_extent(v, element, &reach)) return "the strided extent overflows size_t";
    if (v.byte_size < reach)
      return "byte_size " + std::to_string(v.byte_size) + " is smaller than the " +
             std::to_string(reach) + " bytes its shape and strides reach";
  } else if (v.byte_size != contiguous_bytes) {
    return "byte_size " + std::to_string(v.byte_size) + " does not match " + std::to_string(count) +
           " elements of " + hh_dtype_name(v.dtype) + " (" + std::to_string(contiguous_bytes) +
           " bytes)";
  }
  if (count > 0 && !v.data) return "data is NULL for " + std::to_string(count) + " elements";
  if (v.device.type != HH_DEVICE_CPU) return {};  // device memory is not ours to read
  if (v.dtype == HH_DTYPE_BOOL) {
    hh_tensor probe = v;
    for (size_t i = 0; i < count; ++i) {
      const auto* p = static_cast<const uint8_t*>(v.data) + hh_tensor_element_offset(&probe, i);
      if (*p > 1)
        return "bool element " + std::to_string(i) + " is " + std::to_string(*p) +
               " (bool elements are 0 or 1)";
    }
  }
  if (v.dtype == HH_DTYPE_STRING) {
    const auto* items = static_cast<const hh_str*>(v.data);
    for (size_t i = 0; i < count; ++i)
      if (!items[i].data && items[i].size > 0)
        return "string element " + std::to_string(i) + " has NULL data and size " +
               std::to_string(items[i].size);
  }
  return {};
}

Tensor Tensor::scalar_f32(float v) {
  return make_scalar(HH_DTYPE_F32, v);
}
Tensor Tensor::scalar_f64(double v) {
  return make_scalar(HH_DTYPE_F64, v);
}
Tensor Tensor::scalar_i32(int32_t v) {
  return make_scalar(HH_DTYPE_I32, v);
}
Tensor Tensor::scalar_i64(int64_t v) {
  return make_scalar(HH_DTYPE_I64, v);
}
Tensor Tensor::scalar_bool(bool v) {
  return make_scalar(HH_DTYPE_BOOL, static_cast<uint8_t>(v ? 1 : 0));
}

Tensor Tensor::vector_f32(std::vector<float> v) {
  Tensor t;
  t.dtype_ = HH_DTYPE_F32;
  t.shape_ = {static_cast<int64_t>(v.size())};
  t.bytes_.resize(v.size() * sizeof(float));
  if (!v.empty()) std::memcpy(t.bytes_.data(), v.data(), t.bytes_.size());
  return t;
}

Tensor Tensor::string(std::string v) {
  Tensor t;
  t.dtype_ = HH_DTYPE_STRING;
  t.strings_.push_back(std::move(v));
  t.rebuild_string_views();
  return t;
}

Tensor Tensor::from_view(const hh_tensor& view) {
  if (std::string error = check_view(view); !error.empty()) throw std::invalid_argument(error);
  if (view.device.type != HH_DEVICE_CPU)
    throw std::invalid_argument("device " + device_text(view.device) +
                                " is not the CPU: the host copies fed values, so they must be in "
                                "host memory (HH_DEVICE_CPU)");
  Tensor t;
  t.dtype_ = view.dtype;
  t.shape_.assign(view.shape, view.shape + view.rank);
  const size_t count = t.element_count();
  if (view.dtype == HH_DTYPE_STRING) {
    const auto* items = static_cast<const hh_str*>(view.data);
    t.strings_.reserve(count);
    for (size_t i = 0; i < count; ++i)
      t.strings_.emplace_back(items[i].data ? items[i].data : "", items[i].size);
    t.rebuild_string_views();
    return t;
  }
  const size_t element = hh_dtype_size(view.dtype);
  t.bytes_.resize(count * element);
  if (!view.strides) {
    if (count) std::memcpy(t.bytes_.data(), view.data, t.bytes_.size());
  } else {
    for (size_t i = 0; i < count; ++i)
      std::memcpy(
          t.bytes_.data() + i * element,
          static_cast<const std::byte*>(view.data) + hh_tensor_element_offset(&view, i) * element,
          element);
  }
  return t;
}

Tensor Tensor::borrow(const hh_tensor& view, std::shared_ptr<const void> owner) {
  if (std::string error = check_view(view); !error.empty()) throw std::invalid_argument(error);
  if (view.dtype == HH_DTYPE_STRING) {
    Tensor copy = from_view(view);  // strings are small and need their own storage anyway
    return copy;
  }
  Tensor t;
  t.dtype_ = view.dtype;
  t.shape_.assign(view.shape, view.shape + view.rank);
  if (view.strides) t.strides_.assign(view.strides, view.strides + view.rank);
  t.device_ = view.device;
  t.data_ = view.data;
  t.byte_size_ = view.byte_size;
  t.owner_ = std::move(owner);
  return t;
}

Tensor Tensor::with_host_copy(Tensor on_device, Tensor on_host) {
  if (on_host.device().type != HH_DEVICE_CPU)
    throw std::invalid_argument("a host copy must live in host memory");
  if (on_host.dtype() != on_device.dtype() || on_host.shape() != on_device.shape())
    throw std::invalid_argument("a host copy must have its value's dtype and shape");
  on_device.host_copy_ = std::make_shared<const Tensor>(std::move(on_host));
  return on_device;
}

size_t Tensor::element_count() const {
  size_t n = 1;
  for (int64_t d : shape_) n *= static_cast<size_t>(d);
  return n;
}

double Tensor::as_double(size_t i) const {
  hh_tensor v = view("");
  return hh_tensor_get_double(&v, i);
}

hh_tensor Tensor::view(const char* name) const {
  hh_tensor v;
  hh_tensor_init(&v);
  v.name = name;
  v.dtype = dtype_;
  v.rank = static_cast<uint32_t>(shape_.size());
  v.shape = shape_.empty() ? nullptr : shape_.data();
  v.device = device_;
  if (dtype_ == HH_DTYPE_STRING) {
    v.data = string_views_.data();
    v.byte_size = string_views_.size() * sizeof(hh_str);
  } else if (data_) {
    v.strides = strides_.empty() ? nullptr : strides_.data();
    v.data = data_;
    v.byte_size = byte_size_;
  } else {
    v.data = bytes_.data();
    v.byte_size = bytes_.size();
  }
  return v;
}

void Tensor::rebuild_string_views() {
  string_views_.clear();
  for (const auto& s : strings_) string_views_.push_back(hh_str{s.data(), s.size()});
}

Tensor::Tensor(const Tensor& other)
    : dtype_(other.dtype_),
      shape_(other.shape_),
      bytes_(other.bytes_),
      strings_(other.strings_),
      device_(other.device_),
      strides_(other.strides_),
      data_(other.data_),
      byte_size_(other.byte_size_),
      owner_(other.owner_),
      host_copy_(other.host_copy_) {
  rebuild_string_views();
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) {
    dtype_ = other.dtype_;
    shape_ = other.shape_;
    bytes_ = other.bytes_;
    strings_ = other.strings_;
    device_ = other.device_;
    strides_ = other.strides_;
    data_ = other.data_;
    byte_size_ = other.byte_size_;
    owner_ = other.owner_;
    host_copy_ = other.host_copy_;
    rebuild_string_views();
  }
  return *this;
}

}  // namespace hookhost
