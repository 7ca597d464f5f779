// What a plugin says about itself: read from its ELF note before loading, and from its entry
// symbol after loading. The two must agree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <hookhost/entry.h>

namespace hookhost {

enum class ParamFlag { optional, required, defaulted };

struct ParamSpec {
  std::string name;
  hh_param_type type = 0;
  ParamFlag flag = ParamFlag::optional;
  std::string default_value;  // meaningful only when flag == defaulted
  std::string help;

  bool operator==(const ParamSpec&) const = default;
};

struct PluginMetadata {
  std::string id;
  std::string version;
  std::string description;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;      // the minor it was built against
  uint32_t min_abi_minor = 0;  // the oldest host minor it runs on
  std::vector<ParamSpec> params;

  bool operator==(const PluginMetadata&) const = default;
  const ParamSpec* find_param(const std::string& name) const;
};

// "bool", "int", "float", "string", "string list".
std::string param_type_name(hh_param_type type);

// The metadata an entry symbol describes (the ABI version is the entry's).
PluginMetadata metadata_from_entry(const hh_plugin_entry& entry);

}  // namespace hookhost
