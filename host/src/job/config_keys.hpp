// The keys of [run] and [hook.NAME]: one table row per key, each with the function that checks
// its value and stores it. load_job_config() walks entries through this table; a [hook.NAME] key
// not in it is the plugin's parameter, a [run] key not in it is an error.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "hookhost/host/config.hpp"
#include "job/ini_reader.hpp"

namespace hookhost {

// One key's value being read, with everything its reader may need.
struct KeyReading {
  const ConfigEntry& entry;
  const std::string& at;  // "file:line: [section] key: ", the start of every message about it
  const std::optional<std::filesystem::path>& file;  // the config file, for relative paths
  JobConfig& config;
  HookConfig* hook;  // the [hook.NAME] section read; null in [run]
  // Whether a --set has replaced the file's plugin_dir list yet (--set ones add to each other).
  bool& plugin_dir_overridden;
};

// The sections a key belongs to (a bit set).
enum KeySections : unsigned { kRunSection = 1, kHookSection = 2 };

// Whose a [hook.NAME] key is.
enum class KeyOwner {
  host,  // always the host's: a plugin that declares a parameter of its name is refused
  // The host's unless the hook's plugin declares a parameter of its name, which then keeps it (the
  // step filters and the observer keys). Read with the plugin's parameters; split_step_filter()
  // and split_observer_keys() take it out.
  host_unless_declared,
};

struct ConfigKey {
  unsigned sections;  // KeySections
  std::string_view name;
  // Checks the value and stores it; throws ConfigError starting with `at` and naming the key.
  void (*read)(const KeyReading& reading);
  // What the key does and its default, one line (`hookhost plugins describe` lists the [hook.NAME]
  // keys with it); for a key of both sections, as a [hook.NAME] key.
  std::string_view help;
  bool may_repeat = false;  // given more than once, each adds to the list
  KeyOwner owner = KeyOwner::host;
};

// Every key, in the order messages list the [run] keys and `plugins describe` the [hook.NAME] ones.
std::span<const ConfigKey> config_keys();

// The key `name` of `section` ("run" or "hook.NAME"), or null.
const ConfigKey* find_config_key(std::string_view section, std::string_view name);

// Whether a key may be given more than once ([run] plugin_dir).
bool key_may_repeat(std::string_view section, std::string_view name);

// A path value: a relative one from a config file is taken from the file's folder, so a job file
// works from any current folder (cron); one from the command line, from the current folder.
std::filesystem::path config_path(const ConfigEntry& e,
                                  const std::optional<std::filesystem::path>& file);

// "plugin_dir, run_dir, ...": the keys of one section, for a message.
std::string config_key_list(KeySections section);

}  // namespace hookhost
