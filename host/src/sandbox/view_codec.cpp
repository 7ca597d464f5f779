#include "view_codec.hpp"

#include "runtime/view_layout.hpp"

#include <cstring>

namespace hookhost::sandbox {

namespace {

enum class Payload : uint8_t { none = 0, bytes = 1, strings = 2, too_large = 3 };

// A non-NULL data pointer for a view whose data is never read (no elements, or not on the CPU).
const std::byte kNoBytes[1] = {};

}  // namespace

ReadablePart readable_part(const hh_tensor& v) {
  ReadablePart out;
  if (v.struct_size < HH_TENSOR_SIZE_1_0) return out;
  const size_t element = hh_dtype_size(v.dtype);
  if (element == 0 || v.rank > HH_MAX_RANK || (v.rank > 0 && !v.shape)) return out;
  for (uint32_t d = 0; d < v.rank; ++d)
    if (v.shape[d] < 0) return out;
  size_t count = 0, contiguous = 0;
  if (!hh_tensor_element_count_checked(&v, &count) ||
      __builtin_mul_overflow(count, element, &contiguous))
    return out;
  if (!known_device(v.device.type) || v.device.id < 0) return out;
  size_t bytes = contiguous;
  if (v.strides) {
    if (v.dtype == HH_DTYPE_STRING) return out;
    for (uint32_t d = 0; d < v.rank; ++d)
      if (v.strides[d] < 0) return out;
    if (!strided_extent(v, element, &bytes) || v.byte_size < bytes) return out;
  } else if (v.byte_size != contiguous) {
    return out;
  }
  if (count > 0 && !v.data) return out;
  out.valid = true;
  out.count = count;
  out.bytes = v.device.type == HH_DEVICE_CPU ? bytes : 0;
  return out;
}

void encode_view(Writer& out, const hh_tensor* view) {
  out.put<uint8_t>(view ? 1 : 0);
  if (!view) return;
  const hh_tensor& v = *view;
  out.put<uint32_t>(v.struct_size);
  if (v.struct_size < HH_TENSOR_SIZE_1_0) return;  // nothing past struct_size is the plugin's word
  const std::string_view name = bounded_c_text(v.name, HH_MAX_NAME_LENGTH);
  out.put_optional(v.name ? name.data() : nullptr, name.size());
  out.put<int32_t>(v.dtype);
  out.put<uint32_t>(v.rank);
  out.put<int32_t>(v.device.type);
  out.put<int32_t>(v.device.id);
  out.put<uint64_t>(v.byte_size);
  const bool small_rank = v.rank <= HH_MAX_RANK;
  out.put_optional(small_rank ? v.shape : nullptr, small_rank ? v.rank * sizeof(int64_t) : 0);
  out.put_optional(small_rank ? v.strides : nullptr, small_rank ? v.rank * sizeof(int64_t) : 0);
  out.put<uint8_t>(v.data ? 1 : 0);

  const ReadablePart readable = readable_part(v);
  if (!readable.valid || readable.bytes == 0) {
    out.put<uint8_t>(static_cast<uint8_t>(Payload::none));
    return;
  }
  if (v.dtype == HH_DTYPE_STRING) {
    const auto* items = static_cast<const hh_str*>(v.data);
    size_t total = 0;
    for (size_t i = 0; i < readable.count; ++i)
      if (items[i].data && __builtin_add_overflow(total, items[i].size, &total)) total = SIZE_MAX;
    if (total > kMaxTransferBytes) {
      out.put<uint8_t>(static_cast<uint8_t>(Payload::too_large));
      out.put<uint64_t>(total);
      return;
    }
    out.put<uint8_t>(static_cast<uint8_t>(Payload::strings));
    out.put<uint64_t>(readable.count);
    for (size_t i = 0; i < readable.count; ++i) {
      out.put<uint64_t>(items[i].size);
      out.put_optional(items[i].data, items[i].data ? items[i].size : 0);
    }
    return;
  }
  if (readable.bytes > kMaxTransferBytes) {
    out.put<uint8_t>(static_cast<uint8_t>(Payload::too_large));
    out.put<uint64_t>(readable.bytes);
    return;
  }
  out.put<uint8_t>(static_cast<uint8_t>(Payload::bytes));
  out.put_bytes(v.data, readable.bytes);
}

bool decode_view(Reader& in, DecodedView& out, std::string* why) {
  out.present = in.get<uint8_t>() != 0;
  if (!out.present) return !in.failed();
  hh_tensor& v = out.view;
  std::memset(&v, 0, sizeof v);
  v.struct_size = in.get<uint32_t>();
  if (v.struct_size < HH_TENSOR_SIZE_1_0) return !in.failed();
  // The host's struct is as large as it knows; a larger claim vouches for nothing it reads.
  if (v.struct_size > HH_TENSOR_SIZE) v.struct_size = HH_TENSOR_SIZE;
  std::string_view text;
  const bool has_name = in.get_optional(&text);
  out.name.assign(text);
  v.name = has_name ? out.name.c_str() : nullptr;
  v.dtype = in.get<int32_t>();
  v.rank = in.get<uint32_t>();
  v.device.type = in.get<int32_t>();
  v.device.id = in.get<int32_t>();
  v.byte_size = in.get<uint64_t>();
  auto extents = [&](std::vector<int64_t>& into, const int64_t** field) {
    std::string_view bytes;
    if (!in.get_optional(&bytes)) return !in.failed();
    if (v.rank > HH_MAX_RANK || bytes.size() != v.rank * sizeof(int64_t)) return false;
    into.resize(v.rank);
    if (!bytes.empty()) std::memcpy(into.data(), bytes.data(), bytes.size());
    *field = into.data();
    if (!*field) *field = reinterpret_cast<const int64_t*>(kNoBytes);  // rank 0, never read
    return true;
  };
  if (!extents(out.shape, &v.shape) || !extents(out.strides, &v.strides)) {
    *why = "a fed view with a shape or strides that do not match its rank";
    return false;
  }
  const bool has_data = in.get<uint8_t>() != 0;
  v.data = has_data ? kNoBytes : nullptr;
  switch (static_cast<Payload>(in.get<uint8_t>())) {
    case Payload::none: break;
    case Payload::bytes: {
      const std::string_view bytes = in.get_bytes();
      const auto* p = reinterpret_cast<const std::byte*>(bytes.data());
      out.data.assign(p, p + bytes.size());
      if (has_data && !out.data.empty()) v.data = out.data.data();
      break;
    }
    case Payload::strings: {
      // Read item by item without trusting the count: a lie runs out of message first.
      const auto count = in.get<uint64_t>();
      std::vector<uint8_t> has_bytes;
      for (uint64_t i = 0; i < count; ++i) {
        const auto size = in.get<uint64_t>();
        std::string_view bytes;
        const bool present = in.get_optional(&bytes);
        if (in.failed() || (present && bytes.size() != size)) return false;
        out.strings.emplace_back(bytes);
        out.items.push_back(hh_str{nullptr, static_cast<size_t>(size)});
        has_bytes.push_back(present ? 1 : 0);
      }
      // Point the items at their strings once the vector no longer moves.
      for (size_t i = 0; i < out.items.size(); ++i)
        if (has_bytes[i]) out.items[i].data = out.strings[i].data();
      if (has_data && !out.items.empty()) v.data = out.items.data();
      break;
    }
    case Payload::too_large:
      out.refusal = "the fed value's data (" + std::to_string(in.get<uint64_t>()) +
                    " bytes) is larger than a sandboxed hook can send (" +
                    std::to_string(kMaxTransferBytes) + " bytes)";
      break;
    default: return false;
  }
  if (!in.complete()) return false;
  // The rebuilt view must hold every byte its own layout makes readable, or the host's checks
  // would read past what arrived.
  const ReadablePart readable = readable_part(v);
  if (readable.valid && readable.bytes > 0 && out.refusal.empty()) {
    const bool whole = v.dtype == HH_DTYPE_STRING ? out.items.size() == readable.count
                                                  : out.data.size() >= readable.bytes;
    if (!whole) {
      *why = "a fed view whose data is shorter than its layout";
      return false;
    }
  }
  return true;
}

}  // namespace hookhost::sandbox
