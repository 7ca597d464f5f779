// The job configuration: an INI file plus SECTION.KEY=VALUE overrides from the command line.
// Sections and keys are part of the public interface:
//   [run]       plugin_dir (may repeat), run_dir, log_level, on_error, distributed, ...
//   [workload]  name, and that workload's parameters
//   [hook.NAME] plugin (default NAME), enabled, order, on_error, ranks, ..., and the plugin's
//               parameters
#pragma once

#include <array>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hook_keys.hpp"
#include "params.hpp"
#include "runtime.hpp"

namespace hookhost {

// Where a key came from, for error messages: "demo.ini:12" or "--set hook.x.y=1".
struct ConfigSource {
  std::string origin;  // file name, or "--set"
  int line = 0;        // 0 when unknown or from the command line
  std::string describe() const;
};

// Where a hook instance runs: in the host's process, or in a hookhost-runner process of its own
// that a crash, exit or hang cannot take the job down from.
enum class Isolation { in_process, process };
const char* isolation_name(Isolation isolation);

// Which runners confine themselves to their hook's capability policy before the plugin's code
// runs (docs/isolation.md, "Confinement"): none; every isolation = process hook's; those and every
// hook of a plugin that is not built in, which then runs with isolation = process
// (all_untrusted, [run] only); or every sandboxed hook's, refusing to start one whose policy the
// kernel cannot enforce in full (required).
enum class Confinement { off, sandboxed, all_untrusted, required };
const char* confinement_name(Confinement confinement);  // "off", "sandboxed", "all-untrusted", ...

// The call limit of a sandboxed hook that sets none: a hang is contained, not waited out.
inline constexpr uint64_t kSandboxedCallTimeoutMs = 60000;

// The isolation settings a [run] section gives every hook and a [hook.NAME] section may override.
struct IsolationConfig {
  std::optional<Isolation> isolation;
  // 0: none. Unset: none in process, kSandboxedCallTimeoutMs with isolation = process.
  std::optional<uint64_t> call_timeout_ms;
  std::optional<uint64_t> memory_limit_mb;  // 0: none (process isolation only)
  std::optional<CrashPolicy> on_crash;      // what a lost runner leads to
  std::optional<uint32_t> max_restarts;     // restarts of one instance before it is disabled
  // Sandboxed instances with the same group name share one runner process (empty: none).
  std::optional<std::string> isolation_group;
  // Confinement: whether, and what the policy adds to what the plugin declares it needs. Paths
  // are absolute (a config file's relative ones are taken from its folder).
  std::optional<Confinement> confine;
  std::optional<std::vector<std::filesystem::path>> allow_read;
  std::optional<std::vector<std::filesystem::path>> allow_write;
  std::optional<bool> allow_network;    // unset: as the plugin declares; false narrows
  std::optional<bool> allow_processes;  // unset: as the plugin declares; false narrows
  // grant = declared: every need the plugin declares is granted as declared. Unset or none: only
  // what the allow_* keys grant (and the hook's own run folder, the system's libraries).
  std::optional<bool> grant_declared;
  std::optional<uint64_t> limit_cpu_secs;  // 0: none
  std::optional<uint64_t> limit_file_mb;
  std::optional<uint64_t> limit_open_files;
  std::optional<uint64_t> limit_processes;
};

// Which processes of a distributed job run a hook instance ([hook.NAME] ranks): the chief
// (rank 0), every process, or the listed ranks. A job of one process is rank 0.
struct RankSelection {
  enum class Kind { chief, all, listed };
  Kind kind = Kind::all;
  std::vector<int> listed;  // Kind::listed: ascending, no repeats
  bool includes(int rank) const;
  std::string text() const;  // "chief", "all" or "0,2"
};

// How many processes run the job: one, or as many as an MPI launcher started ([run] distributed).
enum class Distribution { none, mpi };

struct HookConfig {
  std::string name;    // the instance name, from [hook.NAME]
  std::string plugin;  // plugin id
  bool enabled = true;
  int order = 0;
  std::optional<FailurePolicy> on_error;  // unset: the job's [run] on_error
  IsolationConfig isolation;              // unset fields: the [run] ones
  std::string sha256;  // pinned SHA-256 of the plugin file (64 lowercase hex digits), or empty
  std::optional<RankSelection> ranks;    // unset: the plugin's default (job/rank_placement.hpp)
  std::optional<std::string> log_level;  // this instance's logger; unset: [run] log_level
  // Whether a state another build of the plugin saved is resumed; unset: same_build.
  std::optional<ResumeState> resume_state;
  std::multimap<std::string, std::string> params;  // the plugin's own keys, as text
  ConfigSource section_source;
  std::map<std::string, ConfigSource> key_sources;
};

struct JobConfig {
  std::optional<std::filesystem::path> file;  // the config file, if any
  std::vector<std::filesystem::path> plugin_dirs;
  std::filesystem::path run_dir = "hookhost-run";
  std::string log_level = "info";
  std::size_t max_state_bytes = HH_DEFAULT_MAX_STATE;    // [run] max_state_mb
  std::filesystem::path checkpoint_dir = "checkpoints";  // relative: from the run directory
  uint32_t keep_checkpoints = 5;                         // newest by step; 0 keeps all
  bool checkpoint_wait = true;                           // RuntimeOptions::checkpoint_wait
  uint32_t time_every_n_steps = 64;                      // RuntimeOptions::time_every_n_steps
  FailurePolicy on_error = FailurePolicy::disable;
  IsolationConfig isolation;  // defaults for every hook; unset fields: the built-in defaults
  // [run] untrusted: where a hook whose isolation is set nowhere runs when its plugin imports
  // process-wide calls (exit, fork, signal, ...) or its imports cannot be read.
  Isolation untrusted = Isolation::in_process;
  Distribution distributed = Distribution::none;
  std::optional<ConfigSource> distributed_source;  // where [run] distributed was set
  uint32_t collective_timeout_ms = 60000;          // RuntimeOptions::collective_timeout (hh.dist/1)
  bool allow_insecure_plugins = false;             // load plugins that fail the trust rules
  std::vector<std::string> allowed_plugins;  // when not empty, the only plugin ids hooks may use
  std::string workload = "linreg";
  std::optional<ConfigSource> workload_section;  // the [workload] header, when there is one
  std::multimap<std::string, std::string> workload_params;
  std::map<std::string, ConfigSource> workload_sources;
  std::vector<HookConfig> hooks;  // in file order (then --set order for new sections)

  // "file:line: " for a hook's key (or its section when the key has no source), for messages.
  std::string where(const HookConfig& hook, const std::string& key = {}) const;
  std::string where_workload(const std::string& key) const;
};

// The largest config file read; anything bigger is refused (it is not a job file).
inline constexpr std::size_t kMaxConfigBytes = 1024 * 1024;

// Reads `file` (when given) and applies `overrides` ("section.key=value", e.g.
// "hook.progress.every_n_secs=1", "run.log_level=debug", "workload.epochs=5"). Throws ConfigError
// naming the file, the line, the section and the key: syntax errors, unknown sections or keys,
// bad values for run/hook keys, a section or key given twice, a bad override. `file` must be a
// regular file of at most kMaxConfigBytes. A value may be "quoted" (\" and \\ escape); outside
// quotes, a space or tab then ';' or '#' starts a comment, and a ';' or '#' right after other text
// is refused. Override values are literal. Relative run_dir, plugin_dir and [workload] data paths
// from the file are taken from the file's folder; from an override, from the current folder.
JobConfig load_job_config(const std::optional<std::filesystem::path>& file,
                          const std::vector<std::string>& overrides);

// Applies overrides of [hook.NAME] keys ("hook.NAME.KEY=VALUE") to `cfg`, read exactly as
// load_job_config reads --set, with messages naming `via` where they would say "--set" (e.g.
// "hookhost ctl attach"). A later override of a key replaces the earlier one. Throws ConfigError.
void apply_hook_overrides(JobConfig& cfg, const std::vector<std::string>& overrides,
                          const std::string& via);

}  // namespace hookhost
