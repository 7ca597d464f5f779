// Who one hook instance is: its settings, the plugin it came from, its dispatcher (how it is
// called) and its services handle (what it sees of the host). Settled when the slot is made and
// never replaced: the objects behind the dispatcher and the handle change (a restart, the state
// it saves), the identity does not.
// Thread rules: read from any thread that holds the slot (the training thread, an observer's
// worker, interrupt() and reports() under the engine's lock); nothing here is written after
// construction but by retire(), on the training thread under the engine's lock.
#pragma once

#include <memory>
#include <string>

#include "context/host_services.hpp"
#include "hookhost/host/runtime.hpp"

namespace hookhost {

class HookIdentity {
 public:
  // Sorts the step filter's at_steps (an embedder's list may come in any order: step_called()
  // searches it) and names the hook for crash blame.
  HookIdentity(HookSettings settings, std::unique_ptr<HostServices> services,
               std::unique_ptr<HookDispatch> dispatch,
               std::shared_ptr<const LoadedPlugin> plugin = nullptr);

  const HookSettings& settings() const { return settings_; }
  const std::string& name() const { return settings_.instance_name; }
  bool is_observer() const { return settings_.observer.enabled; }
  HookDispatch& dispatch() const { return *dispatch_; }
  HostServices& services() const { return *services_; }
  // A detached hook, destroyed, keeps only its names for the job's report: its dispatcher is
  // replaced by one that makes no call, and the old one (its runner, its copy of the plugin file)
  // is returned for the caller to drop.
  std::unique_ptr<HookDispatch> retire();

 private:
  HookSettings settings_;
  // In the order they go in reverse: the dispatcher first, then the plugin it was made from, then
  // the handle it was given.
  std::unique_ptr<HostServices> services_;
  std::shared_ptr<const LoadedPlugin> plugin_;  // keeps metadata alive; libraries never unload
  std::unique_ptr<HookDispatch> dispatch_;
};

}  // namespace hookhost
