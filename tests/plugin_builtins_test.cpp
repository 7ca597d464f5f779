// Every built-in plugin, as discovery reads it: none declares a parameter named like a key the host
// takes from a [hook.NAME] section itself, which the host would intercept before the plugin saw it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "hookhost/host/discovery.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

// The host's own keys in a [hook.NAME] section (docs/abi.md, section 8).
const std::set<std::string> kHostOwnedKeys = {"plugin",          "enabled",   "order",
                                              "on_error",        "isolation", "call_timeout_ms",
                                              "memory_limit_mb", "on_crash",  "max_restarts",
                                              "isolation_group", "ranks",     "sha256"};

TEST(BuiltinPlugins, NoneDeclaresAParameterNamedLikeAHostOwnedKey) {
  DiscoveryResult found = discover_plugins({fs::path(HOOKHOST_BUILTIN_DIR)});
  ASSERT_GE(found.plugins.size(), 13u);
  for (const DiscoveredPlugin& plugin : found.plugins)
    for (const auto& param : plugin.metadata.params)
      EXPECT_EQ(kHostOwnedKeys.count(param.name), 0u)
          << "plugin '" << plugin.metadata.id << "' declares parameter '" << param.name
          << "', a key the host takes from [hook.NAME] itself: rename the parameter";
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
