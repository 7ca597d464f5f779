// A plugin's create(), called the one way both tiers call it: in the host for an in-process hook,
// and in hookhost-runner for a sandboxed one (which links none of the host beyond this folder).
#pragma once

#include <hookhost/hookhost.h>

#include <cstdint>
#include <string>
#include <vector>

#include "support/exception_text.hpp"
#include "support/text.hpp"

namespace hookhost {

// Calls `entry.create` for `instance_name` with the resolved parameter `values`. An exception that
// escapes it becomes HH_ERROR with its words in `error` (cut to the message buffer): C++ must not
// unwind through the C ABI into the caller.
inline hh_status call_create(const hh_plugin_entry& entry, const hh_host* host,
                             const char* instance_name, std::vector<hh_param_value>& values,
                             hh_hook** hook, hh_error* error) {
  hh_create_args args{};
  args.struct_size = HH_CREATE_ARGS_SIZE;
  args.instance_name = instance_name;
  args.params = values.empty() ? nullptr : values.data();
  args.param_count = static_cast<uint32_t>(values.size());
  args.param_stride = sizeof(hh_param_value);
  try {
    return entry.create(host, &args, hook, error);
  } catch (...) {
    copy_cut(describe_current_exception("create()"), error->message, HH_ERROR_MESSAGE_SIZE);
    return HH_ERROR;
  }
}

}  // namespace hookhost
