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
    bool from_default = false;  // the plugin's default, not a value of the configuration
    bool b = false;
    int64_t i = 0;
    double f = 0;
    std::string s;
    std::vector<std::string> list;
    std::string text;  // the effective value as config text (for logging the configuration)
  };

  const std::vector<Value>& values() const { return values_; }
  const Value* find(const std::string& name) const;
  // hh_param_value views over values(), with the item arrays they point into. Valid while both
  // this object and the returned one live (moving the returned one keeps them valid).
  struct CValues {
    std::vector<hh_param_value> values;
    std::vector<std::vector<const char*>> list_items;
  };
  CValues c_values() const;

 private:
  friend ResolvedParams resolve_params(const PluginMetadata&, const std::string&,
                                       const std::multimap<std::string, std::string>&);
  std::vector<Value> values_;
};

// Why a plugin's declared default is not a valid value of its type (empty when it is), with the
// same parser configuration values go through. For the note check at discovery.
std::string check_param_default(const ParamSpec& spec);

// Parses `raw` (key -> config text; a string list key may repeat, and each text may hold a
// comma-separated list) with Boost.Program_options against `plugin`'s schema. Throws ConfigError
// naming the instance, the plugin and the key: unknown key, wrong type, missing required value.
ResolvedParams resolve_params(const PluginMetadata& plugin, const std::string& instance,
                              const std::multimap<std::string, std::string>& raw);

}  // namespace hookhost
