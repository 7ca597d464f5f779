#include "check/plugin_file.hpp"

#include <system_error>

#include "hookhost/host/params.hpp"
#include "plugins/elf_note.hpp"
#include "plugins/imports.hpp"
#include "plugins/libelf_support.hpp"
#include "support/display_text.hpp"

namespace hookhost::check {

namespace fs = std::filesystem;

DiscoveredPlugin read_plugin_file(const fs::path& file) {
  const std::string name = display_text(file.string(), 1024);
  std::error_code ec;
  const fs::file_status status = fs::status(file, ec);  // follows links, as discovery does
  if (!fs::exists(status)) throw ConfigError(name + ": no such file");
  if (fs::is_directory(status)) throw ConfigError(name + ": a folder, not a plugin file");
  if (!fs::is_regular_file(status))
    throw ConfigError(name + ": not a regular file, so not a plugin file; it was not opened");
  ElfFile opened(file);
  NoteReadResult note = read_plugin_note(opened);
  if (!note.metadata)
    throw ConfigError(name + ": not a usable hookhost plugin: " + display_text(note.error, 1024));
  DiscoveredPlugin plugin;
  plugin.file = file;
  plugin.metadata = std::move(*note.metadata);
  plugin.process_wide_calls = read_process_wide_imports(opened).calls;
  return plugin;
}

}  // namespace hookhost::check
