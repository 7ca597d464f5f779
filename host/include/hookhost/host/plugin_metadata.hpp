// What a plugin says about itself: read from its ELF note before loading, and from its entry
// symbol after loading. The two must agree.
#pragma once

#include <cstdint>
#include <optional>
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

// Where a hook of the plugin runs in a distributed job when its [hook.NAME] section sets no
// `ranks`: on every process, or on the chief (rank 0) alone.
enum class Placement { all, chief };

// What a plugin's hooks need when they run confined (the note's needs.* lines, ABI 1.2): beyond
// the system's runtime, nothing but the hook's own run folder unless declared here. Read paths are
// relative to the hook's config folder unless absolute; write paths relative to its run folder.
struct PluginNeeds {
  std::vector<std::string> read;          // needs.read=PATH, in note order
  std::vector<std::string> write;         // needs.write=PATH
  std::vector<std::string> read_params;   // needs.read.param=NAME: the paths that parameter names
  std::vector<std::string> write_params;  // needs.write.param=NAME
  bool network = false;                   // needs.network=1
  bool processes = false;                 // needs.processes=1

  bool operator==(const PluginNeeds&) const = default;
  bool empty() const { return *this == PluginNeeds{}; }
};

struct PluginMetadata {
  std::string id;
  std::string version;
  std::string description;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;      // the minor it was built against
  uint32_t min_abi_minor = 0;  // the oldest host minor it runs on
  std::vector<ParamSpec> params;
  // The note's placement= line (ABI 1.1); unset when the plugin declares none, as no 1.0 plugin
  // does. Only the note carries it: the entry symbol has no such field.
  std::optional<Placement> placement;
  // The note's needs.* lines (ABI 1.2); note-only as placement is.
  PluginNeeds needs;
  // The note's mode=observe line (ABI 1.3): its hooks run as observers unless a section says
  // mode = step.
  bool observes = false;
  // The note's cadence.every_n_steps=NAME line (ABI 1.4): the INT parameter whose value N makes
  // the host call its hooks' before_run and after_run only at their first step and the steps
  // after which the global step is a multiple of N. Empty: every step.
  std::string cadence_param;

  bool operator==(const PluginMetadata&) const = default;
  const ParamSpec* find_param(const std::string& name) const;
  // The declared placement, or all when the plugin declares none.
  Placement default_placement() const { return placement.value_or(Placement::all); }
};

// "all" or "chief", as the note and a section's `ranks` write them.
std::string placement_name(Placement placement);

// "bool", "int", "float", "string", "string list".
std::string param_type_name(hh_param_type type);

// The metadata an entry symbol describes (the ABI version is the entry's).
PluginMetadata metadata_from_entry(const hh_plugin_entry& entry);

}  // namespace hookhost
