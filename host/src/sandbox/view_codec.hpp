// A tensor view a plugin hands to add_feed, carried from the runner to the host. The runner sends
// the view's fields as the plugin set them and only the data bytes a valid view makes readable;
// the host rebuilds a view over the bytes it received and gives it to the real add_feed, so the
// host's own check_view judges it. The host never reads a byte it did not receive.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <hookhost/value.h>

#include "protocol.hpp"

namespace hookhost::sandbox {

// What check_view's layout rules make readable at a view's data: `valid` when the layout passes
// them (the same order and rules), then `bytes` (0 for a view not on the CPU, whose data nobody
// reads) and `count` elements. Reads nothing but the view's fields and its shape and strides.
struct ReadablePart {
  bool valid = false;
  size_t bytes = 0;
  size_t count = 0;
};
ReadablePart readable_part(const hh_tensor& view);

// Runner side: `view` may be NULL (it travels as such).
void encode_view(Writer& out, const hh_tensor* view);

// Host side: the rebuilt view and the storage it points into. Not copyable (it points into
// itself).
struct DecodedView {
  bool present = false;  // false: the plugin passed NULL
  hh_tensor view{};
  std::string name;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  std::vector<std::byte> data;
  std::vector<std::string> strings;
  std::vector<hh_str> items;
  std::string refusal;  // set when the sandbox cannot carry the view (too large)

  DecodedView() = default;
  DecodedView(const DecodedView&) = delete;
  DecodedView& operator=(const DecodedView&) = delete;
};
// False when the bytes are not a view this protocol encodes (a runner that lies), including
// data shorter than the view it came with makes readable.
bool decode_view(Reader& in, DecodedView& out, std::string* why);

}  // namespace hookhost::sandbox
