// The [hook.NAME] keys every_n_steps, at_steps and first_n (HookSettings::step_filter): the
// host's, unless the hook's plugin declares a parameter of that name, which then keeps it (the
// built-ins that take every_n_steps apply it themselves, with the same meaning).
#pragma once

#include <map>
#include <string>

#include "hookhost/host/config.hpp"
#include "hookhost/host/plugin_metadata.hpp"
#include "hookhost/host/runtime.hpp"

namespace hookhost {

struct SplitHookKeys {
  StepFilter filter;
  std::multimap<std::string, std::string> plugin_params;  // the rest, for the plugin
};

// Takes the filter keys the plugin does not declare out of `hook.params`. Throws ConfigError
// naming the file, line and key for a bad value.
SplitHookKeys split_step_filter(const JobConfig& cfg, const HookConfig& hook,
                                const PluginMetadata& plugin);

}  // namespace hookhost
