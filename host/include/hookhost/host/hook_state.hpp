// A hook instance's saved state as checkpoints keep it: the bytes it gave state_put, tagged with
// the plugin that wrote them and that plugin's state version, so a resumed instance never gets
// another plugin's bytes and a plugin can tell an older format from its own.
#pragma once

#include <cstdint>
#include <string>

namespace hookhost {

struct SavedHookState {
  std::string plugin_id;  // empty when unknown (checkpoint format 1): any plugin may take it
  uint32_t state_version = 1;
  std::string bytes;

  bool operator==(const SavedHookState&) const = default;
};

}  // namespace hookhost
