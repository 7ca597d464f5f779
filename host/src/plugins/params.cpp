#include "hookhost/host/params.hpp"

#include <boost/program_options.hpp>

#include <cmath>
#include <sstream>

#include "support/text.hpp"

namespace hookhost {
namespace po = boost::program_options;

namespace {

std::vector<std::string> split_list(const std::vector<std::string>& texts) {
  std::vector<std::string> items;
  for (const auto& text : texts) {
    size_t start = 0;
    while (start <= text.size()) {
      size_t comma = text.find(',', start);
      if (comma == std::string::npos) comma = text.size();
      std::string item(trim(std::string_view(text).substr(start, comma - start)));
      if (!item.empty()) items.push_back(std::move(item));
      start = comma + 1;
    }
  }
  return items;
}

std::string expected_text(hh_param_type type) {
  switch (type) {
    case HH_PARAM_TYPE_BOOL: return "a bool (true/false, yes/no, on/off, 1/0)";
    case HH_PARAM_TYPE_INT: return "an integer";
    case HH_PARAM_TYPE_FLOAT: return "a number";
    case HH_PARAM_TYPE_STRING: return "a string";
    case HH_PARAM_TYPE_STRING_LIST: return "a comma-separated list";
    default: return "a value";
  }
}

const po::value_semantic* semantic_for(hh_param_type type) {
  switch (type) {
    case HH_PARAM_TYPE_BOOL: return po::value<bool>();
    case HH_PARAM_TYPE_INT: return po::value<int64_t>();
    case HH_PARAM_TYPE_FLOAT: return po::value<double>();
    case HH_PARAM_TYPE_STRING: return po::value<std::string>();
    case HH_PARAM_TYPE_STRING_LIST: return po::value<std::vector<std::string>>()->composing();
    default: return nullptr;
  }
}

std::string known_keys(const PluginMetadata& plugin) {
  std::vector<std::string> names;
  for (const auto& p : plugin.params) names.push_back(p.name);
  return names.empty() ? "none" : join(names, ", ");
}

}  // namespace

const ResolvedParams::Value* ResolvedParams::find(const std::string& name) const {
  for (const auto& v : values_)
    if (v.spec.name == name) return &v;
  return nullptr;
}

ResolvedParams::CValues ResolvedParams::c_values() const {
  CValues out;
  out.list_items.reserve(values_.size());
  for (const auto& v : values_) {
    hh_param_value c{};
    c.struct_size = HH_PARAM_VALUE_SIZE;
    c.name = v.spec.name.c_str();
    c.type = v.spec.type;
    c.is_set = v.is_set ? 1 : 0;
    c.bool_value = v.b ? 1 : 0;
    c.int_value = v.i;
    c.float_value = v.f;
    c.string_value = v.s.c_str();
    auto& items = out.list_items.emplace_back();
    for (const auto& item : v.list) items.push_back(item.c_str());
    c.list_items = items.empty() ? nullptr : items.data();
    c.list_count = static_cast<uint32_t>(items.size());
    out.values.push_back(c);
  }
  return out;
}

std::string check_param_default(const ParamSpec& spec) {
  const po::value_semantic* semantic = semantic_for(spec.type);
  if (!semantic) return "unknown type";
  po::options_description desc;
  desc.add_options()(spec.name.c_str(), semantic, "");
  po::parsed_options parsed(&desc);
  parsed.options.emplace_back(spec.name, std::vector<std::string>{spec.default_value});
  po::variables_map vm;
  try {
    po::store(parsed, vm);
  } catch (const po::error&) {
    return "the default '" + spec.default_value + "' is not " + expected_text(spec.type) +
           " — the plugin's author must fix its parameter list";
  }
  if (spec.type == HH_PARAM_TYPE_FLOAT && !std::isfinite(vm[spec.name].as<double>()))
    return "the default '" + spec.default_value +
           "' is not a finite number — the plugin's "
           "author must fix its parameter list";
  return {};
}

ResolvedParams resolve_params(const PluginMetadata& plugin, const std::string& instance,
                              const std::multimap<std::string, std::string>& raw) {
  const std::string where = describe_hook(instance, plugin.id);
  po::options_description desc(where);
  for (const auto& p : plugin.params) {
    const po::value_semantic* semantic = semantic_for(p.type);
    if (!semantic)
      throw ConfigError(where + ": parameter '" + p.name + "' has an unknown type in the plugin");
    desc.add_options()(p.name.c_str(), semantic, p.help.c_str());
  }

  po::parsed_options parsed(&desc);
  for (const auto& [key, text] : raw) {
    if (!plugin.find_param(key))
      throw ConfigError(where + ": unknown parameter '" + key +
                            "' (this plugin takes: " + known_keys(plugin) +
                            "; see 'hookhost plugins describe " + plugin.id + "')",
                        key);
    parsed.options.emplace_back(key, std::vector<std::string>{text});
  }
  po::variables_map vm;
  try {
    po::store(parsed, vm);
  } catch (const po::multiple_occurrences& e) {
    throw ConfigError(
        where + ": parameter '" + e.get_option_name() + "' is given more than once; give it once",
        e.get_option_name());
  } catch (const po::error& e) {
    std::string key = "?";
    if (const auto* ve = dynamic_cast<const po::error_with_option_name*>(&e))
      key = ve->get_option_name();
    const ParamSpec* spec = plugin.find_param(key);
    auto it = raw.find(key);
    throw ConfigError(where + ": parameter '" + key + "' must be " +
                          (spec ? expected_text(spec->type) : std::string("valid")) +
                          (it != raw.end() ? ", got '" + it->second + "'" : std::string()),
                      key);
  }

  ResolvedParams out;
  for (const auto& spec : plugin.params) {
    ResolvedParams::Value v;
    v.spec = spec;
    const po::variable_value* given = vm.count(spec.name) ? &vm[spec.name] : nullptr;
    po::variables_map defaults;
    if (!given && spec.flag == ParamFlag::defaulted) {
      po::parsed_options d(&desc);
      d.options.emplace_back(spec.name, std::vector<std::string>{spec.default_value});
      try {
        po::store(d, defaults);
      } catch (const po::error&) {
        throw ConfigError(where + ": the plugin's default for '" + spec.name + "' ('" +
                          spec.default_value + "') is not " + expected_text(spec.type) +
                          "; report this to the plugin's author");
      }
      given = &defaults[spec.name];
      v.from_default = true;
    }
    if (!given) {
      if (spec.flag == ParamFlag::required)
        throw ConfigError(
            where + ": required parameter '" + spec.name + "' is missing (" + spec.help + ")",
            spec.name);
      out.values_.push_back(std::move(v));
      continue;
    }
    v.is_set = true;
    switch (spec.type) {
      case HH_PARAM_TYPE_BOOL:
        v.b = given->as<bool>();
        v.text = v.b ? "true" : "false";
        break;
      case HH_PARAM_TYPE_INT:
        v.i = given->as<int64_t>();
        v.text = std::to_string(v.i);
        break;
      case HH_PARAM_TYPE_FLOAT: {
        v.f = given->as<double>();
        std::ostringstream s;
        s << v.f;
        v.text = s.str();
        break;
      }
      case HH_PARAM_TYPE_STRING:
        v.s = given->as<std::string>();
        v.text = v.s;
        break;
      case HH_PARAM_TYPE_STRING_LIST:
        v.list = split_list(given->as<std::vector<std::string>>());
        v.text = join(v.list, ",");
        break;
    }
    out.values_.push_back(std::move(v));
  }
  return out;
}

}  // namespace hookhost
