// The plugin a check is about: one file, read the way discovery reads each file of a plugin
// folder (its ELF header, program headers and metadata note), without loading it.
#pragma once

#include <filesystem>

#include "hookhost/host/discovery.hpp"

namespace hookhost::check {

// The plugin in `file`, with its process-wide imports (nullopt when unreadable). Throws
// ConfigError naming the file and why it is not a usable plugin: missing, not a regular file, not
// ELF, no hookhost note, for another ABI or machine, truncated, ...
DiscoveredPlugin read_plugin_file(const std::filesystem::path& file);

}  // namespace hookhost::check
