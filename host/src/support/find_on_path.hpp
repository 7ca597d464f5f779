// Finds an installed program by name on PATH. An embedding program lives outside hookhost's
// install folder, so "next to the running program" cannot find hookhost-runner or the built-in
// plugins for it; the installed bin/ on PATH can.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace hookhost {

inline std::optional<std::filesystem::path> find_on_path(std::string_view name) {
  const char* path = std::getenv("PATH");
  if (!path) return std::nullopt;
  const std::string_view list = path;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t colon = list.find(':', start);
    if (colon == std::string_view::npos) colon = list.size();
    if (colon > start) {
      const std::filesystem::path candidate =
          std::filesystem::path(list.substr(start, colon - start)) / name;
      std::error_code ec;
      if (std::filesystem::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0)
        return candidate;
    }
    start = colon + 1;
  }
  return std::nullopt;
}

}  // namespace hookhost
