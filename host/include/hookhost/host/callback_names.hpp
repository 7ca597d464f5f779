// The names of the five lifecycle callbacks (hookhost::Callback, shared with the SDK), as the
// host's messages, records and reports write them. Below the hook calls themselves
// (hook_dispatch.hpp, which includes this header), so the job's state and the services can name
// the call running now.
#pragma once

#include <array>
#include <cstddef>

#include <hookhost/sdk/callback.hpp>

namespace hookhost {

inline constexpr std::array<const char*, 5> kCallbackNames = {"begin", "after_create_session",
                                                              "before_run", "after_run", "end"};
inline const char* name_of(Callback cb) {
  return kCallbackNames[static_cast<std::size_t>(cb)];
}

}  // namespace hookhost
