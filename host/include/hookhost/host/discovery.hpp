// Finds plugins in folders by reading their notes. Runs no plugin code; loads nothing.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "plugin_metadata.hpp"

namespace hookhost {

struct DiscoveredPlugin {
  std::filesystem::path file;
  PluginMetadata metadata;
};

struct RejectedFile {
  std::filesystem::path file;
  std::string reason;  // e.g. "truncated: segment 2 ends at byte 40960, the file has 3072 bytes"
};

struct DiscoveryResult {
  std::vector<DiscoveredPlugin> plugins;  // in folder order, then file name order
  std::vector<RejectedFile> rejected;

  const DiscoveredPlugin* find(std::string_view id) const;
};

// Scans each folder (not recursively) in order. Every regular file (or link to one) that is not a
// usable plugin is reported with its reason: not ELF, no hookhost note, wrong class or machine,
// truncated, malformed note, ABI mismatch (naming both versions), or a duplicate id (naming both
// files; the first found wins). A folder that does not exist is reported as rejected too.
DiscoveryResult discover_plugins(const std::vector<std::filesystem::path>& folders);

}  // namespace hookhost
