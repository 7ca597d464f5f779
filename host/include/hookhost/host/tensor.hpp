// An owning tensor on the host side, and the views the ABI hands to plugins.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <hookhost/value.h>

namespace hookhost {

class Tensor {
 public:
  Tensor() = default;

  static Tensor scalar_f32(float v);
  static Tensor scalar_f64(double v);
  static Tensor scalar_i32(int32_t v);
  static Tensor scalar_i64(int64_t v);
  static Tensor scalar_bool(bool v);
  static Tensor vector_f32(std::vector<float> v);
  static Tensor string(std::string v);
  // Copies a view (numeric or string). Throws std::invalid_argument for an inconsistent view.
  static Tensor from_view(const hh_tensor& view);

  hh_dtype dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  std::size_t element_count() const;
  double as_double(std::size_t i = 0) const;  // numeric element as double
  const std::vector<std::string>& strings() const { return strings_; }

  // A view valid while this tensor lives and is not modified. `name` must outlive the view.
  hh_tensor view(const char* name) const;

 private:
  hh_dtype dtype_ = HH_DTYPE_F32;
  std::vector<int64_t> shape_;
  std::vector<std::byte> bytes_;      // numeric element data
  std::vector<std::string> strings_;  // HH_DTYPE_STRING elements
  std::vector<hh_str> string_views_;  // hh_str views of strings_, rebuilt on copy
  void rebuild_string_views();

 public:
  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
};

using TensorMap = std::map<std::string, Tensor>;

}  // namespace hookhost
