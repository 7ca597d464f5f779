// The parameter values a check tries, one parameter at a time: the edges of each declared type.
// A schema says only a type, whether a value is required and its default (no range, no choices),
// so the edges are the type's: 0, 1, -1 and the int64 limits; 0, -1, the smallest and largest
// positive doubles; true and false; the empty string and the empty list.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hookhost/host/plugin_metadata.hpp"

namespace hookhost::check {

struct ParamEdge {
  std::string name;   // the parameter
  std::string text;   // its value as configuration text
  std::string label;  // "every_n_steps=0", "label=\"\"", "tensors=(empty list)"
};

// The edges of every declared parameter not in `pinned` (the --set values, which keep their value
// in every scenario), each different from the parameter's default.
std::vector<ParamEdge> parameter_edges(const PluginMetadata& plugin,
                                       const std::multimap<std::string, std::string>& pinned);

}  // namespace hookhost::check
