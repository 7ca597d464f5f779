// A hook instance's saved state as checkpoints keep it: the bytes it gave state_put, tagged with
// the plugin that wrote them, that plugin's state version and the build of the plugin (its file's
// SHA-256), so a resumed instance never gets another plugin's bytes, gets another build's only
// when its configuration says so (resume_state = any_build), and a plugin can tell an older
// format from its own.
#pragma once

#include <cstdint>
#include <string>

namespace hookhost {

struct SavedHookState {
  std::string plugin_id;  // empty when unknown (checkpoint format 1): any plugin may take it
  uint32_t state_version = 1;
  std::string bytes;
  // The SHA-256 (64 lowercase hex digits) of the plugin file's bytes as the host loaded them
  // (LoadedPlugin::sha256); empty when unknown (a checkpoint written before hookhost recorded it,
  // or a hook that is no plugin file): any build may take it.
  std::string plugin_build{};

  bool operator==(const SavedHookState&) const = default;
};

}  // namespace hookhost
