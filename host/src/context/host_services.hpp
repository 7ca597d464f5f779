// One hook instance's handle: the hh_host it sees, who it is, its saved state, and the job's
// services context its calls reach. Lives as long as the runtime, or forever for an instance whose
// create() the host refused (orphaned): a thread that create() started may go on calling, and
// every call is refused before it reaches `context`, which may be gone.
// Thread rules: the identity fields are set before create() and only read afterwards; `state` is
// under `state_mutex` (any thread); `ended` and `orphaned` are atomics (any thread); `group` and
// `dist_unusable` are the training thread's.
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <hookhost/host.h>

#include "hookhost/host/communicator.hpp"
#include "hookhost/host/hook_state.hpp"

namespace hookhost {

class ServiceContext;
class RunningCall;

struct HostServices {
  static constexpr uint64_t kMagic = 0x68682e686f737431ULL;  // "hh.host1"
  uint64_t magic = kMagic;
  hh_host c{};
  ServiceContext* context = nullptr;  // never read once `orphaned` is set
  std::atomic<bool> orphaned{false};
  std::string instance_name;
  std::string plugin_id;
  uint32_t state_version = 1;
  std::string plugin_build;  // HookSettings::plugin_build: the state it saves is tagged with it
  std::string run_dir;
  // A confined hook's: the folders its policy lets it write (HookSettings::write_roots). Not
  // empty: a path it hands a service is resolved beneath `run_dir` or one of these.
  std::vector<std::string> write_roots;
  std::string blame_name;  // "hook 'X' (plugin 'id', FILE)", prepared for a crash's last words
  std::shared_ptr<spdlog::logger> logger;
  std::atomic<bool> ended{false};  // end() returned: state_put, request_stop, services refuse
  // hh.steps/1 skip_until: steps whose context's global step is below it get no before_run or
  // after_run (any thread writes it; the training thread reads it at each step and clears it at a
  // new session and a restart).
  std::atomic<int64_t> skip_until{0};
  // hh.dist/1: the processes that run this instance (null: this process alone), and, once a
  // collective failed, why every later one is refused (training thread only).
  std::shared_ptr<Communicator> group;
  std::string dist_unusable;

  mutable std::mutex state_mutex;
  bool has_state = false;
  bool state_saved_by_plugin = false;  // by state_put, not restored from a checkpoint
  SavedHookState state;

  // The services behind a plugin-supplied pointer, or nullptr (logged) when it is not one this
  // host issued.
  static HostServices* from(const hh_host* host, const char* function);
  // Logs a refused call as plugin misbehaviour, naming the instance and plugin.
  void misuse(const char* function, const std::string& what) const;
};

// The instance whose lifecycle call is running on this thread ([hook-thread] checks).
extern constinit thread_local const HostServices* t_current_call;
// While an observer's worker calls it: the global step its call would have seen on the step
// (hh_host.global_step), since the live one has moved on. kNoObservedStep otherwise.
inline constexpr int64_t kNoObservedStep = INT64_MIN;
extern constinit thread_local int64_t t_observed_step;
// While an observer's worker calls it: the wall clock (ns since the epoch) when its step ran, for
// the records it writes through the host (hh_run_context.wall_time_ns). 0 otherwise.
extern constinit thread_local int64_t t_observed_wall_ns;
// While an observer's worker calls it: the worker's record of the call, which crash blame names
// (the training thread's record says what runs there). Null otherwise.
extern constinit thread_local const RunningCall* t_observer_call;

}  // namespace hookhost
