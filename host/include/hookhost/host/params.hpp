// Validates a hook instance's configuration text against its plugin's parameter schema.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <hookhost/entry.h>

#include "plugin_metadata.hpp"

namespace hookhost {

// A configuration mistake: stops the job before it starts (exit status 2).
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& message, std::string key = {})
      : std::runtime_error(message), key_(std::move(key)) {}
  // The parameter concerned, when there is one (lets the config layer point at its line).
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

// Typed values for every declared parameter, in declaration order, owning their storage; hands
// out the hh_param_value array that create() receives.
class ResolvedParams {
 public:
  struct Value {
    ParamSpec spec;
    bool is_set = false;
    bool b = false;
    int64_t i = 0;
    double f = 0;
    std::string s;
    std::vector<std::string> list;
    std::string text;  // the effective value as config text (for logging the configuration)
  };

  const std::vector<Value>& values() const { return values_; }
  const Value* find(const std::string& name) const;
  // hh_param_value views over values(); valid while this object lives and is not modified.
  std::vector<hh_param_value> c_values() const;

 private:
  friend ResolvedParams resolve_params(const PluginMetadata&, const std::string&,
                                       const std::multimap<std::string, std::string>&);
  std::vector<Value> values_;
  mutable std::vector<std::vector<const char*>> list_storage_;
};

// Parses `raw` (key -> config text; a string list key may repeat, and each text may hold a
// comma-separated list) with Boost.Program_options against `plugin`'s schema. Throws ConfigError
// naming the instance, the plugin and the key: unknown key, wrong type, missing required value.
ResolvedParams resolve_params(const PluginMetadata& plugin, const std::string& instance,
                              const std::multimap<std::string, std::string>& raw);

}  // namespace hookhost
