#include "hookhost/host/plugin_metadata.hpp"

namespace hookhost {

namespace {

// A plugin's strings are C pointers it controls; a null one reads as empty rather than crashing.
std::string text_or_empty(const char* s) {
  return s ? std::string(s) : std::string();
}

ParamFlag flag_from_abi(uint32_t flags) {
  switch (flags) {
    case HH_PARAM_FLAG_REQUIRED: return ParamFlag::required;
    case HH_PARAM_FLAG_DEFAULT: return ParamFlag::defaulted;
    default: return ParamFlag::optional;
  }
}

}  // namespace

const ParamSpec* PluginMetadata::find_param(const std::string& name) const {
  for (const ParamSpec& p : params) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string placement_name(Placement placement) {
  return placement == Placement::chief ? "chief" : "all";
}

std::string param_type_name(hh_param_type type) {
  switch (type) {
    case HH_PARAM_TYPE_BOOL: return "bool";
    case HH_PARAM_TYPE_INT: return "int";
    case HH_PARAM_TYPE_FLOAT: return "float";
    case HH_PARAM_TYPE_STRING: return "string";
    case HH_PARAM_TYPE_STRING_LIST: return "string list";
    default: return "unknown type " + std::to_string(type);
  }
}

PluginMetadata metadata_from_entry(const hh_plugin_entry& entry) {
  PluginMetadata m;
  m.id = text_or_empty(entry.id);
  m.version = text_or_empty(entry.version);
  m.description = text_or_empty(entry.description);
  m.abi_major = entry.abi_major;
  m.abi_minor = entry.abi_minor;
  m.min_abi_minor = entry.min_abi_minor;
  if (entry.params) {
    m.params.reserve(entry.param_count);
    for (uint32_t i = 0; i < entry.param_count; ++i) {
      const hh_param_desc& d = *hh_entry_param(&entry, i);
      ParamSpec p;
      p.name = text_or_empty(d.name);
      p.type = d.type;
      p.flag = flag_from_abi(d.flags);
      // Same rule as the note: a default only means something with HH_PARAM_FLAG_DEFAULT.
      if (p.flag == ParamFlag::defaulted) p.default_value = text_or_empty(d.default_value);
      p.help = text_or_empty(d.help);
      m.params.push_back(std::move(p));
    }
  }
  return m;
}

}  // namespace hookhost
