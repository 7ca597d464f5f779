// The key table the config reader walks: every [run] and [hook.NAME] key it knows is documented
// in docs/configuration.md, and a [run] key it does not know is refused with the table's list.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "job/config_keys.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {

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

TEST(ConfigKeys, CheckpointWaitIsABooleanOffByDefault) {
  EXPECT_FALSE(load_job_config(std::nullopt, {}).checkpoint_wait);
  EXPECT_TRUE(load_job_config(std::nullopt, {"run.checkpoint_wait=true"}).checkpoint_wait);
  try {
    load_job_config(std::nullopt, {"run.checkpoint_wait=always"});
    ADD_FAILURE() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("checkpoint_wait: expected true or false; got "
                                               "'always'"));
  }
}

TEST(ConfigKeys, AnUnknownRunKeyListsTheRunKeys) {
  EXPECT_EQ(config_key_list(kRunSection),
            "plugin_dir, run_dir, log_level, on_error, max_state_mb, checkpoint_dir, "
            "keep_checkpoints, checkpoint_wait, time_every_n_steps, allow_insecure_plugins, "
            "allowed_plugins, "
            "isolation, isolation_group, call_timeout_ms, memory_limit_mb, on_crash, "
            "max_restarts, untrusted, confine, allow_read, allow_write, allow_network, "
            "allow_processes, limit_cpu_secs, limit_file_mb, limit_open_files, limit_processes, "
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

}  // namespace
}  // namespace hookhost::testing
