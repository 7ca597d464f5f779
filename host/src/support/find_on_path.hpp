// Colon-separated folder lists (PATH, HOOKHOST_PLUGIN_PATH), and finding an installed program on
// PATH. An embedding program lives outside hookhost's install folder, so "next to the running
// program" cannot find hookhost-runner or the built-in plugins for it; the installed bin/ on PATH
// can.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

namespace hookhost {

// The folders of a colon-separated list, in order; empty entries are skipped.
inline std::vector<std::filesystem::path> split_folder_list(std::string_view list) {
  std::vector<std::filesystem::path> folders;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t colon = list.find(':', start);
    if (colon == std::string_view::npos) colon = list.size();
    if (colon > start) folders.emplace_back(list.substr(start, colon - start));
    start = colon + 1;
  }
  return folders;
}

inline std::optional<std::filesystem::path> find_on_path(std::string_view name) {
  const char* path = std::getenv("PATH");
  if (!path) return std::nullopt;
  for (const std::filesystem::path& folder : split_folder_list(path)) {
    const std::filesystem::path candidate = folder / name;
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return std::nullopt;
}

}  // namespace hookhost
