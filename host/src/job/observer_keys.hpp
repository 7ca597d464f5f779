// The [hook.NAME] keys that make an instance an observer (HookSettings::observer): mode, queue and
// policy. The host's, unless the hook's plugin declares a parameter of that name, which then keeps
// it (progress_bar and early_stopping have a `mode` of their own).
#pragma once

#include <map>
#include <string>

#include "hookhost/host/config.hpp"
#include "hookhost/host/plugin_metadata.hpp"
#include "hookhost/host/runtime.hpp"

namespace hookhost {

// Takes the observer keys the plugin does not declare out of `params` (the hook's keys for its
// plugin). An instance is an observer when its section says mode = observe, or says no mode and
// its plugin declares itself one (the note's mode=observe), unless then its on_error or on_crash
// is fail (such a hook stays on the step). Throws ConfigError naming the file, line and key for a
// bad value, for queue or policy on a hook that is no observer, and for mode = observe with an
// on_error or on_crash that would fail the job.
ObserverSettings split_observer_keys(const JobConfig& cfg, const HookConfig& hook,
                                     const PluginMetadata& plugin, CrashPolicy on_crash,
                                     std::multimap<std::string, std::string>& params);

}  // namespace hookhost
