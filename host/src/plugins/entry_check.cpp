#include "plugins/entry_check.hpp"

namespace hookhost {

namespace {

std::string flag_name(ParamFlag f) {
  switch (f) {
    case ParamFlag::optional: return "OPTIONAL";
    case ParamFlag::required: return "REQUIRED";
    case ParamFlag::defaulted: return "DEFAULT";
  }
  return "?";
}

std::string abi_text(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

// The first field where the note and the entry disagree, as "note says X, entry says Y".
std::string first_difference(const PluginMetadata& note, const PluginMetadata& entry) {
  auto differ = [](const std::string& field, const std::string& n, const std::string& e) {
    return "note says " + field + " " + n + ", entry says " + e;
  };
  if (note.id != entry.id) return differ("id", quote(note.id), quote(entry.id));
  if (note.version != entry.version) {
    return differ("version", quote(note.version), quote(entry.version));
  }
  if (note.description != entry.description) {
    return differ("description", quote(note.description), quote(entry.description));
  }
  if (note.abi_major != entry.abi_major || note.abi_minor != entry.abi_minor ||
      note.min_abi_minor != entry.min_abi_minor) {
    return differ("ABI (built for, runs on)",
                  abi_text(note.abi_major, note.abi_minor) + ", " +
                      abi_text(note.abi_major, note.min_abi_minor),
                  abi_text(entry.abi_major, entry.abi_minor) + ", " +
                      abi_text(entry.abi_major, entry.min_abi_minor));
  }
  if (note.params.size() != entry.params.size()) {
    return "note declares " + std::to_string(note.params.size()) + " parameters, entry declares " +
           std::to_string(entry.params.size());
  }
  for (std::size_t i = 0; i < note.params.size(); ++i) {
    const ParamSpec& n = note.params[i];
    const ParamSpec& e = entry.params[i];
    const std::string field = "parameter " + std::to_string(i + 1) + " " + quote(n.name) + " ";
    if (n.name != e.name) return differ(field + "name", quote(n.name), quote(e.name));
    if (n.type != e.type) {
      return differ(field + "type", param_type_name(n.type), param_type_name(e.type));
    }
    if (n.flag != e.flag) return differ(field + "flag", flag_name(n.flag), flag_name(e.flag));
    if (n.default_value != e.default_value) {
      return differ(field + "default", quote(n.default_value), quote(e.default_value));
    }
    if (n.help != e.help) return differ(field + "help", quote(n.help), quote(e.help));
  }
  return {};
}

}  // namespace

std::string quote(std::string_view s) {
  constexpr std::size_t kMax = 80;
  std::string out = "'";
  out += s.substr(0, kMax);
  if (s.size() > kMax) out += "...";
  return out + "'";
}

std::string check_entry(const hh_plugin_entry* entry_symbol, const PluginMetadata& note) {
  const std::string rebuild =
      " — rebuild the plugin with HH_PLUGIN_DEFINE / HOOKHOST_PLUGIN against this hookhost";
  if (!entry_symbol) {
    return "has no symbol " HH_ENTRY_SYMBOL
           ": not a hookhost ABI 1 plugin, or the symbol is not exported" +
           rebuild;
  }
  const hh_plugin_entry& entry = *entry_symbol;
  if (entry.struct_size < HH_PLUGIN_ENTRY_SIZE_1_0) {
    return HH_ENTRY_SYMBOL " is too small: struct_size " + std::to_string(entry.struct_size) +
           ", below the ABI 1.0 size " + std::to_string(HH_PLUGIN_ENTRY_SIZE_1_0) + rebuild;
  }
  if (!hh_abi_is_compatible(entry.abi_major, entry.min_abi_minor)) {
    return HH_ENTRY_SYMBOL " is built for hookhost ABI " +
           abi_text(entry.abi_major, entry.min_abi_minor) + "; this host supports ABI " +
           abi_text(HH_ABI_MAJOR, HH_ABI_MINOR) + rebuild;
  }
  if (!entry.create) return HH_ENTRY_SYMBOL " has no create function" + rebuild;
  if (entry.state_version == 0) return HH_ENTRY_SYMBOL " has state_version 0 (>= 1)";

  // The entry's parameter table is only read as far as the note vouches for, with the entry's
  // own stride, and each descriptor is checked before metadata_from_entry copies it.
  auto disagree = [&](const std::string& what) {
    return "its note and its entry symbol disagree: " + what +
           " — both must come from one HH_PLUGIN_DEFINE / HOOKHOST_PLUGIN; rebuild the plugin";
  };
  if (entry.param_count != note.params.size()) {
    return disagree("note declares " + std::to_string(note.params.size()) +
                    " parameters, entry declares " + std::to_string(entry.param_count));
  }
  if (entry.param_count > 0 && !entry.params) return disagree("entry's parameter table is null");
  if (entry.param_count > 0 && entry.param_stride < HH_PARAM_DESC_SIZE_1_0) {
    return disagree("entry's param_stride " + std::to_string(entry.param_stride) +
                    " is below the ABI 1.0 size of hh_param_desc (" +
                    std::to_string(HH_PARAM_DESC_SIZE_1_0) + ")");
  }
  for (uint32_t i = 0; i < entry.param_count; ++i) {
    const hh_param_desc& d = *hh_entry_param(&entry, i);
    const std::string which = "entry parameter " + std::to_string(i + 1);
    if (d.struct_size < HH_PARAM_DESC_SIZE_1_0 || d.struct_size > entry.param_stride) {
      return disagree(which + " has struct_size " + std::to_string(d.struct_size) + " (between " +
                      std::to_string(HH_PARAM_DESC_SIZE_1_0) + " and the stride " +
                      std::to_string(entry.param_stride) + " expected)");
    }
    if (d.type < HH_PARAM_TYPE_BOOL || d.type > HH_PARAM_TYPE_STRING_LIST) {
      return disagree(which + " has unknown type " + std::to_string(d.type));
    }
    if (d.flags > HH_PARAM_FLAG_DEFAULT) {
      return disagree(which + " has unknown flags " + std::to_string(d.flags));
    }
  }
  std::string diff = first_difference(note, metadata_from_entry(entry));
  if (!diff.empty()) return disagree(diff);
  return {};
}

}  // namespace hookhost
