#include "hookhost/host/tensor.hpp"

#include <cstring>
#include <stdexcept>

namespace hookhost {
namespace {

template <typename T>
Tensor make_scalar(hh_dtype dtype, T value) {
  hh_tensor v{};
  v.struct_size = HH_STRUCT_SIZE(hh_tensor, byte_size);
  v.name = "";
  v.dtype = dtype;
  v.data = &value;
  v.byte_size = sizeof(T);
  return Tensor::from_view(v);
}

}  // namespace

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
  if (view.rank > HH_MAX_RANK) throw std::invalid_argument("tensor rank above HH_MAX_RANK");
  if (view.rank > 0 && !view.shape) throw std::invalid_argument("tensor shape is NULL");
  for (uint32_t i = 0; i < view.rank; ++i)
    if (view.shape[i] < 0) throw std::invalid_argument("negative tensor extent");
  const size_t element = hh_dtype_size(view.dtype);
  if (element == 0) throw std::invalid_argument("unknown dtype " + std::to_string(view.dtype));
  Tensor t;
  t.dtype_ = view.dtype;
  t.shape_.assign(view.shape, view.shape + view.rank);
  const size_t count = t.element_count();
  if (view.byte_size != count * element)
    throw std::invalid_argument("byte_size " + std::to_string(view.byte_size) + " does not match " +
                                std::to_string(count) + " elements of " +
                                hh_dtype_name(view.dtype));
  if (count > 0 && !view.data) throw std::invalid_argument("tensor data is NULL");
  if (view.dtype == HH_DTYPE_STRING) {
    const auto* items = static_cast<const hh_str*>(view.data);
    for (size_t i = 0; i < count; ++i) t.strings_.emplace_back(items[i].data, items[i].size);
    t.rebuild_string_views();
  } else {
    t.bytes_.resize(view.byte_size);
    if (view.byte_size) std::memcpy(t.bytes_.data(), view.data, view.byte_size);
  }
  return t;
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
  hh_tensor v{};
  v.struct_size = HH_STRUCT_SIZE(hh_tensor, byte_size);
  v.name = name;
  v.dtype = dtype_;
  v.rank = static_cast<uint32_t>(shape_.size());
  v.shape = shape_.empty() ? nullptr : shape_.data();
  if (dtype_ == HH_DTYPE_STRING) {
    v.data = string_views_.data();
    v.byte_size = string_views_.size() * sizeof(hh_str);
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
    : dtype_(other.dtype_), shape_(other.shape_), bytes_(other.bytes_), strings_(other.strings_) {
  rebuild_string_views();
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) {
    dtype_ = other.dtype_;
    shape_ = other.shape_;
    bytes_ = other.bytes_;
    strings_ = other.strings_;
    rebuild_string_views();
  }
  return *this;
}

}  // namespace hookhost
