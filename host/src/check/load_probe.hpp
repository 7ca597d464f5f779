// Loads a plugin with the host's own loader (which checks the entry symbol against the note field
// by field) in a child process, so a library constructor that crashes, exits or hangs costs the
// child and is reported, instead of ending the check.
#pragma once

#include <chrono>
#include <string>

#include "hookhost/host/discovery.hpp"

namespace hookhost::check {

struct LoadProbeResult {
  bool loaded = false;
  // When not loaded: "metadata" (the loader refused it, with its message), or "crash", "exit" or
  // "hang" (what happened to the child while the library loaded).
  std::string kind;
  std::string message;
};

// Forks; call it while the process has one thread (the hookhost program does, before any runtime
// exists). The child is killed when it has not answered within `timeout`.
LoadProbeResult probe_load(const DiscoveredPlugin& plugin, std::chrono::milliseconds timeout);

}  // namespace hookhost::check
