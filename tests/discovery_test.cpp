// Finding plugins in folders: real plugin files (good, broken, duplicated) in temporary folders.
#include "hookhost/host/discovery.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>

#include "hookhost/host/config.hpp"
#include "hookhost/host/loader.hpp"
#include "support/display_text.hpp"
#include "plugin_files.hpp"
#include "plugins/elf_note.hpp"
#include "process.hpp"
#include "test_support.hpp"

namespace hookhost {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using namespace hookhost::testing;

std::string host_abi() {
  return std::to_string(HH_ABI_MAJOR) + "." + std::to_string(HH_ABI_MINOR);
}

// The reason `file` was rejected, or "" when it was not.
std::string reason_for(const DiscoveryResult& r, const fs::path& file) {
  for (const RejectedFile& rejected : r.rejected) {
    if (rejected.file == file) return rejected.reason;
  }
  return {};
}

std::vector<std::string> ids(const DiscoveryResult& r) {
  std::vector<std::string> out;
  for (const DiscoveredPlugin& p : r.plugins) out.push_back(p.metadata.id);
  return out;
}

// What this thread has read so far through read(2) and pread(2), page cache hits included (the
// kernel's rchar); nullopt when the kernel keeps no such count.
std::optional<std::uint64_t> bytes_read_by_this_thread() {
  std::ifstream io("/proc/thread-self/io");
  std::string key;
  std::uint64_t value = 0;
  while (io >> key >> value) {
    if (key == "rchar:") return value;
  }
  return std::nullopt;
}

// A copy of `source` with one more section of `bytes` bytes: the section's bytes, then a new
// section header table (the old one and the new section), are appended and the ELF header points
// to them. The loader needs no section headers, so the copy is still the same plugin.
fs::path with_large_section(const fs::path& source, const fs::path& dir, std::size_t bytes) {
  std::string content = read_file(source);
  Elf64_Ehdr eh;
  std::memcpy(&eh, content.data(), sizeof eh);
  std::string headers = content.substr(eh.e_shoff, std::size_t{eh.e_shnum} * sizeof(Elf64_Shdr));
  content.resize((content.size() + 7) / 8 * 8);
  Elf64_Shdr big{};
  big.sh_type = SHT_PROGBITS;
  big.sh_offset = content.size();
  big.sh_size = bytes;
  big.sh_addralign = 1;
  content.append(bytes, '\x5a');
  content.resize((content.size() + 7) / 8 * 8);
  eh.e_shoff = content.size();
  eh.e_shnum = static_cast<Elf64_Half>(eh.e_shnum + 1);
  headers.append(reinterpret_cast<const char*>(&big), sizeof big);
  content += headers;
  std::memcpy(content.data(), &eh, sizeof eh);
  const fs::path copy = dir / ("large_" + source.filename().string());
  write_file(copy, content);
  return copy;
}

TEST(Discovery, FindsCAndCxxPluginsWithTheirMetadata) {
  TempDir dir;
  fs::path c = copy_plugin(fixture_plugin("good_c"), dir.path());
  fs::path cxx = copy_plugin(fixture_plugin("good_cxx"), dir.path());
  DiscoveryResult r = discover_plugins({dir.path()});
  EXPECT_THAT(r.rejected, IsEmpty());
  ASSERT_EQ(r.plugins.size(), 2u);
  const DiscoveredPlugin* found = r.find("good_c");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->file, c);
  EXPECT_EQ(found->metadata, *read_plugin_note(c).metadata);
  ASSERT_NE(r.find("good_cxx"), nullptr);
  EXPECT_EQ(r.find("good_cxx")->file, cxx);
  EXPECT_EQ(r.find("good_cxx")->metadata.params.size(), 3u);
  EXPECT_EQ(r.find("nope"), nullptr);
}

TEST(Discovery, OrdersByFolderThenFileName) {
  TempDir first, second;
  copy_plugin(fixture_plugin("good_cxx"), first.path(), "b.so");
  copy_plugin(fixture_plugin("good_c"), first.path(), "a.so");
  copy_plugin(fixture_plugin("no_entry"), second.path(), "0.so");
  DiscoveryResult r = discover_plugins({first.path(), second.path()});
  EXPECT_EQ(ids(r), (std::vector<std::string>{"good_c", "good_cxx", "no_entry"}));
}

TEST(Discovery, ReportsMissingFolder) {
  TempDir dir;
  copy_plugin(fixture_plugin("good_c"), dir.path());
  fs::path missing = dir / "no-such-folder";
  DiscoveryResult r = discover_plugins({missing, dir.path()});
  EXPECT_EQ(reason_for(r, missing), "plugin folder does not exist");
  EXPECT_EQ(ids(r), std::vector<std::string>{"good_c"});  // the other folders still count
}

TEST(Discovery, IsNotRecursive) {
  TempDir dir;
  fs::create_directory(dir / "sub");
  copy_plugin(fixture_plugin("good_c"), dir / "sub");
  DiscoveryResult r = discover_plugins({dir.path()});
  EXPECT_THAT(r.plugins, IsEmpty());
  EXPECT_THAT(r.rejected, IsEmpty());
}

TEST(Discovery, ReportsEveryBrokenFileWithItsReason) {
  TempDir dir;
  copy_plugin(fixture_plugin("good_c"), dir.path());
  write_file(dir / "notes.so", "plain text\n");
  fs::path truncated = truncated_copy(fixture_plugin("good_cxx"), dir.path(), "cut.so", 3072);
  fs::path arm = copy_plugin(fixture_plugin("good_cxx"), dir.path(), "arm.so");
#if defined(__aarch64__)
  patch_file<uint16_t>(arm, kMachineOffset, EM_X86_64);
#else
  patch_file<uint16_t>(arm, kMachineOffset, EM_AARCH64);
#endif
  fs::path no_note = copy_plugin(fixture_plugin("no_note"), dir.path());

  DiscoveryResult r = discover_plugins({dir.path()});
  EXPECT_EQ(ids(r), std::vector<std::string>{"good_c"});
  ASSERT_EQ(r.rejected.size(), 4u);
  EXPECT_THAT(reason_for(r, dir / "notes.so"), HasSubstr("not an ELF file"));
  EXPECT_THAT(reason_for(r, truncated), HasSubstr("truncated: segment"));
  EXPECT_THAT(reason_for(r, truncated), HasSubstr("was the copy interrupted?"));
  EXPECT_THAT(reason_for(r, arm), HasSubstr("wrong machine"));
  EXPECT_THAT(reason_for(r, no_note), HasSubstr("no hookhost metadata note"));
}

TEST(Discovery, RejectsAbiMajorMismatch) {
  TempDir dir;
  fs::path file = copy_plugin(fixture_plugin("abi_major2"), dir.path());
  DiscoveryResult r = discover_plugins({dir.path()});
  EXPECT_THAT(r.plugins, IsEmpty());
  EXPECT_THAT(reason_for(r, file),
              HasSubstr("built for hookhost ABI 2.0; this host supports ABI " + host_abi() +
                        " (major versions must match) — rebuild the plugin against this "
                        "hookhost"));
}

TEST(Discovery, RejectsNewerAbiMinor) {
  TempDir dir;
  fs::path file = copy_plugin(fixture_plugin("abi_minor_newer"), dir.path());
  DiscoveryResult r = discover_plugins({dir.path()});
  EXPECT_THAT(r.plugins, IsEmpty());
  std::string plugin_abi = std::to_string(HH_ABI_MAJOR) + "." + std::to_string(HH_ABI_MINOR + 1);
  EXPECT_THAT(reason_for(r, file), HasSubstr("built for hookhost ABI " + plugin_abi));
  EXPECT_THAT(reason_for(r, file), HasSubstr("this host supports " + host_abi()));
  EXPECT_THAT(reason_for(r, file), HasSubstr("upgrade the host"));
}

TEST(Discovery, RejectsDuplicateIdNamingBothFiles) {
  TempDir dir;
  fs::path first = copy_plugin(fixture_plugin("good_c"), dir.path(), "a_first.so");
  fs::path second = copy_plugin(fixture_plugin("good_c"), dir.path(), "b_second.so");
  DiscoveryResult r = discover_plugins({dir.path()});
  ASSERT_EQ(r.plugins.size(), 1u);
  EXPECT_EQ(r.plugins[0].file, first);
  std::string reason = reason_for(r, second);
  EXPECT_THAT(reason,
              HasSubstr("duplicate plugin id 'good_c': already provided by " + first.string()));
  EXPECT_THAT(reason, HasSubstr(second.string()));
}

TEST(Discovery, DuplicateIdAcrossFoldersFirstFolderWins) {
  TempDir a, b;
  fs::path in_b = copy_plugin(fixture_plugin("good_cxx"), b.path(), "aaa.so");
  fs::path in_a = copy_plugin(fixture_plugin("good_cxx"), a.path(), "zzz.so");
  DiscoveryResult r = discover_plugins({a.path(), b.path()});
  ASSERT_EQ(r.plugins.size(), 1u);
  EXPECT_EQ(r.plugins[0].file, in_a);
  EXPECT_THAT(reason_for(r, in_b), HasSubstr("already provided by " + in_a.string()));
}

TEST(Discovery, SameFileTwiceIsNotADuplicate) {
  TempDir dir;
  copy_plugin(fixture_plugin("good_c"), dir.path());
  fs::create_symlink(dir / "good_c.so", dir / "link_to_good_c.so");
  DiscoveryResult r = discover_plugins({dir.path(), dir.path()});
  EXPECT_EQ(ids(r), std::vector<std::string>{"good_c"});
  EXPECT_THAT(r.rejected, IsEmpty());
}

TEST(Discovery, FollowsSymlinkToPluginElsewhere) {
  TempDir store, dir;
  fs::path real = copy_plugin(fixture_plugin("good_c"), store.path());
  fs::create_symlink(real, dir / "linked.so");
  DiscoveryResult r = discover_plugins({dir.path()});
  ASSERT_EQ(ids(r), std::vector<std::string>{"good_c"});
  EXPECT_EQ(r.plugins[0].file, dir / "linked.so");
}

TEST(Discovery, ReportsBrokenSymlink) {
  TempDir dir;
  fs::create_symlink(dir / "gone.so", dir / "dangling.so");
  DiscoveryResult r = discover_plugins({dir.path()});
  EXPECT_THAT(reason_for(r, dir / "dangling.so"), HasSubstr("broken symbolic link"));
}

// ---- entries that are not plugin files: each reported, none opened --------------------------

TEST(Discovery, ReportsFifoWithoutOpeningIt) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "pipe.so").c_str(), 0644), 0);
  DiscoveryResult r = discover_plugins({dir.path()});  // opening the FIFO would block forever
  EXPECT_THAT(reason_for(r, dir / "pipe.so"), HasSubstr("a FIFO (named pipe)"));
  EXPECT_THAT(r.plugins, IsEmpty());
}

TEST(Discovery, ReportsSocket) {
  TempDir dir;
  const fs::path path = dir / "sock.so";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.string().size(), sizeof addr.sun_path);
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  DiscoveryResult r = discover_plugins({dir.path()});
  ::close(fd);
  EXPECT_THAT(reason_for(r, path), HasSubstr("a socket"));
}

TEST(Discovery, ReportsSymlinkLoop) {
  TempDir dir;
  fs::create_symlink(dir / "b.so", dir / "a.so");
  fs::create_symlink(dir / "a.so", dir / "b.so");
  fs::create_symlink(dir / "self.so", dir / "self.so");
  DiscoveryResult r = discover_plugins({dir.path()});
  for (const char* name : {"a.so", "b.so", "self.so"})
    EXPECT_THAT(reason_for(r, dir / name), HasSubstr("symbolic link loop")) << name;
}

TEST(Discovery, ReportsDeviceFile) {
  TempDir dir;
  fs::create_symlink("/dev/null", dir / "null.so");  // making a device node needs root
  DiscoveryResult r = discover_plugins({dir.path()});
  EXPECT_THAT(reason_for(r, dir / "null.so"), HasSubstr("a device file"));
}

TEST(Discovery, ReportsFolderNamedLikeAPlugin) {
  TempDir dir;
  fs::create_directory(dir / "x.so");
  fs::create_directory(dir / "libfoo.so.1");
  fs::create_directory(dir / "ordinary");
  DiscoveryResult r = discover_plugins({dir.path()});
  EXPECT_THAT(reason_for(r, dir / "x.so"), HasSubstr("a folder, not a plugin file"));
  EXPECT_THAT(reason_for(r, dir / "libfoo.so.1"), HasSubstr("a folder, not a plugin file"));
  EXPECT_EQ(reason_for(r, dir / "ordinary"), "");  // not searched, not a mistake
  EXPECT_EQ(r.rejected.size(), 2u);
}

TEST(Discovery, DuplicateAcrossFoldersNamesBothFilesAndWhy) {
  TempDir a, b;
  fs::path chosen = copy_plugin(fixture_plugin("good_c"), a.path(), "good_c.so");
  fs::path backup = copy_plugin(fixture_plugin("good_c"), b.path(), "aaa_backup.so");
  DiscoveryResult r = discover_plugins({a.path(), b.path()});
  ASSERT_EQ(r.duplicates.size(), 1u);
  EXPECT_EQ(r.duplicates[0].id, "good_c");
  EXPECT_EQ(r.duplicates[0].chosen, chosen);
  EXPECT_EQ(r.duplicates[0].ignored, backup);
  EXPECT_THAT(r.duplicates[0].why, HasSubstr("its folder comes first in the search path"));
  EXPECT_THAT(reason_for(r, backup), HasSubstr("which is used because its folder comes first"));
}

TEST(Discovery, DuplicateInOneFolderSaysTheFirstFileNameWins) {
  TempDir dir;
  copy_plugin(fixture_plugin("good_c"), dir.path(), "a.so");
  copy_plugin(fixture_plugin("good_c"), dir.path(), "b.so");
  DiscoveryResult r = discover_plugins({dir.path()});
  ASSERT_EQ(r.duplicates.size(), 1u);
  EXPECT_EQ(r.duplicates[0].chosen, dir / "a.so");
  EXPECT_THAT(r.duplicates[0].why, HasSubstr("first file name in sort order wins"));
}

TEST(Discovery, MissingFoldersAreListed) {
  TempDir dir;
  write_file(dir / "file", "x");
  DiscoveryResult r = discover_plugins({dir / "nope", dir / "file", dir.path()});
  EXPECT_EQ(r.missing_folders, (std::vector<fs::path>{dir / "nope", dir / "file"}));
}

TEST(DisplayText, EscapesControlCharactersAndCapsLength) {
  EXPECT_EQ(display_text("plain ünïcode"), "plain ünïcode");
  EXPECT_EQ(display_text("a\nb\rc\td\x1b[2J\x01\x7f"), "a\\nb\\rc\\td\\e[2J\\x01\\x7f");
  EXPECT_EQ(display_text(std::string(300, 'x'), 10), "xxxxxxxxxx...(290 more bytes)");
  EXPECT_EQ(display_text("ab\xC3\xA9z", 3), "ab...(3 more bytes)");  // no half character
}

TEST(Discovery, FindsStrippedPlugin) {
  if (std::system("command -v strip >/dev/null 2>&1") != 0) GTEST_SKIP() << "strip not installed";
  TempDir dir;
  fs::path copy = copy_plugin(fixture_plugin("good_cxx"), dir.path());
  ASSERT_EQ(std::system(("strip --strip-all '" + copy.string() + "'").c_str()), 0);
  DiscoveryResult r = discover_plugins({dir.path()});
  EXPECT_THAT(r.rejected, IsEmpty());
  ASSERT_NE(r.find("good_cxx"), nullptr);
  EXPECT_EQ(r.find("good_cxx")->metadata, *read_plugin_note(fixture_plugin("good_cxx")).metadata);
}

TEST(Discovery, DoesNotLoadPluginsThatWouldFailToLoad) {
  TempDir dir;
  copy_plugin(fixture_plugin("missing_symbol"), dir.path());
  copy_plugin(fixture_plugin("no_entry"), dir.path());
  copy_plugin(fixture_plugin("note_entry_mismatch"), dir.path());
  DiscoveryResult r = discover_plugins({dir.path()});
  EXPECT_THAT(r.rejected, IsEmpty());
  EXPECT_EQ(ids(r), (std::vector<std::string>{"missing_symbol", "no_entry", "note_side"}));
}

// ---- what discovery reads ---------------------------------------------------------------------

TEST(Discovery, ListingReadsTheHeadersAndTheNoteNotTheWholeFile) {
  constexpr std::size_t kSection = std::size_t{8} << 20;
  TempDir dir;
  const fs::path file = with_large_section(fixture_plugin("faulty"), dir.path(), kSection);
  ASSERT_GT(fs::file_size(file), kSection);

  const std::optional<std::uint64_t> before = bytes_read_by_this_thread();
  if (!before) GTEST_SKIP() << "this kernel keeps no read counts (/proc/thread-self/io)";
  const DiscoveryResult listed = discover_plugins({dir.path()});
  const std::uint64_t listing_read = *bytes_read_by_this_thread() - *before;

  EXPECT_THAT(listed.rejected, IsEmpty());
  ASSERT_NE(listed.find("faulty"), nullptr);
  EXPECT_EQ(listed.find("faulty")->metadata, *read_plugin_note(fixture_plugin("faulty")).metadata);
  EXPECT_FALSE(listed.find("faulty")->process_wide_calls) << "listing read the imports";
  // The headers and the note are a few KiB at most; reading the file would be 8 MiB.
  EXPECT_LT(listing_read, 64u << 10);

  // Asked for, the imports come from the same open file, and its big section is still not read.
  const std::uint64_t before_describe = *bytes_read_by_this_thread();
  const DiscoveryResult described = discover_plugins({dir.path()}, {.imports_of = {"faulty"}});
  const std::uint64_t describe_read = *bytes_read_by_this_thread() - before_describe;
  ASSERT_NE(described.find("faulty"), nullptr);
  ASSERT_TRUE(described.find("faulty")->process_wide_calls);
  EXPECT_EQ(*described.find("faulty")->process_wide_calls,
            (std::vector<std::string>{"_exit", "exit", "sigaction", "signal"}));
  EXPECT_LT(describe_read, 64u << 10);
}

TEST(Discovery, RunsNoPluginCodeButLoadingDoes) {
  TempDir dir;
  fs::path marker = dir / "constructor-ran";
  ASSERT_EQ(::setenv("HOOKHOST_TEST_MARKER", marker.c_str(), 1), 0);
  fs::create_directory(dir / "plugins");
  copy_plugin(fixture_plugin("static_init_marker"), dir / "plugins");

  DiscoveryResult r = discover_plugins({dir / "plugins"});
  const DiscoveredPlugin* plugin = r.find("static_init_marker");
  ASSERT_NE(plugin, nullptr);
  EXPECT_FALSE(fs::exists(marker)) << "discovery ran the plugin's constructor";

  std::shared_ptr<const LoadedPlugin> loaded = load_plugin(*plugin);
  EXPECT_EQ(loaded->metadata().id, "static_init_marker");
  EXPECT_TRUE(fs::exists(marker)) << "loading did not run the plugin's constructor";
  ::unsetenv("HOOKHOST_TEST_MARKER");
}

// Only *.so and *.so.N... are plugin files: a renamed old copy with the same id ("x.so.bak",
// "backup_x") is never read, let alone loaded in place of the real one, and a build folder's other
// files are only counted.
TEST(Discovery, ConsidersOnlyFilesNamedLikeAPlugin) {
  TempDir dir;
  // Both copies sort before "good_c.so": before the name rule, the backup was the one used.
  copy_plugin(fixture_plugin("good_c"), dir.path(), "backup_good_c");
  copy_plugin(fixture_plugin("good_c"), dir.path(), "good_c.so.bak");
  copy_plugin(fixture_plugin("good_c"), dir.path(), "good_c.so");
  copy_plugin(fixture_plugin("good_cxx"), dir.path(), "libgood_cxx.so.1.2");
  copy_plugin(fixture_plugin("no_note"), dir.path(), "no_note.so.1x");
  copy_plugin(fixture_plugin("no_note"), dir.path(), ".so");
  write_file(dir / "CMakeCache.txt", "CMAKE_BUILD_TYPE:STRING=Release\n");
  write_file(dir / "Makefile", "all:\n");
  DiscoveryResult r = discover_plugins({dir.path()});
  EXPECT_EQ(ids(r), (std::vector<std::string>{"good_c", "good_cxx"}));
  ASSERT_EQ(r.plugins.size(), 2u);
  EXPECT_EQ(r.plugins[0].file, dir / "good_c.so");
  EXPECT_EQ(r.plugins[1].file, dir / "libgood_cxx.so.1.2");
  EXPECT_THAT(r.rejected, IsEmpty());
  EXPECT_THAT(r.duplicates, IsEmpty());
  EXPECT_EQ(r.ignored_files, 6u);
}

TEST(Discovery, PluginsListSaysOtherFilesWereIgnoredInOneLine) {
  TempDir dir;
  const fs::path folder = dir / "build";  // the program's own files stay outside it
  fs::create_directory(folder);
  copy_plugin(fixture_plugin("good_c"), folder);
  for (const char* name : {"CMakeCache.txt", "Makefile", "build.ninja", "hookhost_tests"})
    write_file(folder / name, "x\n");
  ProcessResult r = run_hookhost({"plugins", "list", "--plugin-dir", folder.string()}, dir.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("good_c"));
  EXPECT_THAT(r.out, HasSubstr("4 other file(s) ignored: a plugin file is named *.so or *.so.N"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("Rejected files")));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("CMakeCache.txt")));
}

// A parameter named like a host-owned [hook.NAME] key could never be set: the host would take
// the value. The plugin is refused with the parameter named and the fix.
TEST(Discovery, RefusesAParameterNamedLikeAHostOwnedHookKey) {
  TempDir dir;
  fs::path file = copy_plugin(fixture_plugin("host_key_param"), dir.path());
  copy_plugin(fixture_plugin("good_c"), dir.path());
  DiscoveryResult r = discover_plugins({dir.path()});
  EXPECT_EQ(ids(r), std::vector<std::string>{"good_c"});
  const std::string reason = reason_for(r, file);
  EXPECT_THAT(reason, HasSubstr("parameter 'ranks' of plugin 'host_key_param'"));
  EXPECT_THAT(reason, HasSubstr("a key the host takes in every [hook.NAME] section"));
  EXPECT_THAT(reason, HasSubstr("must rename the parameter"));
  for (std::string_view key : kHostHookKeys) EXPECT_THAT(reason, HasSubstr(std::string(key)));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost
