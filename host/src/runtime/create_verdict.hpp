// What a plugin's create() returned, judged once for every isolation tier, so a hook refused in
// its own process reads the same as one refused in the host's.
#pragma once

#include <cstdint>
#include <string>

#include <hookhost/hookhost.h>

namespace hookhost {

// Why the result of create() cannot be used, or "" when it can: a status other than HH_OK (with the
// plugin's message), no instance, an hh_hook smaller than ABI 1.0's or without destroy.
std::string create_refusal(hh_status status, const std::string& message, bool has_hook,
                           uint32_t hook_struct_size, bool has_destroy);

}  // namespace hookhost
