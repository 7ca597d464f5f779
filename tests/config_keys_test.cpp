// The key table the config reader walks: every [run] and [hook.NAME] key it knows is documented
// in docs/configuration.md, the [hook.NAME] ones in docs/sdk-reference.md too, and a [run] key it
// does not know is refused with the table's list.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <string_view>

#include "hookhost/host/runtime.hpp"
#include "job/config_keys.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::HasSubstr;

TEST(ConfigKeys, EveryKeyIsInTheConfigurationReference) {
  const std::string reference =
      read_file(std::filesystem::path(HOOKHOST_SOURCE_DIR) / "docs" / "configuration.md");
  ASSERT_FALSE(reference.empty());
  for (const ConfigKey& key : config_keys())
    EXPECT_THAT(reference, HasSubstr("`" + std::string(key.name) + "`")) << key.name;
}

TEST(ConfigKeys, OnlyPluginDirMayRepeat) {
  for (const ConfigKey& key : config_keys())
    EXPECT_EQ(key.may_repeat, key.name == "plugin_dir") << key.name;
  EXPECT_TRUE(key_may_repeat("run", "plugin_dir"));
  EXPECT_FALSE(key_may_repeat("hook.a", "plugin_dir"));
}

TEST(ConfigKeys, SectionsFindTheirOwnKeys) {
  EXPECT_NE(find_config_key("run", "untrusted"), nullptr);
  EXPECT_EQ(find_config_key("hook.a", "untrusted"), nullptr);  // a plugin parameter there
  EXPECT_NE(find_config_key("hook.a", "sha256"), nullptr);
  EXPECT_EQ(find_config_key("run", "sha256"), nullptr);
  EXPECT_NE(find_config_key("hook.a", "log_level"), nullptr);
  EXPECT_NE(find_config_key("run", "log_level"), nullptr);
  EXPECT_EQ(find_config_key("workload", "name"), nullptr);  // the workload's keys are its own
}

TEST(ConfigKeys, ConfineIsSandboxedUnlessSetOff) {
  EXPECT_FALSE(load_job_config(std::nullopt, {}).isolation.confine.has_value());
  EXPECT_EQ(load_job_config(std::nullopt, {"run.confine=off"}).isolation.confine, Confinement::off);
  EXPECT_EQ(load_job_config(std::nullopt, {"run.confine=sandboxed"}).isolation.confine,
            Confinement::sandboxed);
  EXPECT_EQ(load_job_config(std::nullopt, {"run.confine=all-untrusted"}).isolation.confine,
            Confinement::all_untrusted);
  EXPECT_EQ(load_job_config(std::nullopt, {"run.confine=required"}).isolation.confine,
            Confinement::required);
}

// On by default: every requested checkpoint is written, as TensorFlow's CheckpointSaverHook does.
TEST(ConfigKeys, CheckpointWaitIsABooleanOnByDefault) {
  EXPECT_TRUE(load_job_config(std::nullopt, {}).checkpoint_wait);
  EXPECT_TRUE(RuntimeOptions{}.checkpoint_wait);
  EXPECT_FALSE(load_job_config(std::nullopt, {"run.checkpoint_wait=false"}).checkpoint_wait);
  try {
    load_job_config(std::nullopt, {"run.checkpoint_wait=always"});
    ADD_FAILURE() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("checkpoint_wait: expected true or false; got "
                                               "'always'"));
  }
}

TEST(ConfigKeys, AnUnknownRunKeyListsTheRunKeys) {
  EXPECT_EQ(
      config_key_list(kRunSection),
      "plugin_dir, run_dir, log_level, on_error, max_state_mb, checkpoint_dir, "
      "keep_checkpoints, checkpoint_wait, time_every_n_steps, allow_insecure_plugins, "
      "allowed_plugins, "
      "isolation, isolation_group, call_timeout_ms, memory_limit_mb, on_crash, "
      "max_restarts, untrusted, confine, allow_read, allow_write, allow_network, "
      "allow_processes, grant, limit_cpu_secs, limit_file_mb, limit_open_files, limit_processes, "
      "distributed, collective_timeout_ms");
  try {
    load_job_config(std::nullopt, {"run.colour=blue"});
    FAIL() << "an unknown [run] key was accepted";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("--set run.colour=blue: [run] colour: unknown key (the [run] "
                                    "keys are " +
                                    config_key_list(kRunSection) + ")"));
  }
}

// The keys a reference page lists for [hook.NAME]: the `quoted` names in the key column of the
// table rows from the one whose section column is `[hook.NAME]` to the next row naming another
// section (or the end of the table).
std::set<std::string> hook_keys_listed(const std::string& page) {
  std::set<std::string> keys;
  bool in_hook_rows = false;
  for (const std::string& line : lines_of(page)) {
    if (line.empty() || line[0] != '|') {
      in_hook_rows = false;
      continue;
    }
    std::vector<std::string> cells;
    for (std::size_t start = 1, bar; (bar = line.find('|', start)) != std::string::npos;
         start = bar + 1)
      cells.push_back(line.substr(start, bar - start));
    if (cells.size() < 2) continue;
    const std::string section = trim_blanks(cells[0]);
    if (!section.empty()) in_hook_rows = section == "`[hook.NAME]`";
    if (!in_hook_rows) continue;
    const std::string& key_cell = cells[1];
    for (std::size_t open = key_cell.find('`'); open != std::string::npos;) {
      const std::size_t close = key_cell.find('`', open + 1);
      if (close == std::string::npos) break;
      keys.insert(key_cell.substr(open + 1, close - open - 1));
      open = key_cell.find('`', close + 1);
    }
  }
  return keys;
}

std::set<std::string> table_hook_keys() {
  std::set<std::string> keys;
  for (const ConfigKey& key : config_keys())
    if (key.sections & kHookSection) keys.emplace(key.name);
  return keys;
}

TEST(HostHookKeys, TheReferencePagesListExactlyTheTablesHookKeys) {
  const std::set<std::string> in_table = table_hook_keys();
  for (const char* page : {"configuration.md", "sdk-reference.md"}) {
    const std::string text = read_file(std::filesystem::path(HOOKHOST_SOURCE_DIR) / "docs" / page);
    const std::set<std::string> listed = hook_keys_listed(text);
    ASSERT_FALSE(listed.empty()) << "docs/" << page << " has no `[hook.NAME]` rows in a key table";
    for (const std::string& key : in_table)
      EXPECT_TRUE(listed.count(key))
          << "docs/" << page << " does not list the [hook.NAME] key '" << key
          << "' of the config key table (host/src/job/config_keys.cpp)";
    for (const std::string& key : listed)
      EXPECT_TRUE(in_table.count(key))
          << "docs/" << page << " lists a [hook.NAME] key '" << key
          << "' that the config key table (host/src/job/config_keys.cpp) does not have";
  }
}

TEST(HostHookKeys, EveryKeyHasOneLineOfHelpWithItsDefault) {
  for (const ConfigKey& key : config_keys()) {
    EXPECT_FALSE(key.help.empty()) << key.name;
    EXPECT_EQ(key.help.find('\n'), std::string_view::npos) << key.name;
    EXPECT_NE(key.help.find("default"), std::string_view::npos) << key.name;
  }
}

// kHostHookKeys (what discovery refuses as a parameter name) is the table's keys that are always
// the host's; the others are the host's unless the plugin declares them.
TEST(HostHookKeys, APluginMayKeepOnlyTheStepFilterAndObserverKeys) {
  std::set<std::string> always, unless_declared;
  for (const ConfigKey& key : config_keys()) {
    if (!(key.sections & kHookSection)) continue;
    (key.owner == KeyOwner::host ? always : unless_declared).emplace(key.name);
  }
  EXPECT_EQ(always, std::set<std::string>(kHostHookKeys.begin(), kHostHookKeys.end()));
  EXPECT_EQ(unless_declared, (std::set<std::string>{"every_n_steps", "at_steps", "first_n", "mode",
                                                    "queue", "policy"}));
}

// A key a plugin may keep reaches the hook's parameters, where the job splits it off.
TEST(HostHookKeys, AKeyAPluginMayKeepIsReadWithTheParameters) {
  const JobConfig config =
      load_job_config(std::nullopt, {"hook.a.every_n_steps=5", "hook.a.mode=observe"});
  ASSERT_EQ(config.hooks.size(), 1u);
  EXPECT_EQ(config.hooks[0].params.count("every_n_steps"), 1u);
  EXPECT_EQ(config.hooks[0].params.count("mode"), 1u);
}

// The project templates `hookhost new` writes declare no parameter named as a [hook.NAME] key of
// the host, not even one a plugin may take over (every_n_steps, mode, ...): a new author would
// not know whether the host or the hook applies it.
TEST(ConfigKeys, TheProjectTemplatesDeclareNoHostKey) {
  const std::regex declared(R"(\bP\((\w+),)");
  int params = 0;
  for (const char* source :
       {"examples/plugin-template-cpp/src/my_hook.cpp", "examples/plugin-template-c/my_hook.c"}) {
    const std::string text = read_file(std::filesystem::path(HOOKHOST_SOURCE_DIR) / source);
    for (std::sregex_iterator it(text.begin(), text.end(), declared), end; it != end; ++it) {
      ++params;
      const std::string name = (*it)[1];
      for (const ConfigKey& key : config_keys()) {
        if (key.sections & kHookSection) {
          EXPECT_NE(name, key.name) << source << " declares the host's key " << name;
        }
      }
    }
  }
  EXPECT_GE(params, 4);  // the templates' parameters were found
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
