// Finds plugins in folders by reading their notes. Runs no plugin code; loads nothing.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plugin_metadata.hpp"

namespace hookhost {

struct DiscoveredPlugin {
  std::filesystem::path file;
  PluginMetadata metadata;
  // The process-wide calls (exit, fork, exec*, signal, sigaction, setenv, ...) the file imports,
  // sorted. Read only for the plugins named in DiscoveryOptions::imports_of; nullopt for the
  // others, and when the file's dynamic symbol table could not be read (unknown, not "none").
  std::optional<std::vector<std::string>> process_wide_calls = std::nullopt;
};

// What discovery reads besides each file's note.
struct DiscoveryOptions {
  // Plugin ids whose process-wide imports are read too, from the file already opened for the
  // note ('plugins describe', [run] untrusted = process). Listing needs none, and then only each
  // file's ELF header, program headers and notes are read.
  std::vector<std::string> imports_of;
};

struct RejectedFile {
  std::filesystem::path file;
  std::string reason;  // e.g. "truncated: segment 2 ends at byte 40960, the file has 3072 bytes"
};

// Two files with one plugin id: `chosen` is used, `ignored` is also listed in `rejected`.
struct DuplicatePlugin {
  std::string id;
  std::filesystem::path chosen;
  std::filesystem::path ignored;
  std::string why;  // why `chosen` wins, e.g. "its folder comes first in the search path ..."
};

struct DiscoveryResult {
  std::vector<DiscoveredPlugin> plugins;  // in folder order, then file name order
  std::vector<RejectedFile> rejected;     // every entry that is no usable plugin, with its reason
  std::vector<DuplicatePlugin> duplicates;
  std::vector<std::filesystem::path> missing_folders;  // do not exist or are not folders
  // Entries not named like a plugin (*.so, *.so.N), never opened: CMakeCache.txt, a test binary.
  std::size_t ignored_files = 0;

  const DiscoveredPlugin* find(std::string_view id) const;
};

// Scans each folder (not recursively) in order, considering only entries named *.so or *.so.N...
// (the others are counted in ignored_files). Every such entry that is not a usable plugin is
// reported with its reason: not ELF, no hookhost note, wrong class or machine, truncated, malformed
// note, ABI mismatch (naming both versions), a duplicate id (naming both files; the first found
// wins: the earlier folder, then the first file name), a broken link or link loop, a FIFO, socket
// or device (never opened), a folder named like a plugin, a parameter named like a host-owned hook
// key. Ordinary sub-folders are skipped. A folder that does not exist is reported as rejected and
// in missing_folders.
DiscoveryResult discover_plugins(const std::vector<std::filesystem::path>& folders,
                                 const DiscoveryOptions& options = {});

}  // namespace hookhost
