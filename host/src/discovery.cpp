#include "hookhost/host/discovery.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>
#include <system_error>
#include <utility>

#include "hookhost/host/elf_note.hpp"

namespace hookhost {

namespace fs = std::filesystem;

namespace {

std::string abi_text(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

// Empty when this host accepts a plugin built for ABI major.minor.
std::string abi_mismatch(const PluginMetadata& m) {
  const std::string host = abi_text(HH_ABI_MAJOR, HH_ABI_MINOR);
  const std::string plugin = abi_text(m.abi_major, m.abi_minor);
  if (m.abi_major != HH_ABI_MAJOR) {
    return "built for hookhost ABI " + plugin + "; this host supports ABI " + host +
           " (major versions must match) — rebuild the plugin against this hookhost";
  }
  if (m.abi_minor > HH_ABI_MINOR) {
    return "built for hookhost ABI " + plugin + ", newer than this host's ABI " + host +
           " — it needs a newer host: upgrade hookhost, or rebuild the plugin against ABI " + host;
  }
  return {};
}

// The files of one folder that are, or link to, regular files, sorted by file name. Dangling
// links are reported: they usually are a botched install.
std::vector<fs::path> list_folder(const fs::path& folder, std::vector<RejectedFile>* rejected) {
  std::vector<fs::path> files;
  std::error_code ec;
  fs::directory_iterator it(folder, ec);
  if (ec) {
    rejected->push_back({folder, "cannot read plugin folder: " + ec.message()});
    return files;
  }
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code status_ec;
    fs::file_status st = it->status(status_ec);  // follows symlinks
    if (fs::is_regular_file(st)) {
      files.push_back(it->path());
    } else if (st.type() == fs::file_type::not_found && it->is_symlink(status_ec)) {
      rejected->push_back({it->path(), "broken symbolic link: its target does not exist"});
    }
  }
  if (ec) rejected->push_back({folder, "cannot read plugin folder: " + ec.message()});
  std::sort(files.begin(), files.end(),
            [](const fs::path& a, const fs::path& b) { return a.filename() < b.filename(); });
  return files;
}

}  // namespace

const DiscoveredPlugin* DiscoveryResult::find(std::string_view id) const {
  for (const DiscoveredPlugin& p : plugins) {
    if (p.metadata.id == id) return &p;
  }
  return nullptr;
}

DiscoveryResult discover_plugins(const std::vector<fs::path>& folders) {
  DiscoveryResult result;
  std::set<std::pair<dev_t, ino_t>> seen_files;
  std::map<std::string, fs::path, std::less<>> first_by_id;

  for (const fs::path& folder : folders) {
    std::error_code ec;
    fs::file_status st = fs::status(folder, ec);
    if (!fs::exists(st)) {
      result.rejected.push_back({folder, "plugin folder does not exist"});
      continue;
    }
    if (!fs::is_directory(st)) {
      result.rejected.push_back({folder, "plugin folder is not a directory"});
      continue;
    }
    for (const fs::path& file : list_folder(folder, &result.rejected)) {
      // The same file reached twice (folder listed twice, a link) is one plugin, silently.
      struct stat file_st {};
      if (::stat(file.c_str(), &file_st) == 0 &&
          !seen_files.emplace(file_st.st_dev, file_st.st_ino).second) {
        continue;
      }
      NoteReadResult note = read_plugin_note(file);
      if (!note.metadata) {
        result.rejected.push_back({file, std::move(note.error)});
        continue;
      }
      if (std::string reason = abi_mismatch(*note.metadata); !reason.empty()) {
        result.rejected.push_back({file, std::move(reason)});
        continue;
      }
      auto [it, inserted] = first_by_id.emplace(note.metadata->id, file);
      if (!inserted) {
        result.rejected.push_back(
            {file, "duplicate plugin id '" + note.metadata->id + "': already provided by " +
                       it->second.string() + "; " + file.string() +
                       " is ignored (the first found wins) — remove or rename one of them"});
        continue;
      }
      result.plugins.push_back({file, std::move(*note.metadata)});
    }
  }
  return result;
}

}  // namespace hookhost
