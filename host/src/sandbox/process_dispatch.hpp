// The out-of-process isolation tier: a hook instance that lives in a hookhost-runner process,
// which opens the bytes the host verified (a sealed memfd passed to it, never the path) and runs
// the same unchanged plugin. Every call crosses a
// socketpair; every host call the plugin makes there comes back and is carried out on the
// instance's real hh_host, so results and validation are the in-process ones. A crash (any
// signal), an exit (any status), a call over its timeout, or a closed channel costs this hook
// only: the call fails with HH_ERROR_FATAL and CallResult::runner_lost, and names what happened.
// docs/isolation.md describes the design and its limits.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <hookhost/host.h>

#include "confine/policy.hpp"
#include "hookhost/host/hook_dispatch.hpp"
#include "hookhost/host/loader.hpp"
#include "hookhost/host/params.hpp"

namespace hookhost {

struct SandboxOptions {
  // Empty: hookhost-runner next to the running program (/proc/self/exe's folder), then on PATH.
  std::filesystem::path runner_program;
  std::chrono::milliseconds call_timeout{0};  // 0: no limit; a call over it kills the runner
  uint64_t memory_limit_mb = 0;               // 0: none; else RLIMIT_AS in the runner
  // The runner confines itself before any plugin code (docs/isolation.md, "Confinement"): to
  // `policy` when set, else to the baseline seccomp filter alone (files, network and processes
  // open). `confine_required`: a runner that cannot enforce all of it is not started.
  bool confine = true;
  bool confine_required = false;
  std::optional<confine::CapabilityPolicy> policy;
};

namespace sandbox {
class RunnerGroup;
}
using sandbox::RunnerGroup;

// Hook instances made with one group share one runner process (the configuration's
// isolation_group): fewer processes, but a crash there loses every member, and the members can
// see each other's memory. `options` gives the runner's memory limit; each member keeps its own
// call timeout.
std::shared_ptr<RunnerGroup> make_runner_group(const std::string& name,
                                               const SandboxOptions& options);

// Where hookhost-runner is found for `options` (the first candidate that is an executable file:
// SandboxOptions::runner_program, else $HOOKHOST_RUNNER, beside this program, the installed
// package's (set_installed_runner_program), on PATH), or empty with the places looked at in *tried.
std::filesystem::path find_runner_program(const SandboxOptions& options, std::string* tried);
// The runner of the installed package a test program was built against (<hookhost/testing.hpp>
// names it when the package's CMake configuration says where it is).
void set_installed_runner_program(const std::filesystem::path& program);

// Starts a runner (or uses `group`'s), sends it the plugin's private copy (private_plugin_copy's
// sealed memfd, made here from `plugin.file()` when `plugin` has none), checking first that the
// copy still hashes to `plugin.sha256()`; the runner opens it and checks the entry with the
// loader's check_entry (struct_size, ABI, create, state_version, every field of
// `plugin.metadata()`), then runs create() there with `params`. Every restart opens the same copy
// after the same hash check: the installed file is never read again. The plugin need not be loaded
// into this process. Throws ConfigError, naming the instance, plugin and file, with the plugin's
// message when create() fails, and with what happened when the runner cannot start or dies while
// loading or creating.
std::unique_ptr<HookDispatch> make_process_dispatch(const LoadedPlugin& plugin,
                                                    const std::string& instance_name,
                                                    const ResolvedParams& params,
                                                    const hh_host& host,
                                                    const SandboxOptions& options,
                                                    std::shared_ptr<RunnerGroup> group = nullptr);

// The dispatcher make_process_dispatch returns, for callers that want to look at its runner.
class ProcessDispatch : public HookDispatch {
 public:
  // The current (or last) runner's process id (shared by an isolation group).
  virtual pid_t runner_pid() const = 0;
  // True from the call that lost the runner until a restart() succeeds.
  virtual bool runner_lost() const = 0;
};

}  // namespace hookhost
