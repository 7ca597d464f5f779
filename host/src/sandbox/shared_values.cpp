#include "shared_values.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace hookhost::sandbox {

namespace {

constexpr size_t kAlign = 8;
constexpr size_t kMinCapacity = 64 * 1024;

size_t aligned(size_t n) {
  return (n + kAlign - 1) & ~(kAlign - 1);
}

size_t element_count(const hh_tensor& v) {
  return hh_tensor_element_count(&v);  // the host's own views: validated when they were made
}

// The bytes one value takes: name, shape, data (strings: the hh_str array, then the bytes).
size_t value_bytes(const hh_tensor& v) {
  if (v.device.type != HH_DEVICE_CPU)
    throw std::invalid_argument(std::string("the fetched value '") + v.name +
                                "' is not in host memory; a sandboxed hook takes CPU values only");
  size_t n = aligned(std::strlen(v.name) + 1) + aligned(v.rank * sizeof(int64_t));
  const size_t count = element_count(v);
  if (v.dtype == HH_DTYPE_STRING) {
    n += aligned(count * sizeof(hh_str));
    const auto* items = static_cast<const hh_str*>(v.data);
    for (size_t i = 0; i < count; ++i) n += aligned(items[i].size);
  } else {
    n += aligned(count * hh_dtype_size(v.dtype));
  }
  return n;
}

}  // namespace

ValuesArena::~ValuesArena() {
  if (map_) ::munmap(map_, capacity_);
}

size_t ValuesArena::measure(const hh_run_values& values) {
  size_t total = 0;
  for (uint32_t i = 0; i < values.count; ++i) total += value_bytes(*hh_run_value(&values, i));
  return total;
}

bool ValuesArena::reserve(size_t bytes) {
  if (memfd_ && bytes <= capacity_) return false;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t wanted = std::max({bytes, capacity_ * 2, kMinCapacity});
  wanted = (wanted + page - 1) / page * page;
  // A new memfd for every size: its size is sealed, so growing cannot reuse it.
  UniqueFd fd(::memfd_create("hookhost-values", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) throw std::system_error(errno, std::generic_category(), "memfd_create");
  if (::ftruncate(fd.get(), static_cast<off_t>(wanted)) != 0)
    throw std::system_error(errno, std::generic_category(), "ftruncate of the values arena");
  void* map = ::mmap(nullptr, wanted, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (map == MAP_FAILED)
    throw std::system_error(errno, std::generic_category(), "mmap of the values arena");
  // Sealed before the runner sees it: a runner that reopens it read-write through /proc cannot
  // truncate it under the host's mapping (the host's next write would die of SIGBUS).
  int seal_error = 0;
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) seal_error = errno;
#ifdef F_SEAL_FUTURE_WRITE
  // No new writable mapping either (the host's, made above, stays); older kernels lack the seal.
  if (!seal_error) (void)::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_FUTURE_WRITE);
#endif
  if (!seal_error && ::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SEAL) != 0) seal_error = errno;
  if (seal_error) {
    ::munmap(map, wanted);
    throw std::system_error(seal_error, std::generic_category(), "sealing the values arena");
  }
  if (map_) ::munmap(map_, capacity_);
  memfd_ = std::move(fd);
  map_ = static_cast<std::byte*>(map);
  capacity_ = wanted;
  ++generation_;
  return true;
}

UniqueFd ValuesArena::read_only_fd() const {
  const std::string path = "/proc/self/fd/" + std::to_string(memfd_.get());
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw std::system_error(errno, std::generic_category(), "reopening " + path);
  return fd;
}

std::vector<ValuePlacement> ValuesArena::write(const hh_run_values& values, uint64_t runner_base) {
  std::vector<ValuePlacement> placements;
  placements.reserve(values.count);
  size_t cursor = 0;
  auto place = [&](const void* bytes, size_t size) {
    const size_t at = cursor;
    if (size) std::memcpy(map_ + at, bytes, size);
    cursor += aligned(size);
    return static_cast<uint64_t>(at);
  };
  for (uint32_t i = 0; i < values.count; ++i) {
    const hh_tensor& v = *hh_run_value(&values, i);
    ValuePlacement p;
    p.dtype = v.dtype;
    p.rank = v.rank;
    p.name_offset = place(v.name, std::strlen(v.name) + 1);
    p.shape_offset = place(v.shape, v.rank * sizeof(int64_t));
    const size_t count = element_count(v);
    if (v.dtype == HH_DTYPE_STRING) {
      const auto* items = static_cast<const hh_str*>(v.data);
      p.data_offset = cursor;
      p.byte_size = count * sizeof(hh_str);
      cursor += aligned(p.byte_size);
      for (size_t k = 0; k < count; ++k) {
        const uint64_t at = place(items[k].data, items[k].size);
        const hh_str item{reinterpret_cast<const char*>(runner_base + at), items[k].size};
        std::memcpy(map_ + p.data_offset + k * sizeof(hh_str), &item, sizeof item);
      }
    } else {
      const size_t element = hh_dtype_size(v.dtype);
      p.byte_size = count * element;
      p.data_offset = cursor;
      if (!v.strides) {
        if (p.byte_size) std::memcpy(map_ + cursor, v.data, p.byte_size);
      } else {
        // A strided value arrives contiguous: the copy is made anyway.
        for (size_t k = 0; k < count; ++k)
          std::memcpy(
              map_ + cursor + k * element,
              static_cast<const std::byte*>(v.data) + hh_tensor_element_offset(&v, k) * element,
              element);
      }
      cursor += aligned(p.byte_size);
    }
    placements.push_back(p);
  }
  return placements;
}

void put_placements(Writer& out, const std::vector<ValuePlacement>& placements) {
  out.put<uint32_t>(static_cast<uint32_t>(placements.size()));
  for (const ValuePlacement& p : placements) {
    out.put<uint64_t>(p.name_offset);
    out.put<uint64_t>(p.shape_offset);
    out.put<uint32_t>(p.rank);
    out.put<int32_t>(p.dtype);
    out.put<uint64_t>(p.data_offset);
    out.put<uint64_t>(p.byte_size);
  }
}

}  // namespace hookhost::sandbox
