#include "hookhost/host/discovery.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>
#include <system_error>
#include <utility>

#include "job/display_text.hpp"
#include "plugins/elf_note.hpp"
#include "plugins/imports.hpp"
#include "plugins/libelf_support.hpp"

namespace hookhost {

namespace fs = std::filesystem;

namespace {

const fs::path& path_of(const fs::path& p) {
  return p;
}
const fs::path& path_of(const RejectedFile& r) {
  return r.file;
}

// Whether a folder entry's name says it is meant to be a plugin: "x.so" or "x.so.1".
bool named_like_a_plugin(const fs::path& name) {
  const std::string text = name.filename().string();
  const auto pos = text.find(".so");
  return pos != std::string::npos && pos > 0 && (pos + 3 == text.size() || text[pos + 3] == '.');
}

// Why a folder entry that is not a regular file (after following links) is no plugin; empty for
// entries that are skipped without a word (ordinary sub-folders: discovery is not recursive).
std::string why_not_a_file(const fs::directory_entry& entry, std::error_code status_ec,
                           const fs::file_status& st) {
  std::error_code ec;
  const bool link = entry.is_symlink(ec);
  if (status_ec == std::errc::too_many_symbolic_link_levels)
    return "symbolic link loop: following it never reaches a file";
  if (st.type() == fs::file_type::not_found && link)
    return "broken symbolic link: its target does not exist";
  if (status_ec) return "cannot read its type: " + status_ec.message();
  switch (st.type()) {
    case fs::file_type::directory:
      return named_like_a_plugin(entry.path()) ? "a folder, not a plugin file" : "";
    case fs::file_type::fifo: return "a FIFO (named pipe), not a plugin file; it was not opened";
    case fs::file_type::socket: return "a socket, not a plugin file";
    case fs::file_type::block:
    case fs::file_type::character: return "a device file, not a plugin file; it was not opened";
    default: return "not a regular file";
  }
}

// The files of one folder that are, or link to, regular files, sorted by file name. Every other
// entry is reported with its reason, except ordinary sub-folders.
std::vector<fs::path> list_folder(const fs::path& folder, std::vector<RejectedFile>* rejected) {
  std::vector<fs::path> files;
  std::vector<RejectedFile> others;
  std::error_code ec;
  fs::directory_iterator it(folder, ec);
  if (ec) {
    rejected->push_back({folder, "cannot read plugin folder: " + ec.message()});
    return files;
  }
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code status_ec;
    const fs::file_status st = it->status(status_ec);  // follows symlinks
    if (!status_ec && fs::is_regular_file(st)) {
      files.push_back(it->path());
    } else if (std::string reason = why_not_a_file(*it, status_ec, st); !reason.empty()) {
      others.push_back({it->path(), std::move(reason)});
    }
  }
  if (ec) rejected->push_back({folder, "cannot read plugin folder: " + ec.message()});
  const auto by_name = [](const auto& a, const auto& b) {
    return path_of(a).filename() < path_of(b).filename();
  };
  std::sort(files.begin(), files.end(), by_name);
  std::sort(others.begin(), others.end(), by_name);
  rejected->insert(rejected->end(), others.begin(), others.end());
  return files;
}

}  // namespace

const DiscoveredPlugin* DiscoveryResult::find(std::string_view id) const {
  for (const DiscoveredPlugin& p : plugins) {
    if (p.metadata.id == id) return &p;
  }
  return nullptr;
}

DiscoveryResult discover_plugins(const std::vector<fs::path>& folders,
                                 const DiscoveryOptions& options) {
  DiscoveryResult result;
  std::set<std::pair<dev_t, ino_t>> seen_files;
  struct FirstFound {
    fs::path file;
    size_t folder_index;
  };
  std::map<std::string, FirstFound, std::less<>> first_by_id;

  for (size_t folder_index = 0; folder_index < folders.size(); ++folder_index) {
    const fs::path& folder = folders[folder_index];
    std::error_code ec;
    fs::file_status st = fs::status(folder, ec);
    if (!fs::exists(st)) {
      result.rejected.push_back({folder, "plugin folder does not exist"});
      result.missing_folders.push_back(folder);
      continue;
    }
    if (!fs::is_directory(st)) {
      result.rejected.push_back({folder, "plugin folder is not a directory"});
      result.missing_folders.push_back(folder);
      continue;
    }
    for (const fs::path& file : list_folder(folder, &result.rejected)) {
      // The same file reached twice (folder listed twice, a link) is one plugin, silently.
      struct stat file_st {};
      if (::stat(file.c_str(), &file_st) == 0 &&
          !seen_files.emplace(file_st.st_dev, file_st.st_ino).second) {
        continue;
      }
      // The note reader checks the ABI version before anything else: a note it returns is one
      // this host can run.
      ElfFile opened(file);
      NoteReadResult note = read_plugin_note(opened);
      if (!note.metadata) {
        result.rejected.push_back({file, std::move(note.error)});
        continue;
      }
      auto [it, inserted] = first_by_id.emplace(note.metadata->id, FirstFound{file, folder_index});
      if (!inserted) {
        const std::string why =
            it->second.folder_index == folder_index
                ? "both are in one folder, and the first file name in sort order wins"
                : "its folder comes first in the search path (--plugin-dir, [run] plugin_dir, "
                  "HOOKHOST_PLUGIN_PATH, then the built-in plugins)";
        DuplicatePlugin duplicate{note.metadata->id, it->second.file, file, why};
        result.rejected.push_back({file, "duplicate plugin id '" + display_text(duplicate.id) +
                                             "': already provided by " +
                                             display_text(duplicate.chosen.string()) +
                                             ", which is used because " + why + "; " +
                                             display_text(duplicate.ignored.string()) +
                                             " is ignored — remove or rename one of them"});
        result.duplicates.push_back(std::move(duplicate));
        continue;
      }
      DiscoveredPlugin& plugin = result.plugins.emplace_back();
      plugin.file = file;
      plugin.metadata = std::move(*note.metadata);
      // An unreadable symbol table leaves the imports unknown; the plugin is still usable.
      if (std::find(options.imports_of.begin(), options.imports_of.end(), plugin.metadata.id) !=
          options.imports_of.end())
        plugin.process_wide_calls = read_process_wide_imports(opened).calls;
    }
  }
  return result;
}

}  // namespace hookhost
