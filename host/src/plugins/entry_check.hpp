// The checks of a plugin's entry symbol against its note, shared by the loader (in process) and
// hookhost-runner (isolation = process), so both tiers refuse the same plugins in the same words.
#pragma once

#include <string>
#include <string_view>

#include <hookhost/entry.h>

#include "hookhost/host/plugin_metadata.hpp"

namespace hookhost {

// Why `entry` (null: the library has no such symbol) cannot be used as the plugin `note`
// describes: struct_size, ABI, create, state_version, then every field of the note. Empty when it
// can. The reason says what to do and leaves the file name to the caller.
std::string check_entry(const hh_plugin_entry* entry, const PluginMetadata& note);

// 's' in single quotes, cut at 80 bytes with "...".
std::string quote(std::string_view s);

}  // namespace hookhost
