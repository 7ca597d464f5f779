// Which process-wide calls (exit, fork, exec*, signal handlers, the environment, ...) a plugin file
// imports, read from its dynamic symbol table without loading it: no dlopen, no plugin code.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hookhost {

class ElfFile;

struct ImportsReadResult {
  // The process-wide calls the file imports, sorted, each once; nullopt when its dynamic symbol
  // table could not be read (then nobody knows, which is not the same as "none").
  std::optional<std::vector<std::string>> calls;
  std::string error;  // why not, e.g. "no dynamic symbol table (.dynsym section)"
};

// Whether a symbol name is a process-wide call. A version suffix is ignored: "exit@GLIBC_2.2.5"
// and "exit@@GLIBC_2.2.5" are "exit".
bool is_process_wide_call(std::string_view symbol);

// Reads the undefined symbols of `file`'s .dynsym section and keeps the process-wide calls. Weak
// undefined symbols count: the C library is always loaded, so a weak reference to exit binds and
// can be called like a strong one. A hint, not a guarantee: a plugin can still reach these calls
// without importing them (dlsym, a raw syscall, a library it links), and only the plugin file's
// own imports are read. Never throws for a malformed file. Reads the ELF header, the section
// header table, .dynsym and its string table, nothing else.
ImportsReadResult read_process_wide_imports(const std::filesystem::path& file);

// The same, from a file already opened (by discovery, for its note): one descriptor and one libelf
// handle for both.
ImportsReadResult read_process_wide_imports(ElfFile& file);

}  // namespace hookhost
