// hookhost C++ SDK: the names of the five lifecycle callbacks, shared by the SDK
// (Hook::implements) and the host's C++ API (the testing harness's records).
#ifndef HOOKHOST_SDK_CALLBACK_HPP
#define HOOKHOST_SDK_CALLBACK_HPP

#include <cstdint>

namespace hookhost {

// The five lifecycle callbacks, in lifecycle order; an index, so per-call accounting needs no
// string lookup.
enum class Callback : std::uint8_t { begin, after_create_session, before_run, after_run, end };

}  // namespace hookhost

#endif  // HOOKHOST_SDK_CALLBACK_HPP
