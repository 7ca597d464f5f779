// What a distributed job's processes send each other besides numbers: hook states gathered at the
// chief for a checkpoint, and the restored checkpoint broadcast from the chief on resume, so the
// nodes need no shared filesystem. One checkpoint file holds every process's hook states: the
// chief's under the instance name, process R's under "NAME@R".
#pragma once

#include <map>
#include <string>

#include "hookhost/host/hook_state.hpp"
#include "storage/checkpoint.hpp"

namespace hookhost {

using HookStates = std::map<std::string, SavedHookState>;

// The checkpoint key of an instance's state on process `rank`.
std::string rank_state_key(const std::string& instance, int rank);
// Process `rank`'s states out of a checkpoint's, under their instance names.
HookStates states_of_rank(const HookStates& all, int rank);

// The entry of a checkpoint's hook states that holds a process's Session::save_rank_state(), under
// a name no instance can have (with a ':'); per rank like an instance's state.
inline constexpr const char* kRankWorkloadEntry = "hookhost:rank-workload";

// Length-prefixed encodings for the wire (not a file format: both ends run the same program).
std::string encode_hook_states(const HookStates& states);
HookStates decode_hook_states(const std::string& bytes);
std::string encode_checkpoint_message(const Checkpoint& checkpoint);
Checkpoint decode_checkpoint_message(const std::string& bytes);

}  // namespace hookhost
