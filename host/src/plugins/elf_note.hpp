// Reads a plugin's metadata note from its file without loading it: no dlopen, no plugin code.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <string>

#include "hookhost/host/plugin_metadata.hpp"

namespace hookhost {

class ElfFile;

struct NoteReadResult {
  std::optional<PluginMetadata> metadata;  // set when the file is a well-formed hookhost plugin
  std::string error;                       // otherwise why not, e.g. "not an ELF file"
};

// Validates the file as a loadable shared object for this machine (ELF class and machine,
// ET_DYN, every PT_LOAD segment inside the file, so a truncated copy is caught before dlopen
// would die with SIGBUS) and parses its hookhost note. Never throws for a malformed file.
// The ABI version is reported, not checked: discovery decides what it accepts. Reads only the ELF
// header, the program header table and the PT_NOTE segments, never the whole file.
NoteReadResult read_plugin_note(const std::filesystem::path& file);

// The same, from a file already opened, so that another reader (the imports) can share its
// descriptor and libelf handle.
NoteReadResult read_plugin_note(ElfFile& file);

// Parses a note descriptor (format, ABI major and minor, text). Exposed for tests.
NoteReadResult parse_note_descriptor(std::span<const std::byte> descriptor);

}  // namespace hookhost
