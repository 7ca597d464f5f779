#include "hookhost/host/discovery.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <system_error>
#include <utility>

#include "hookhost/host/hook_keys.hpp"
#include "support/display_text.hpp"
#include "plugins/elf_note.hpp"
#include "plugins/imports.hpp"
#include "plugins/libelf_support.hpp"
#include "support/text.hpp"

namespace hookhost {

namespace fs = std::filesystem;

namespace {

const fs::path& path_of(const fs::path& p) {
  return p;
}
const fs::path& path_of(const RejectedFile& r) {
  return r.file;
}

// Whether a folder entry's name says it is meant to be a plugin: "x.so", "x.so.1" or "x.so.1.2"
// (docs/abi.md §13). A "x.so.bak" or "backup_x" is not considered, so a renamed old copy with the
// same id can never be the one loaded.
bool named_like_a_plugin(const fs::path& name) {
  const std::string text = name.filename().string();
  for (auto pos = text.find(".so"); pos != std::string::npos; pos = text.find(".so", pos + 1)) {
    if (pos == 0) continue;
    std::size_t at = pos + 3;
    bool version_ok = true;
    while (version_ok && at < text.size()) {
      // Each version part is '.' and at least one digit.
      std::size_t digits = at + 1;
      while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])))
        ++digits;
      version_ok = text[at] == '.' && digits > at + 1;
      at = digits;
    }
    if (version_ok) return true;
  }
  return false;
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
    case fs::file_type::directory: return "a folder, not a plugin file";
    case fs::file_type::fifo: return "a FIFO (named pipe), not a plugin file; it was not opened";
    case fs::file_type::socket: return "a socket, not a plugin file";
    case fs::file_type::block:
    case fs::file_type::character: return "a device file, not a plugin file; it was not opened";
    default: return "not a regular file";
  }
}

// The files of one folder named like plugins that are, or link to, regular files, sorted by file
// name. Every other entry named like a plugin is reported with its reason; entries with other
// names are only counted in `ignored` (a build folder holds many), ordinary sub-folders not even
// that.
std::vector<fs::path> list_folder(const fs::path& folder, std::vector<RejectedFile>* rejected,
                                  std::size_t* ignored) {
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
    if (!named_like_a_plugin(it->path())) {
      if (!fs::is_directory(st)) ++*ignored;
    } else if (!status_ec && fs::is_regular_file(st)) {
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

// A parameter named like a host-owned [hook.NAME] key could never be set from a configuration:
// the host would take the value as its own key.
std::string host_key_parameter_problem(const PluginMetadata& metadata) {
  for (const ParamSpec& param : metadata.params) {
    if (!is_host_hook_key(param.name)) continue;
    const std::string keys = join(kHostHookKeys, ", ");
    return "parameter '" + display_text(param.name) + "' of plugin '" + display_text(metadata.id) +
           "' has the name of a key the host takes in every [hook.NAME] section (" + keys +
           "), so no configuration could set it: the plugin's author must rename the parameter "
           "(e.g. '" +
           display_text(metadata.id) + "_" + display_text(param.name) + "')";
  }
  return {};
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
    for (const fs::path& file : list_folder(folder, &result.rejected, &result.ignored_files)) {
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
      if (std::string why = host_key_parameter_problem(*note.metadata); !why.empty()) {
        result.rejected.push_back({file, std::move(why)});
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
