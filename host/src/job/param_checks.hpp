// Checking a hook's or the workload's parameter texts against its schema, with errors that name
// the configuration line they came from. check_param_texts() and key_named_in() are public
// (hookhost/host/job.hpp): the testing harness reports a hook's parameters the same way.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "hookhost/host/config.hpp"
#include "hookhost/host/params.hpp"
#include "hookhost/host/plugin_metadata.hpp"

namespace hookhost {

// Rewrites a ConfigError from a lower layer so it starts with the file, line, section and key.
[[noreturn]] void rethrow_at(const ConfigError& e, const std::string& where);

// Checks a hook's or the workload's parameters against `schema`; errors start with `where(key)`.
ResolvedParams resolve_checked(const PluginMetadata& schema, const std::string& instance,
                               const std::multimap<std::string, std::string>& raw,
                               const std::function<std::string(const std::string&)>& where);

}  // namespace hookhost
