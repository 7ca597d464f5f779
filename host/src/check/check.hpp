// `hookhost check PLUGIN.so`: a conformance check of one plugin file, for its author and for
// whoever vets it before enabling it. Reads the metadata without loading the file, loads it in a
// child to compare the note with the entry, reads the build's hygiene from the ELF file, then runs
// the hook sandboxed (isolation = process, through the real runtime) through whole lifecycles
// around a synthetic workload: a plain run, a recoverable workload error, a stop request, another
// hook failing, a save and restore of its state, a long run watching its memory, and every
// parameter at the edges of its type.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "check/finding.hpp"
#include "hookhost/host/plugin_metadata.hpp"

namespace hookhost::check {

struct CheckOptions {
  std::filesystem::path file;
  // --set KEY=VALUE, in order: the base configuration. These parameters keep their value in every
  // scenario; the others are also tried at their edges.
  std::vector<std::pair<std::string, std::string>> settings;
  std::chrono::milliseconds call_timeout{5000};  // every call's budget; over it is a hang
  bool verbose = false;                          // each scenario's name and log on stderr
};

struct CheckReport {
  std::filesystem::path file;
  PluginMetadata plugin;
  Findings findings;
  std::vector<std::string> scenarios;  // the scenarios that ran, in order
  std::vector<std::string> notes;      // what was tried and accepted, or skipped, and why
};

// Throws ConfigError, as 'hookhost run' reports configuration errors (exit status 2): the file is
// not a usable plugin, a --set key the plugin does not declare (naming the key and listing the
// plugin's parameters), a bad value, or a configuration the plugin's create() refuses. Throws
// std::runtime_error when the sandbox cannot start (hookhost-runner missing). Forks (see
// load_probe.hpp): call it before starting threads.
CheckReport run_check(const CheckOptions& options);

}  // namespace hookhost::check
