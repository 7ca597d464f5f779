// hookhost plugins list / describe: reads each plugin's metadata note; no plugin code runs.
#include "plugins_command.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <hookhost/host/discovery.hpp>
#include <hookhost/host/job.hpp>
#include "command_line.hpp"
#include "job/config_keys.hpp"
#include "job/hook_policy.hpp"
#include "job/rank_placement.hpp"
#include "support/display_text.hpp"
#include "support/text.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;
using namespace hookhost;
using namespace hookhost::app;

namespace {

std::string flag_text(const ParamSpec& p) {
  switch (p.flag) {
    case ParamFlag::required: return "required";
    case ParamFlag::defaulted: return p.default_value.empty() ? "\"\"" : p.default_value;
    case ParamFlag::optional: return "(unset)";
  }
  return "";
}

int list_plugins(const DiscoveryResult& found, const std::vector<fs::path>& dirs) {
  constexpr std::size_t kColumn = 64;  // ids and versions longer than this are cut
  std::printf("%-20s %-9s %-5s %s\n", "ID", "VERSION", "ABI", "FILE");
  for (const auto& p : found.plugins)
    std::printf("%-20s %-9s %u.%-3u %s\n", display_text(p.metadata.id, kColumn).c_str(),
                display_text(p.metadata.version, kColumn).c_str(), p.metadata.abi_major,
                p.metadata.abi_minor, display_text(p.file.string()).c_str());
  std::printf("\n%zu plugin(s) in: ", found.plugins.size());
  for (size_t i = 0; i < dirs.size(); ++i)
    std::printf("%s%s", i ? ", " : "", display_text(dirs[i].string()).c_str());
  std::printf("\n");
  if (found.ignored_files > 0)
    std::printf("%zu other file(s) ignored: a plugin file is named *.so or *.so.N\n",
                found.ignored_files);
  if (!found.duplicates.empty()) {
    std::printf("\nDuplicate plugin ids:\n");
    for (const auto& d : found.duplicates)
      std::printf("  %s: using %s\n    because %s\n    ignoring %s\n",
                  display_text(d.id, kColumn).c_str(), display_text(d.chosen.string()).c_str(),
                  d.why.c_str(), display_text(d.ignored.string()).c_str());
  }
  if (!found.rejected.empty()) {
    std::printf("\nRejected files:\n");
    for (const auto& r : found.rejected)
      std::printf("  %s\n    %s\n", display_text(r.file.string()).c_str(),
                  display_text(r.reason).c_str());
  }
  // Every folder searched here was named by the operator (or is the built-in one): a missing
  // one is a typo to fix, not something to list around.
  if (!found.missing_folders.empty()) {
    std::fflush(stdout);
    for (const auto& folder : found.missing_folders)
      std::fprintf(stderr, "hookhost: plugin folder %s does not exist or is not a folder\n",
                   display_text(folder.string()).c_str());
    return kExitUsage;
  }
  return kExitOk;
}

// The plugin's file, placement, mode, cadence, needs, ABI and process-wide calls.
void print_plugin_facts(const DiscoveredPlugin& p) {
  const PluginMetadata& m = p.metadata;
  // Read from the file's imports, like everything here: a hint, not a guarantee.
  std::string calls;
  if (!p.process_wide_calls) {
    calls = "could not be read (no readable dynamic symbol table)";
  } else if (p.process_wide_calls->empty()) {
    calls = "none";
  } else {
    calls =
        join(*p.process_wide_calls, ", ") + " (run it with isolation = process to contain them)";
  }
  const std::string placement =
      placement_name(m.default_placement()) +
      (!m.placement                       ? " (not declared by the plugin, so every rank"
       : *m.placement == Placement::chief ? " (declared by the plugin: rank 0 alone"
                                          : " (declared by the plugin: every rank") +
      " of a distributed job; a section's ranks = overrides it)";
  const std::string mode =
      m.observes ? "observe (declared by the plugin: its hooks run behind the step; a section's "
                   "mode = step runs one on the step)"
                 : "step (its hooks run on the step; a section's mode = observe runs one behind "
                   "it)";
  const std::string cadence =
      m.cadence_param.empty()
          ? "every step"
          : "the first step and each step after which the global step is a multiple of its "
            "parameter " +
                display_text(m.cadence_param) +
                " (declared by the plugin: the host skips the others' before_run and after_run)";
  // A declaration is a request: only the job's configuration grants it (docs/isolation.md).
  const std::string granted_by =
      m.needs.empty() ? ""
                      : "\n  granted by: the job's configuration (a parameter's value, allow_read, "
                        "allow_write, allow_network, allow_processes, or grant = declared); "
                        "what it does not grant refuses the hook";
  std::printf(
      "%s %s - %s\n  file: %s\n  placement: %s\n  mode: %s\n  cadence: %s\n"
      "  needs (when confined): %s%s\n  ABI: %u.%u\n  process-wide calls: %s\n",
      display_text(m.id).c_str(), display_text(m.version).c_str(),
      display_text(m.description).c_str(), display_text(p.file.string()).c_str(), placement.c_str(),
      mode.c_str(), cadence.c_str(), describe_needs(m.needs).c_str(), granted_by.c_str(),
      m.abi_major, m.abi_minor, calls.c_str());
}

// What this plugin makes the default of a key whose help says it depends on the plugin, or "".
std::string plugin_default(std::string_view key, const PluginMetadata& m) {
  if (key == "ranks") return default_ranks(m).text();
  if (key == "mode") return m.observes ? "observe" : "step";
  return {};
}

// The [hook.NAME] keys of the config key table, with their help: the host's own, then those a
// parameter of the plugin's may keep.
void print_host_keys(const PluginMetadata& m) {
  int name_width = 0;
  for (const ConfigKey& key : config_keys())
    if (key.sections & kHookSection)
      name_width = std::max(name_width, static_cast<int>(key.name.size()) + 1);
  for (KeyOwner owner : {KeyOwner::host, KeyOwner::host_unless_declared}) {
    std::printf(owner == KeyOwner::host
                    ? "\nKeys the host reads in every [hook.NAME] section (never passed to the "
                      "plugin):\n"
                    : "\nKeys the host reads unless the plugin declares a parameter of that name, "
                      "which then keeps it:\n");
    for (const ConfigKey& key : config_keys()) {
      if (!(key.sections & kHookSection) || key.owner != owner) continue;
      const std::string name(key.name);
      std::string note;
      if (m.find_param(name))
        note = " (this plugin declares it: its parameter above)";
      else if (const std::string value = plugin_default(name, m); !value.empty())
        note = "; for this plugin: " + value;
      std::printf("  %-*s%s%s\n", name_width, name.c_str(), std::string(key.help).c_str(),
                  note.c_str());
    }
  }
}

// A section to start from: required parameters to fill in, the others with their defaults,
// commented out.
void print_example_section(const PluginMetadata& m) {
  std::printf("\nExample:\n  [hook.%s]\n", display_text(m.id).c_str());
  for (const auto& param : m.params) {
    const std::string name = display_text(param.name);
    switch (param.flag) {
      case ParamFlag::required: std::printf("  %s = ...\n", name.c_str()); break;
      case ParamFlag::defaulted:
        std::printf("  ; %s = %s\n", name.c_str(), display_text(param.default_value).c_str());
        break;
      case ParamFlag::optional: std::printf("  ; %s =\n", name.c_str()); break;
    }
  }
}

int describe_plugin(const DiscoveryResult& found, const std::string& id) {
  const DiscoveredPlugin* p = found.find(id);
  if (!p) {
    std::fprintf(stderr,
                 "hookhost: no plugin with id '%s' (see 'hookhost plugins list' for the ids "
                 "found)\n",
                 display_text(id).c_str());
    return kExitUsage;
  }
  const PluginMetadata& m = p->metadata;
  print_plugin_facts(*p);
  std::printf("\nParameters:\n");
  if (m.params.empty()) std::printf("  (none)\n");
  for (const auto& param : m.params)
    std::printf("  %-18s %-12s %-12s %s\n", display_text(param.name).c_str(),
                param_type_name(param.type).c_str(), display_text(flag_text(param)).c_str(),
                display_text(param.help).c_str());
  print_host_keys(m);
  print_example_section(m);
  return kExitOk;
}

}  // namespace

int cmd_plugins(const std::vector<std::string>& args) {
  po::options_description desc(
      "Usage:\n  hookhost plugins list [--plugin-dir DIR]...\n"
      "  hookhost plugins describe ID [--plugin-dir DIR]...\n\n"
      "Reads each plugin's metadata note; no plugin code runs.\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "plugin-dir,p", po::value<std::vector<std::string>>()->composing()->value_name("DIR"),
      "a folder of plugins to search first (repeatable)");
  const auto parsed = parse_command_line(args, desc, "words", -1, "plugins ");
  if (!parsed) return kExitUsage;
  const po::variables_map& vm = *parsed;
  std::vector<std::string> words;
  if (vm.count("words")) words = vm["words"].as<std::vector<std::string>>();
  if (vm.count("help") || words.empty()) {
    std::cout << desc
              << "\nExamples:\n  hookhost plugins list\n"
                 "  hookhost plugins list --plugin-dir ./my-plugins\n"
                 "  hookhost plugins describe stop_at_step\n";
    return words.empty() && !vm.count("help") ? kExitUsage : kExitOk;
  }
  std::vector<fs::path> first;
  if (vm.count("plugin-dir")) first = to_paths(vm["plugin-dir"].as<std::vector<std::string>>());
  const auto dirs = plugin_search_path(first, {});
  DiscoveryOptions options;  // listing reads only the notes; describe also names the imports
  const bool describe = words[0] == "describe" && words.size() == 2;
  if (describe) options.imports_of = {words[1]};
  const DiscoveryResult found = discover_plugins(dirs, options);
  if (words[0] == "list" && words.size() == 1) return list_plugins(found, dirs);
  if (describe) return describe_plugin(found, words[1]);
  return usage_error("unknown 'plugins' command '" + words[0] + "' (expected list or describe ID)",
                     "plugins ");
}
