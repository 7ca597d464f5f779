// Loading discovered plugins with Boost.DLL: good plugins load once and stay loaded; broken ones
// are refused with a message that names the file, and the process survives.
#include "hookhost/host/loader.hpp"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "hookhost/host/discovery.hpp"
#include "plugin_files.hpp"
#include "test_support.hpp"

namespace hookhost {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace hookhost::testing;

// Discovers the fixture `name` from a fresh copy in `dir` (a fresh file is a fresh dlopen).
DiscoveredPlugin discover_copy(const std::string& name, const TempDir& dir) {
  copy_plugin(fixture_plugin(name), dir.path());
  DiscoveryResult r = discover_plugins({dir.path()});
  if (r.plugins.size() != 1) {
    ADD_FAILURE() << name << " was not discovered"
                  << (r.rejected.empty() ? "" : ": " + r.rejected[0].reason);
    return {};
  }
  return r.plugins[0];
}

// The LoadError message of loading `plugin`, or "" when it loaded.
std::string load_error(const DiscoveredPlugin& plugin) {
  try {
    load_plugin(plugin);
  } catch (const LoadError& e) {
    return e.what();
  }
  ADD_FAILURE() << plugin.file << " loaded";
  return {};
}

TEST(Loader, LoadsPureCPluginAndCallsIt) {
  TempDir dir;
  DiscoveredPlugin found = discover_copy("good_c", dir);
  std::shared_ptr<const LoadedPlugin> plugin = load_plugin(found);
  ASSERT_NE(plugin, nullptr);
  EXPECT_EQ(plugin->file(), found.file);
  EXPECT_EQ(plugin->metadata(), found.metadata);
  EXPECT_STREQ(plugin->entry().id, "good_c");
  EXPECT_EQ(plugin->entry().param_count, 6u);

  // The entry points into live plugin code.
  hh_create_args args{HH_CREATE_ARGS_SIZE, 0, "instance", nullptr, sizeof(hh_param_value)};
  hh_hook* hook = nullptr;
  hh_error err;
  hh_error_init(&err);
  ASSERT_EQ(plugin->entry().create(nullptr, &args, &hook, &err), HH_OK) << err.message;
  ASSERT_NE(hook, nullptr);
  if (hook->begin) {
    EXPECT_EQ(hook->begin(hook, &err), HH_OK);
  }
  hook->destroy(hook);
}

TEST(Loader, LoadsCxxSdkPlugin) {
  TempDir dir;
  DiscoveredPlugin found = discover_copy("good_cxx", dir);
  std::shared_ptr<const LoadedPlugin> plugin = load_plugin(found);
  EXPECT_EQ(plugin->metadata(), found.metadata);
  EXPECT_EQ(plugin->metadata(), metadata_from_entry(plugin->entry()));
}

TEST(Loader, LoadingTwiceReturnsTheSamePlugin) {
  TempDir dir;
  DiscoveredPlugin found = discover_copy("good_c", dir);
  std::shared_ptr<const LoadedPlugin> first = load_plugin(found);
  EXPECT_EQ(load_plugin(found), first);

  // Another path to the same file is the same library.
  fs::create_symlink(found.file, dir / "alias.so");
  DiscoveredPlugin via_link{dir / "alias.so", found.metadata};
  EXPECT_EQ(load_plugin(via_link), first);
}

TEST(Loader, ConcurrentLoadsReturnTheSamePlugin) {
  TempDir dir;
  DiscoveredPlugin found = discover_copy("good_cxx", dir);
  std::vector<std::shared_ptr<const LoadedPlugin>> results(4);
  std::vector<std::thread> threads;
  for (auto& result : results) threads.emplace_back([&] { result = load_plugin(found); });
  for (auto& t : threads) t.join();
  for (const auto& result : results) EXPECT_EQ(result, results[0]);
}

TEST(Loader, MissingSymbolFailsCleanlyAndProcessSurvives) {
  TempDir dir;
  DiscoveredPlugin found = discover_copy("missing_symbol", dir);
  std::string error = load_error(found);
  EXPECT_THAT(error, StartsWith(found.file.string() + ": "));
  EXPECT_THAT(error, HasSubstr("undefined symbol"));
  EXPECT_THAT(error, HasSubstr("hookhost_fixture_undefined_function"));

  // Still alive, and still able to load a good plugin.
  TempDir other;
  EXPECT_EQ(load_plugin(discover_copy("good_c", other))->metadata().id, "good_c");
}

TEST(Loader, RefusesNoteEntryIdMismatch) {
  TempDir dir;
  DiscoveredPlugin found = discover_copy("note_entry_mismatch", dir);
  std::string error = load_error(found);
  EXPECT_THAT(error, StartsWith(found.file.string() + ": "));
  EXPECT_THAT(error, HasSubstr("note says id 'note_side', entry says 'entry_side'"));
  EXPECT_THAT(error, HasSubstr("rebuild"));
  EXPECT_EQ(load_error(found), error);  // stays refused, with the same reason
}

TEST(Loader, RefusesNoteEntryParameterMismatch) {
  TempDir dir;
  DiscoveredPlugin found = discover_copy("param_mismatch", dir);
  EXPECT_THAT(load_error(found),
              HasSubstr("note says parameter 1 'limit' type int, entry says float"));
}

TEST(Loader, RefusesLibraryWithoutEntrySymbol) {
  TempDir dir;
  DiscoveredPlugin found = discover_copy("no_entry", dir);
  std::string error = load_error(found);
  EXPECT_THAT(error, StartsWith(found.file.string() + ": "));
  EXPECT_THAT(error, HasSubstr("has no symbol hookhost_plugin_v1"));
}

TEST(Loader, RefusesEntryWithNewerAbi) {
  TempDir dir;
  DiscoveredPlugin found = discover_copy("entry_abi_newer", dir);
  std::string error = load_error(found);
  EXPECT_THAT(error, StartsWith(found.file.string() + ": "));
  EXPECT_THAT(error, HasSubstr("built for hookhost ABI " + std::to_string(HH_ABI_MAJOR) + "." +
                               std::to_string(HH_ABI_MINOR + 1)));
}

TEST(Loader, RefusesEntryWithTooSmallStructSize) {
  TempDir dir;
  DiscoveredPlugin found = discover_copy("entry_too_small", dir);
  std::string error = load_error(found);
  EXPECT_THAT(error, StartsWith(found.file.string() + ": "));
  EXPECT_THAT(error, HasSubstr("hookhost_plugin_v1 is too small: struct_size 8"));
}

TEST(Loader, RefusesFileTruncatedAfterDiscovery) {
  TempDir dir;
  DiscoveredPlugin found = discover_copy("good_cxx", dir);
  fs::resize_file(found.file, 3072);
  std::string error = load_error(found);  // would be SIGBUS inside dlopen without the re-check
  EXPECT_THAT(error, StartsWith(found.file.string() + ": "));
  EXPECT_THAT(error, HasSubstr("truncated"));
}

TEST(Loader, RefusesFileReplacedAfterDiscovery) {
  TempDir dir;
  DiscoveredPlugin found = discover_copy("good_c", dir);
  copy_plugin(fixture_plugin("good_cxx"), dir.path(), found.file.filename().string());
  std::string error = load_error(found);
  EXPECT_THAT(error, StartsWith(found.file.string() + ": "));
  EXPECT_THAT(error, HasSubstr("changed since discovery"));
  EXPECT_THAT(error, HasSubstr("run plugin discovery again"));
}

TEST(Loader, RefusesVanishedFile) {
  TempDir dir;
  DiscoveredPlugin found = discover_copy("good_c", dir);
  fs::remove(found.file);
  std::string error = load_error(found);
  EXPECT_THAT(error, StartsWith(found.file.string() + ": "));
  EXPECT_THAT(error, HasSubstr("run plugin discovery again"));
}

// Every refusal closes the private copy it made: a job that retries never runs out of descriptors.
TEST(Loader, RefusalsLeaveNoDescriptorOpen) {
  TempDir dir;
  DiscoveredPlugin truncated = discover_copy("good_cxx", dir);
  fs::resize_file(truncated.file, 3072);  // its note can no longer be read
  TempDir other;
  DiscoveredPlugin replaced = discover_copy("good_c", other);
  copy_plugin(fixture_plugin("good_cxx"), other.path(), replaced.file.filename().string());
  const size_t before = open_descriptors();
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(load_error(truncated), HasSubstr("truncated"));
    EXPECT_THAT(load_error(replaced), HasSubstr("changed since discovery"));
    EXPECT_THROW(private_plugin_copy(truncated), LoadError);
    EXPECT_THROW(private_plugin_copy(replaced), LoadError);
  }
  EXPECT_EQ(open_descriptors(), before);
}

// What isolation = process hands its runner: the checked bytes, sealed, whatever the file becomes.
TEST(Loader, PrivateCopyIsTheCheckedBytesSealedAndOutlivesTheFile) {
  TempDir dir;
  DiscoveredPlugin found = discover_copy("good_c", dir);
  const std::string original = read_file(found.file);
  std::shared_ptr<const LoadedPlugin> copy = private_plugin_copy(found);
  ASSERT_GE(copy->private_copy_fd(), 0);
  EXPECT_EQ(copy->metadata(), found.metadata);
  EXPECT_EQ(copy->sha256().size(), 64u);
  fs::remove(found.file);
  const fs::path bytes = "/proc/self/fd/" + std::to_string(copy->private_copy_fd());
  EXPECT_EQ(read_file(bytes), original);
  // Sealed: not even this process can change them.
  const int seals = ::fcntl(copy->private_copy_fd(), F_GET_SEALS);
  EXPECT_EQ(seals & (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
            F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  EXPECT_EQ(::write(copy->private_copy_fd(), "x", 1), -1);
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost
