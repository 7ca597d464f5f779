// A sandboxed hook's capability policy (confine/policy.hpp), from what its plugin declares it needs
// (the note's needs.* lines) and what its config adds or takes away (allow_*, limit_*,
// memory_limit_mb). docs/isolation.md, "Confinement", lists the rules.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "confine/policy.hpp"
#include "job/job_plan.hpp"

namespace hookhost {

// The folder a confined hook writes its outputs to and sees as its run directory:
// <run_dir>/hooks/<instance>.
std::filesystem::path hook_run_dir(const std::filesystem::path& run_dir,
                                   const std::string& instance);

// The string values of parameter `name` (a string or each item of a string list), empty ones
// left out: the paths a needs.read.param or needs.write.param names.
std::vector<std::string> param_paths(const ResolvedParams& params, const std::string& name);

// Whether a confined hook may use the network / start processes: its allow_* key, else its
// plugin's declaration when the configuration says grant = declared.
bool network_granted(const EffectiveIsolation& iso, const PluginNeeds& needs);
bool processes_granted(const EffectiveIsolation& iso, const PluginNeeds& needs);

// Whether `path` is one of `roots` or beneath one of them, compared as written (`.` and `..`
// folded, no link followed): what a grant or an earlier policy covers.
bool beneath_any(const std::filesystem::path& path,
                 const std::vector<std::filesystem::path>& roots);

// The policy of `item`, whose run folder `own_run_dir` exists. What its plugin declares is granted
// only by the configuration (allow_*, grant = declared, a parameter's value) or when it lies
// beneath the hook's own folder (writes) or the system's folders (reads); anything else throws
// ConfigError naming each declaration and the key that would grant it. Read paths are absolute and
// exist; write paths are absolute and exist (the folder of a declared file that does not exist yet
// is made, as a hook would make it). Paths are named without the operator's symbolic links (the
// runner follows none); below `own_run_dir` they are kept as written. Throws ConfigError naming
// the hook, the key or the plugin's declaration, and the path, when a read path does not exist.
// With `made_folders`, the topmost folder each such creation made is added to it (`run --check`
// removes them at its end).
confine::CapabilityPolicy hook_policy(const JobConfig& cfg, const PlannedHook& item,
                                      const std::filesystem::path& own_run_dir,
                                      std::vector<std::filesystem::path>* made_folders = nullptr);

// Throws ConfigError when `policy` grants the control tokens' folder (control/token.hpp) or a
// folder above it: the hook could read the job's token and steer it through hookhost ctl.
void refuse_token_folder_grant(const JobConfig& cfg, const PlannedHook& item,
                               const confine::CapabilityPolicy& policy);

// The note's needs.* lines in words ("read /data; write the paths parameter 'out' names;
// network"), or "only its run folder".
std::string describe_needs(const PluginNeeds& needs);

// "read /data, /etc/x; write <run>/hooks/h; network; processes; limits cpu 60 s, files 100 MiB":
// the policy as one log fragment.
std::string describe_policy(const confine::CapabilityPolicy& policy);

}  // namespace hookhost
