// A plugin runs from a private memfd copy of its file. The name the dynamic linker keeps for it is
// what a debugger opens, from its own process, to read the plugin's symbols: it must name the
// copy through this process's pid, not /proc/self (which, read by gdb, is one of gdb's own files:
// gdb then reads the wrong bytes, or blocks on a pipe).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "hookhost/host/discovery.hpp"
#include "hookhost/host/loader.hpp"
#include "test_support.hpp"

namespace hookhost {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::StartsWith;
using namespace hookhost::testing;

std::vector<std::string> loaded_object_names() {
  std::vector<std::string> names;
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_name && *info->dlpi_name)
          static_cast<std::vector<std::string>*>(out)->push_back(info->dlpi_name);
        return 0;
      },
      &names);
  return names;
}

TEST(PluginDebuggerName, TheLoadedCopyIsNamedThroughThisProcesssPid) {
  TempDir dir;
  copy_plugin(fixture_plugin("good_c"), dir.path());
  DiscoveryResult found = discover_plugins({dir.path()});
  ASSERT_EQ(found.plugins.size(), 1u);
  const std::vector<std::string> before = loaded_object_names();
  std::shared_ptr<const LoadedPlugin> plugin = load_plugin(found.plugins[0]);
  ASSERT_NE(plugin, nullptr);
  std::vector<std::string> added;
  for (const std::string& name : loaded_object_names())
    if (std::find(before.begin(), before.end(), name) == before.end()) added.push_back(name);
  ASSERT_EQ(added.size(), 1u) << ::testing::PrintToString(added);
  EXPECT_THAT(added[0], StartsWith("/proc/" + std::to_string(::getpid()) + "/fd/"));
  // Read by that name, as a debugger in another process reads it: the plugin's bytes.
  EXPECT_EQ(read_file(fs::path(added[0])), read_file(found.plugins[0].file));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost
