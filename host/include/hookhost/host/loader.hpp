// Loads a discovered plugin with Boost.DLL and checks that it is what its note says.
#pragma once

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include <hookhost/entry.h>

#include "discovery.hpp"

namespace hookhost {

class LoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class LoadedPlugin {
 public:
  LoadedPlugin(std::filesystem::path file, PluginMetadata metadata, const hh_plugin_entry* entry,
               std::string sha256 = {}, std::shared_ptr<const int> private_copy = nullptr)
      : file_(std::move(file)),
        metadata_(std::move(metadata)),
        entry_(entry),
        sha256_(std::move(sha256)),
        private_copy_(std::move(private_copy)) {}
  const std::filesystem::path& file() const { return file_; }
  const PluginMetadata& metadata() const { return metadata_; }
  const hh_plugin_entry& entry() const { return *entry_; }
  // The SHA-256 (hex) of the bytes that were loaded: the private copy, not the file as it is now.
  const std::string& sha256() const { return sha256_; }
  // The sealed memfd holding those bytes, for private_plugin_copy's result (-1 otherwise). Shared:
  // it is closed when the last holder (a sandboxed hook that restarts from it) lets go.
  int private_copy_fd() const { return private_copy_ ? *private_copy_ : -1; }
  const std::shared_ptr<const int>& private_copy() const { return private_copy_; }

 private:
  std::filesystem::path file_;
  PluginMetadata metadata_;
  const hh_plugin_entry* entry_;
  std::string sha256_;
  std::shared_ptr<const int> private_copy_;
};

// Copies the file into private memory (a sealed memfd) first, so the installed file can be
// replaced or deleted while the job runs without a SIGBUS in code mapped from it; the copy is what
// is checked, hashed and opened. Opens the library with rtld_now | rtld_local (a missing symbol
// fails here, not at first call), resolves hookhost_plugin_v1, checks its struct_size and ABI
// version, and cross-checks the entry against the note (id, version, description, parameters).
// Throws LoadError naming the file and what to do. Libraries are never unloaded while the process
// lives; loading the same file twice returns the same plugin.
std::shared_ptr<const LoadedPlugin> load_plugin(const DiscoveredPlugin& plugin);

// The same copy, note check and hash, without opening it in this process: for isolation =
// process, whose runner opens the copy (passed as a descriptor, never the path) at start and at
// every restart. entry() must not be used on the result. Throws LoadError as load_plugin does.
std::shared_ptr<const LoadedPlugin> private_plugin_copy(const DiscoveredPlugin& plugin);

}  // namespace hookhost
