#include "plugins/imports.hpp"

#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <set>

#include "plugins/libelf_support.hpp"

namespace hookhost {

namespace {

// Calls that end, duplicate or replace the whole process, or change what all of its threads share
// (signal dispositions, the environment, limits). abort() is left out on purpose: it is a crash
// like any other, and process isolation contains it whether or not it is flagged.
constexpr std::string_view kProcessWideCalls[] = {
    "exit", "_exit", "_Exit", "quick_exit",  // end the process
    "fork", "vfork", "clone", "daemon",      // duplicate it
    "execv", "execve", "execvp", "execvpe", "execl", "execle", "execlp", "execveat", "fexecve",
    "posix_spawn", "posix_spawnp", "system", "popen",                  // run programs
    "signal", "sigaction", "sigset", "bsd_signal", "sysv_signal",      // signal dispositions
    "setenv", "unsetenv", "putenv", "clearenv", "setrlimit", "prctl",  // the environment, limits
    // What glibc's headers turn two of the above into: signal() under strict ISO C (-std=c99),
    // setrlimit() with _FILE_OFFSET_BITS=64.
    "__sysv_signal", "setrlimit64"};

ImportsReadResult unknown(std::string why) {
  return {std::nullopt, std::move(why)};
}

}  // namespace

bool is_process_wide_call(std::string_view symbol) {
  symbol = symbol.substr(0, symbol.find('@'));
  return std::find(std::begin(kProcessWideCalls), std::end(kProcessWideCalls), symbol) !=
         std::end(kProcessWideCalls);
}

ImportsReadResult read_process_wide_imports(const std::filesystem::path& file) {
  ElfFile opened(file);
  return read_process_wide_imports(opened);
}

ImportsReadResult read_process_wide_imports(ElfFile& file) {
  if (!file.open_error().empty()) return unknown(file.open_error());
  const std::uint64_t size = file.size();
  if (!libelf_ready()) return unknown("libelf failed to initialise");
  Elf* elf = file.elf();
  if (!elf) return unknown("cannot read it as an ELF file: " + elf_error());
  if (elf_kind(elf) != ELF_K_ELF) return unknown("not an ELF file");
  // elf_nextscn() ends the same way on an error as at the last section: check the count first.
  std::size_t sections = 0;
  if (elf_getshdrnum(elf, &sections) != 0)
    return unknown("cannot read its section headers: " + elf_error());

  // The dynamic symbol table is found through its section, the way readelf and nm find it.
  Elf_Scn* dynsym = nullptr;
  GElf_Shdr shdr{};
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr h;
    if (!gelf_getshdr(scn, &h)) return unknown("cannot read a section header: " + elf_error());
    if (h.sh_type != SHT_DYNSYM) continue;
    if (dynsym) return unknown("two dynamic symbol tables (.dynsym sections)");
    dynsym = scn;
    shdr = h;
  }
  if (!dynsym) return unknown("no dynamic symbol table (.dynsym section)");
  const std::size_t entry_size = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
  if (entry_size == 0 || shdr.sh_entsize != entry_size)
    return unknown("its .dynsym entries are " + std::to_string(shdr.sh_entsize) +
                   " bytes, expected " + std::to_string(entry_size));
  if (shdr.sh_offset > size || shdr.sh_size > size - shdr.sh_offset)
    return unknown("truncated: its .dynsym section runs past the end of the file");
  GElf_Shdr strtab;
  Elf_Scn* names = elf_getscn(elf, shdr.sh_link);
  if (!names || !gelf_getshdr(names, &strtab) || strtab.sh_type != SHT_STRTAB)
    return unknown("its .dynsym section does not link to a string table");
  Elf_Data* data = elf_getdata(dynsym, nullptr);
  if (!data) return unknown("cannot read its .dynsym section: " + elf_error());

  std::set<std::string> found;
  const std::size_t count = shdr.sh_size / entry_size;
  if (count > static_cast<std::size_t>(INT32_MAX)) return unknown("its .dynsym section is too big");
  for (std::size_t i = 1; i < count; ++i) {  // symbol 0 is the null symbol
    GElf_Sym sym;
    if (!gelf_getsym(data, static_cast<int>(i), &sym))
      return unknown("cannot read dynamic symbol " + std::to_string(i) + ": " + elf_error());
    if (sym.st_shndx != SHN_UNDEF) continue;  // defined here: not an import
    const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
    // One unreadable name would make "none" a guess.
    if (!name) return unknown("the name of dynamic symbol " + std::to_string(i) + " is unreadable");
    const std::string_view text(name);
    if (is_process_wide_call(text)) found.emplace(text.substr(0, text.find('@')));
  }
  return {std::vector<std::string>(found.begin(), found.end()), {}};
}

}  // namespace hookhost
