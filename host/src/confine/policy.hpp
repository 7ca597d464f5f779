// A sandboxed hook's capability policy: what its runner may touch once confined (docs/isolation.md,
// "Confinement"). The host builds it from the plugin's declared needs and the hook's config keys,
// resolves every path, and hands it to the runner on its command line; the runner applies it to
// itself before it loads any plugin code (confine/apply.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hookhost::confine {

// Resource limits (setrlimit), each 0 for "not set".
struct ResourceLimits {
  uint64_t address_space_mb = 0;  // RLIMIT_AS (memory_limit_mb)
  uint64_t cpu_seconds = 0;       // RLIMIT_CPU: past it the kernel sends SIGXCPU, then SIGKILL
  uint64_t file_size_mb = 0;      // RLIMIT_FSIZE: a write past it fails with EFBIG
  uint64_t open_files = 0;        // RLIMIT_NOFILE
  uint64_t processes = 0;         // RLIMIT_NPROC (counts every thread of the user)

  bool operator==(const ResourceLimits&) const = default;
};

struct CapabilityPolicy {
  // Absolute paths of files or folders that exist when the runner starts (Landlock binds rules to
  // what they name then). Reads below `read`; reads, writes, creates and removes below `write`.
  // The system's runtime (/usr, /lib, ...: system_read_paths()) is added by the runner.
  std::vector<std::string> read;
  std::vector<std::string> write;
  bool network = false;    // sockets other than AF_UNIX, connect, TCP bind
  bool processes = false;  // fork, vfork, clone without CLONE_THREAD, execve, execveat
  // chmod, chown, utimes, xattrs (and truncate by path under Landlock ABI < 3), on any file the
  // user owns: seccomp cannot see a path and Landlock does not govern these, so all or nothing.
  // The host grants it with writes beyond the hook's own run folder.
  bool metadata = false;
  // False: no Landlock, every file the user may reach stays open (`read` and `write` unused): the
  // seccomp filter alone, for a runner an embedder starts without a policy.
  bool restrict_files = true;
  ResourceLimits limits;

  bool operator==(const CapabilityPolicy&) const = default;
};

// What every confined runner may read besides the policy's paths: the dynamic loader's and the C
// and C++ runtimes' files, and /proc/<runner> (`runner`: 0 for the calling process).
std::vector<std::string> system_read_paths(int runner = 0);

// Whether the policy gives the runner `runner` the access to the absolute path `path` (compared
// by name, as written: a symbolic link inside an allowed folder that leads out of it is not
// followed). Used to tell a refusal of the policy from one of the file's own permissions.
bool policy_allows(const CapabilityPolicy& policy, int runner, const std::string& path, bool write);

// The runner's command-line arguments that carry `policy` ("--read", PATH, ..., "--network", ...,
// "--files-open"),
// and the reading of them: parse_runner_arg consumes argv[*i] (and the value after it), advancing
// *i past what it read, and returns false when argv[*i] is not one of them; a malformed value sets
// *error.
std::vector<std::string> runner_args(const CapabilityPolicy& policy);
bool parse_runner_arg(int argc, char** argv, int* i, CapabilityPolicy* policy, std::string* error);

}  // namespace hookhost::confine
