#include "check/build_hygiene.hpp"

#include <elf.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "plugins/libelf_support.hpp"
#include "plugins/trust.hpp"
#include "support/display_text.hpp"
#include "support/text.hpp"

namespace hookhost::check {

namespace {

#ifndef STB_GNU_UNIQUE
#define STB_GNU_UNIQUE 10
#endif

// Symbols the linker defines in every shared object built without a version script; they say
// nothing about the plugin's own code.
constexpr std::string_view kLinkerSymbols[] = {"_init",       "_fini",  "_edata",      "_end",
                                               "__bss_start", "_etext", "__data_start"};

Finding warning(std::string kind, std::string message) {
  Finding f;
  f.severity = Severity::warning;
  f.kind = std::move(kind);
  f.message = std::move(message);
  return f;
}

std::string comma_list(const std::vector<std::string>& items, size_t max_items) {
  std::vector<std::string> shown;
  for (size_t i = 0; i < items.size() && i < max_items; ++i)
    shown.push_back(display_text(items[i], 128));
  if (items.size() > max_items)
    shown.push_back("... (" + std::to_string(items.size()) + " in all)");
  return join(shown, ", ");
}

// The defined global symbols of the .dynsym section besides the entry, or why they cannot be
// read.
struct Exports {
  std::vector<std::string> names;
  bool unique = false;  // one of them is STB_GNU_UNIQUE
  std::string error;
};

Exports read_exports(ElfFile& file) {
  Exports out;
  Elf* elf = file.elf();
  if (!elf || elf_kind(elf) != ELF_K_ELF) {
    out.error = "cannot read it as an ELF file: " + elf_error();
    return out;
  }
  size_t sections = 0;
  if (elf_getshdrnum(elf, &sections) != 0) {
    out.error = "cannot read its section headers: " + elf_error();
    return out;
  }
  Elf_Scn* dynsym = nullptr;
  GElf_Shdr shdr{};
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr h;
    if (gelf_getshdr(scn, &h) && h.sh_type == SHT_DYNSYM) {
      dynsym = scn;
      shdr = h;
      break;
    }
  }
  const size_t entry_size = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
  if (!dynsym || entry_size == 0 || shdr.sh_entsize != entry_size || shdr.sh_offset > file.size() ||
      shdr.sh_size > file.size() - shdr.sh_offset) {
    out.error = "no readable dynamic symbol table (.dynsym section)";
    return out;
  }
  Elf_Data* data = elf_getdata(dynsym, nullptr);
  if (!data) {
    out.error = "cannot read its .dynsym section: " + elf_error();
    return out;
  }
  std::set<std::string> names;
  const size_t count = std::min<size_t>(shdr.sh_size / entry_size, INT32_MAX);
  for (size_t i = 1; i < count; ++i) {
    GElf_Sym sym;
    if (!gelf_getsym(data, static_cast<int>(i), &sym)) break;
    if (sym.st_shndx == SHN_UNDEF) continue;  // an import
    const unsigned bind = GELF_ST_BIND(sym.st_info);
    const unsigned type = GELF_ST_TYPE(sym.st_info);
    const unsigned visibility = GELF_ST_VISIBILITY(sym.st_other);
    if (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE) continue;
    if (type == STT_SECTION || type == STT_FILE) continue;
    if (visibility != STV_DEFAULT && visibility != STV_PROTECTED) continue;
    const char* raw = elf_strptr(elf, shdr.sh_link, sym.st_name);
    if (!raw) continue;
    std::string name(raw);
    name = name.substr(0, name.find('@'));
    if (name.empty() || name == HH_ENTRY_SYMBOL) continue;
    if (std::find(std::begin(kLinkerSymbols), std::end(kLinkerSymbols), name) !=
        std::end(kLinkerSymbols))
      continue;
    if (bind == STB_GNU_UNIQUE) out.unique = true;
    names.insert(std::move(name));
  }
  out.names.assign(names.begin(), names.end());
  return out;
}

// What the program headers say about binding and the stack.
struct LoaderFlags {
  bool bind_now = false;
  bool has_dynamic = false;
  std::optional<bool> executable_stack;  // nullopt: no PT_GNU_STACK (the loader's default)
};

LoaderFlags read_loader_flags(ElfFile& file) {
  LoaderFlags out;
  Elf* elf = file.elf();
  size_t count = 0;
  if (!elf || elf_getphdrnum(elf, &count) != 0) return out;
  for (size_t i = 0; i < count; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf, static_cast<int>(i), &ph)) continue;
    if (ph.p_type == PT_GNU_STACK) out.executable_stack = (ph.p_flags & PF_X) != 0;
    if (ph.p_type != PT_DYNAMIC) continue;
    if (ph.p_offset > file.size() || ph.p_filesz > file.size() - ph.p_offset) continue;
    Elf_Data* data = elf_getdata_rawchunk(elf, static_cast<int64_t>(ph.p_offset),
                                          static_cast<size_t>(ph.p_filesz), ELF_T_DYN);
    if (!data) continue;
    out.has_dynamic = true;
    const size_t dyn_size = gelf_fsize(elf, ELF_T_DYN, 1, EV_CURRENT);
    for (size_t k = 0; dyn_size && k < data->d_size / dyn_size; ++k) {
      GElf_Dyn dyn;
      if (!gelf_getdyn(data, static_cast<int>(k), &dyn) || dyn.d_tag == DT_NULL) break;
      if (dyn.d_tag == DT_BIND_NOW) out.bind_now = true;
      if (dyn.d_tag == DT_FLAGS && (dyn.d_un.d_val & DF_BIND_NOW)) out.bind_now = true;
      if (dyn.d_tag == DT_FLAGS_1 && (dyn.d_un.d_val & DF_1_NOW)) out.bind_now = true;
    }
  }
  return out;
}

}  // namespace

std::vector<Finding> check_build_hygiene(const DiscoveredPlugin& plugin) {
  std::vector<Finding> found;
  ElfFile file(plugin.file);
  if (!file.open_error().empty()) {
    found.push_back(warning("unreadable-symbols", "cannot read the file: " + file.open_error()));
    return found;
  }

  const Exports exports = read_exports(file);
  if (!exports.error.empty()) {
    found.push_back(
        warning("unreadable-symbols", "its exports and imports cannot be read: " + exports.error));
  } else if (!exports.names.empty()) {
    found.push_back(
        warning("exported-symbols",
                "it exports " + std::to_string(exports.names.size()) + " symbol(s) besides " +
                    HH_ENTRY_SYMBOL + ": " + comma_list(exports.names, 10) +
                    (exports.unique ? " (some STB_GNU_UNIQUE, shared process-wide)" : "")));
  }

  const LoaderFlags flags = read_loader_flags(file);
  if (flags.has_dynamic && !flags.bind_now)
    found.push_back(warning("lazy-binding",
                            "it is linked for lazy binding (no DF_BIND_NOW or DF_1_NOW in its "
                            "dynamic section): link with -z now"));
  if (!flags.executable_stack || *flags.executable_stack)
    found.push_back(warning("executable-stack",
                            flags.executable_stack
                                ? "its PT_GNU_STACK header asks for an executable stack"
                                : "it has no PT_GNU_STACK header, so the loader gives it an "
                                  "executable stack"));

  if (plugin.process_wide_calls && !plugin.process_wide_calls->empty())
    found.push_back(warning("process-wide-calls", "it imports process-wide calls: " +
                                                      comma_list(*plugin.process_wide_calls, 40)));

  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(plugin.file, ec);
  if (const std::string why = ec ? "" : trust_problem(absolute.parent_path(), absolute);
      !why.empty())
    found.push_back(warning("trust", "'hookhost run' would refuse to load it from " +
                                         display_text(absolute.parent_path().string(), 512) + ": " +
                                         display_text(why, 1024)));
  return found;
}

}  // namespace hookhost::check
