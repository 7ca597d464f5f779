#include "check/param_edges.hpp"

#include <cstdlib>
#include <limits>

namespace hookhost::check {

namespace {

std::optional<double> number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return value;
}

std::optional<bool> boolean(const std::string& text) {
  for (const char* yes : {"true", "yes", "on", "1"})
    if (text == yes) return true;
  for (const char* no : {"false", "no", "off", "0"})
    if (text == no) return false;
  return std::nullopt;
}

// Whether `edge` is what the parameter already is without a value.
bool is_default(const ParamSpec& spec, const std::string& edge) {
  if (spec.flag != ParamFlag::defaulted) return false;
  switch (spec.type) {
    case HH_PARAM_TYPE_INT:
    case HH_PARAM_TYPE_FLOAT: return number(spec.default_value) == number(edge);
    case HH_PARAM_TYPE_BOOL: return boolean(spec.default_value) == boolean(edge);
    case HH_PARAM_TYPE_STRING_LIST:
      return spec.default_value.find_first_not_of(" \t,") == std::string::npos && edge.empty();
    default: return spec.default_value == edge;
  }
}

std::vector<std::string> edges_of(hh_param_type type) {
  switch (type) {
    case HH_PARAM_TYPE_BOOL: return {"true", "false"};
    case HH_PARAM_TYPE_INT:
      return {"0", "1", "-1", std::to_string(std::numeric_limits<int64_t>::min()),
              std::to_string(std::numeric_limits<int64_t>::max())};
    case HH_PARAM_TYPE_FLOAT:
      return {"0", "-1", "2.2250738585072014e-308", "1.7976931348623157e+308"};
    case HH_PARAM_TYPE_STRING:
    case HH_PARAM_TYPE_STRING_LIST: return {""};
    default: return {};
  }
}

}  // namespace

std::vector<ParamEdge> parameter_edges(const PluginMetadata& plugin,
                                       const std::multimap<std::string, std::string>& pinned) {
  std::vector<ParamEdge> out;
  for (const ParamSpec& spec : plugin.params) {
    if (pinned.count(spec.name)) continue;
    for (const std::string& text : edges_of(spec.type)) {
      if (is_default(spec, text)) continue;
      std::string shown = text;
      if (text.empty()) shown = spec.type == HH_PARAM_TYPE_STRING_LIST ? "(empty list)" : "\"\"";
      out.push_back({spec.name, text, spec.name + "=" + shown});
    }
  }
  return out;
}

}  // namespace hookhost::check
