// An owning tensor on the host side, and the views the ABI hands to plugins.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
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
  // Copies a view a plugin handed the host (numeric or string, contiguous or strided; the copy is
  // contiguous). Throws std::invalid_argument naming the field when the view is invalid (see
  // check_view) or not on the CPU.
  static Tensor from_view(const hh_tensor& view);
  // Wraps a view without copying it: the data (which may live on another device) stays where it
  // is, kept alive by `owner`. For workloads that hand out values they hold. Throws like
  // from_view for an invalid view (any device is accepted).
  static Tensor borrow(const hh_tensor& view, std::shared_ptr<const void> owner);
  // A value on a device together with its copy in host memory (a CPU tensor): hooks that declare
  // they take values on that device get the device's view, every other hook the copy's (one copy
  // per value and step, shared by those hooks) instead of being refused.
  static Tensor with_host_copy(Tensor on_device, Tensor on_host);
  // The host copy of a value on a device, or null.
  const Tensor* host_copy() const { return host_copy_.get(); }

  hh_dtype dtype() const { return dtype_; }
  hh_device device() const { return device_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  std::size_t element_count() const;
  double as_double(std::size_t i = 0) const;  // numeric element as double
  const std::vector<std::string>& strings() const { return strings_; }

  // A view valid while this tensor lives and is not modified. The view keeps the `name` pointer,
  // not a copy: the caller owns that string and keeps it alive as long as the view is used.
  hh_tensor view(const char* name) const;

 private:
  hh_dtype dtype_ = HH_DTYPE_F32;
  std::vector<int64_t> shape_;
  std::vector<std::byte> bytes_;      // numeric element data
  std::vector<std::string> strings_;  // HH_DTYPE_STRING elements
  std::vector<hh_str> string_views_;  // hh_str views of strings_, rebuilt on copy
  // A borrowed view's layout and data (see borrow); data_ is null for an owning tensor.
  hh_device device_{HH_DEVICE_CPU, 0};
  std::vector<int64_t> strides_;
  const void* data_ = nullptr;
  std::size_t byte_size_ = 0;
  std::shared_ptr<const void> owner_;
  std::shared_ptr<const Tensor> host_copy_;  // with_host_copy's
  void rebuild_string_views();

 public:
  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
};

using TensorMap = std::map<std::string, Tensor>;

// Why `view`, handed to the host by a plugin, is not a valid hh_tensor (empty when it is): the
// message names the field. Checks struct_size, name (non-NULL, at most HH_MAX_NAME_LENGTH bytes),
// dtype, rank, shape and extents, strides, the element count against overflow, byte_size against
// the layout, data, device, BOOL bytes and string elements.
std::string check_view(const hh_tensor& view);

// A tensor or fetch name from a plugin: non-NULL and NUL-terminated within HH_MAX_NAME_LENGTH
// bytes. Empty when valid, otherwise why not.
std::string check_name(const char* name);

}  // namespace hookhost
