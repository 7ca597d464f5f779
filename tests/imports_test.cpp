// Reading which process-wide calls a plugin imports, without loading it: real built plugins, and
// copies of them damaged in temporary folders.
#include "plugins/imports.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <elf.h>

#include <cstddef>
#include <cstring>

#include "hookhost/host/discovery.hpp"
#include "plugin_files.hpp"
#include "plugins/elf_note.hpp"
#include "plugins/libelf_support.hpp"
#include "test_support.hpp"

namespace hookhost {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using namespace hookhost::testing;

using Calls = std::vector<std::string>;

// The section header of the .dynsym section and where it is in the file.
struct DynsymSection {
  std::size_t header_offset;
  Elf64_Shdr header;
};

DynsymSection find_dynsym(const std::string& content) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, content.data(), sizeof eh);
  for (std::size_t i = 0; i < eh.e_shnum; ++i) {
    const std::size_t at = eh.e_shoff + i * sizeof(Elf64_Shdr);
    Elf64_Shdr sh;
    std::memcpy(&sh, content.data() + at, sizeof sh);
    if (sh.sh_type == SHT_DYNSYM) return {at, sh};
  }
  throw std::runtime_error("no .dynsym section");
}

// Where in the file the .dynsym entry of the symbol `name` starts.
std::size_t symbol_entry_offset(const std::string& content, const std::string& name) {
  const DynsymSection dynsym = find_dynsym(content);
  Elf64_Ehdr eh;
  std::memcpy(&eh, content.data(), sizeof eh);
  Elf64_Shdr strtab;
  std::memcpy(&strtab, content.data() + eh.e_shoff + dynsym.header.sh_link * sizeof strtab,
              sizeof strtab);
  for (std::size_t at = dynsym.header.sh_offset;
       at < dynsym.header.sh_offset + dynsym.header.sh_size; at += sizeof(Elf64_Sym)) {
    Elf64_Sym sym;
    std::memcpy(&sym, content.data() + at, sizeof sym);
    if (content.c_str() + strtab.sh_offset + sym.st_name == name) return at;
  }
  throw std::runtime_error("no symbol " + name);
}

// A copy whose ELF header lists no section headers. The dynamic loader does not need them, so
// such a file still loads and runs; its .dynsym section can no longer be found.
fs::path without_section_headers(const fs::path& source, const fs::path& dir) {
  const fs::path copy = copy_plugin(source, dir, "no_sections.so");
  patch_file(copy, offsetof(Elf64_Ehdr, e_shoff), Elf64_Off{0});
  patch_file(copy, offsetof(Elf64_Ehdr, e_shnum), Elf64_Half{0});
  patch_file(copy, offsetof(Elf64_Ehdr, e_shstrndx), Elf64_Half{0});
  return copy;
}

TEST(ProcessWideImports, TheFaultCorpusIsFlaggedWithTheCallsItImports) {
  // faulty.c calls exit(3), _exit(0) and signal(); it also calls abort(), which is not flagged.
  ImportsReadResult faulty = read_process_wide_imports(fixture_plugin("faulty"));
  EXPECT_EQ(faulty.error, "");
  ASSERT_TRUE(faulty.calls);
  EXPECT_THAT(*faulty.calls, ElementsAre("_exit", "exit", "sigaction", "signal"));
  ImportsReadResult crasher = read_process_wide_imports(fixture_plugin("crasher"));
  ASSERT_TRUE(crasher.calls) << crasher.error;
  EXPECT_THAT(*crasher.calls, ElementsAre("_exit", "exit"));
}

TEST(ProcessWideImports, CleanPluginsImportNone) {
  for (const fs::path& file : {builtin_plugin("step_counter"), builtin_plugin("stop_at_step"),
                               fixture_plugin("good_c"), fixture_plugin("good_cxx")}) {
    SCOPED_TRACE(file.string());
    ImportsReadResult r = read_process_wide_imports(file);
    ASSERT_TRUE(r.calls) << r.error;
    EXPECT_THAT(*r.calls, IsEmpty());
  }
}

TEST(ProcessWideImports, NamesMatchByBaseNameWhateverTheirVersion) {
  for (const char* name :
       {"exit", "exit@GLIBC_2.2.5", "sigaction@@GLIBC_2.2.5", "_Exit", "fork", "execvpe",
        "posix_spawnp", "setenv", "prctl", "__sysv_signal", "setrlimit64@GLIBC_2.2.5"})
    EXPECT_TRUE(is_process_wide_call(name)) << name;
  for (const char* name : {"abort", "abort@GLIBC_2.2.5", "atexit", "exit_group", "exitx", "Exit",
                           "getenv", "sigprocmask", "", "@exit", "pthread_sigmask"})
    EXPECT_FALSE(is_process_wide_call(name)) << name;
}

TEST(ProcessWideImports, TruncatedCopiesAreUnknownNotNone) {
  TempDir dir;
  const fs::path source = fixture_plugin("faulty");
  const std::size_t size = fs::file_size(source);
  const std::string content = read_file(source);
  const DynsymSection dynsym = find_dynsym(content);
  // Cut inside the ELF header, inside .dynsym, after it, and just short of the section headers'
  // end: whatever is missing, the answer is "could not be read", never a shorter list.
  for (std::size_t bytes :
       {std::size_t{0}, std::size_t{40}, dynsym.header.sh_offset + dynsym.header.sh_size / 2,
        dynsym.header.sh_offset + dynsym.header.sh_size + 64, size / 2, size - 1}) {
    SCOPED_TRACE(bytes);
    const fs::path cut = truncated_copy(source, dir.path(), "cut.so", bytes);
    ImportsReadResult r = read_process_wide_imports(cut);
    EXPECT_FALSE(r.calls) << "read: " << ::testing::PrintToString(*r.calls);
    EXPECT_THAT(r.error, Not(IsEmpty()));
  }
}

TEST(ProcessWideImports, MissingOrDamagedSymbolTablesAreUnknown) {
  TempDir dir;
  const fs::path source = fixture_plugin("faulty");
  // The same bytes in another folder read as before: what follows is down to each damage.
  ASSERT_TRUE(read_process_wide_imports(copy_plugin(source, dir.path())).calls);

  ImportsReadResult no_sections =
      read_process_wide_imports(without_section_headers(source, dir.path()));
  EXPECT_FALSE(no_sections.calls);
  EXPECT_THAT(no_sections.error, HasSubstr("no dynamic symbol table (.dynsym section)"));

  const std::string content = read_file(source);
  const fs::path unlinked = copy_plugin(source, dir.path(), "unlinked.so");
  patch_file(unlinked, find_dynsym(content).header_offset + offsetof(Elf64_Shdr, sh_link),
             Elf64_Word{0});
  ImportsReadResult no_names = read_process_wide_imports(unlinked);
  EXPECT_FALSE(no_names.calls);
  EXPECT_THAT(no_names.error, HasSubstr("does not link to a string table"));

  // One name that points past its string table: dropping that symbol would hide exit().
  const fs::path bad_name = copy_plugin(source, dir.path(), "bad_name.so");
  patch_file(bad_name, symbol_entry_offset(content, "exit") + offsetof(Elf64_Sym, st_name),
             Elf64_Word{0xfffffff0});
  ImportsReadResult unreadable = read_process_wide_imports(bad_name);
  EXPECT_FALSE(unreadable.calls);
  EXPECT_THAT(unreadable.error, HasSubstr("is unreadable"));

  write_file(dir / "text.so", "not an ELF file\n");
  EXPECT_FALSE(read_process_wide_imports(dir / "text.so").calls);
  ImportsReadResult missing = read_process_wide_imports(dir / "missing.so");
  EXPECT_FALSE(missing.calls);
  EXPECT_THAT(missing.error, HasSubstr("cannot open"));
}

TEST(ProcessWideImports, DiscoveryReadsThemForTheNamedPluginsAndKeepsOnesWhoseImportsAreUnknown) {
  TempDir dir;
  copy_plugin(fixture_plugin("faulty"), dir.path());
  copy_plugin(fixture_plugin("good_c"), dir.path());
  copy_plugin(fixture_plugin("good_cxx"), dir.path());
  const fs::path crasher = dir / "crasher";
  fs::create_directory(crasher);
  without_section_headers(fixture_plugin("crasher"), crasher);
  DiscoveryResult r =
      discover_plugins({dir.path(), crasher}, {.imports_of = {"faulty", "good_c", "crasher"}});
  EXPECT_THAT(r.rejected, IsEmpty());
  ASSERT_NE(r.find("faulty"), nullptr);
  ASSERT_TRUE(r.find("faulty")->process_wide_calls);
  EXPECT_THAT(*r.find("faulty")->process_wide_calls,
              ElementsAre("_exit", "exit", "sigaction", "signal"));
  ASSERT_NE(r.find("good_c"), nullptr);
  ASSERT_TRUE(r.find("good_c")->process_wide_calls);
  EXPECT_THAT(*r.find("good_c")->process_wide_calls, IsEmpty());
  ASSERT_NE(r.find("crasher"), nullptr);  // still a plugin: only its imports are unknown
  EXPECT_FALSE(r.find("crasher")->process_wide_calls);
  ASSERT_NE(r.find("good_cxx"), nullptr);  // not named: not read
  EXPECT_FALSE(r.find("good_cxx")->process_wide_calls);

  // Listing alone reads no imports at all.
  for (const DiscoveredPlugin& p : discover_plugins({dir.path(), crasher}).plugins)
    EXPECT_FALSE(p.process_wide_calls) << p.metadata.id;
}

TEST(ProcessWideImports, DiscoveryReadsThemFromTheFileItUsesNotFromAnIgnoredDuplicate) {
  TempDir first, second;
  // The file that wins has unreadable imports; the ignored one would name four calls.
  without_section_headers(fixture_plugin("faulty"), first.path());
  copy_plugin(fixture_plugin("faulty"), second.path());
  DiscoveryResult r = discover_plugins({first.path(), second.path()}, {.imports_of = {"faulty"}});
  ASSERT_EQ(r.duplicates.size(), 1u);
  ASSERT_NE(r.find("faulty"), nullptr);
  EXPECT_EQ(r.find("faulty")->file, first / "no_sections.so");
  EXPECT_FALSE(r.find("faulty")->process_wide_calls);

  r = discover_plugins({second.path(), first.path()}, {.imports_of = {"faulty"}});
  ASSERT_NE(r.find("faulty"), nullptr);
  ASSERT_TRUE(r.find("faulty")->process_wide_calls);
  EXPECT_THAT(*r.find("faulty")->process_wide_calls,
              ElementsAre("_exit", "exit", "sigaction", "signal"));
}

TEST(ProcessWideImports, TheNoteAndTheImportsShareOneOpenFile) {
  TempDir dir;
  const fs::path file = copy_plugin(fixture_plugin("faulty"), dir.path());
  ElfFile opened(file);
  ASSERT_EQ(opened.open_error(), "");
  // Removed from the folder: only the descriptor opened above can still reach the bytes.
  fs::remove(file);
  NoteReadResult note = read_plugin_note(opened);
  ASSERT_TRUE(note.metadata) << note.error;
  EXPECT_EQ(note.metadata->id, "faulty");
  ImportsReadResult imports = read_process_wide_imports(opened);
  ASSERT_TRUE(imports.calls) << imports.error;
  EXPECT_THAT(*imports.calls, ElementsAre("_exit", "exit", "sigaction", "signal"));
  // And either reader alone, on a path that is gone, says so.
  EXPECT_THAT(read_process_wide_imports(file).error, HasSubstr("cannot open"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost
