// One hook instance as the runtime holds it: its lifecycle state, its dispatch (and, in this
// process, its per-step function pointers), its services handle, this step's request, its policy
// settings and statistics. Owned by the StepEngine, used on the training thread only (the request
// builder is reached from the hook's before_run on that thread).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "context/host_services.hpp"
#include "hookhost/host/runtime.hpp"

namespace hookhost {

class StepEngine;
struct Slot;
class ObserverLane;
class RunningCall;
struct LaneDeleter {
  void operator()(ObserverLane* lane) const;  // observer_lane.cpp
};

// Where an instance is in its lifecycle. The runtime checks every call against it.
enum class HookState : uint8_t { created, begun, in_session, in_step, ended, destroyed };

// Collects one hook's fetches and feeds during its before_run (step_request.cpp). One per slot, so
// a request a plugin keeps past its before_run points at a live object that says it is closed.
// Standard layout with the C struct first: a request pointer converts back to its builder. It is
// open while its slot's before_run runs on this thread (the runtime's running call says so), so
// opening and closing it costs the step nothing.
struct RequestBuilder {
  static constexpr uint64_t kMagic = 0x68682e7265713031ULL;  // "hh.req01"
  hh_run_request c;
  uint64_t magic;
  StepEngine* engine;
  Slot* slot;
};
void init_request(RequestBuilder& builder, StepEngine* engine, Slot* slot);

struct alignas(64) Slot {  // the hot fields below share the first cache line
  // Read or written by every step's calls: kept together at the front, in one cache line.
  HookState state = HookState::created;
  bool disabled = false;
  // Calls the plugin's functions directly: it runs in this process, has no call_timeout (the
  // watchdog needs each call's start) and timing is sampled.
  bool direct_step_calls = false;
  // add_fetch or add_feed was called in this before_run: its request needs looking at.
  bool request_touched = false;
  // settings.step_filter is set: each step asks step_called() first.
  bool step_filtered = false;
  std::array<bool, kCallbackNames.size()> implements{};
  // The plugin's per-step functions when it runs in this process, copied at create() like the
  // dispatcher's: the runtime calls them directly (no virtual call, no CallResult unless the call
  // fails). Null for another isolation tier or a test double.
  hh_hook* direct_hook = nullptr;
  decltype(hh_hook::before_run) direct_before_run = nullptr;
  decltype(hh_hook::after_run) direct_after_run = nullptr;
  std::unique_ptr<HostServices> services;
  // Direct before_run and after_run calls, added to stats when reported.
  std::array<uint64_t, 2> direct_calls{};
  // This step's request. Its C fields are the host's: a plugin that overwrites them breaks only
  // its own later calls.
  RequestBuilder request{};
  std::vector<std::string> fetches;
  std::string request_error;
  TensorMap feeds;

  HookSettings settings;
  size_t added_index = 0;
  std::shared_ptr<const LoadedPlugin> plugin;  // keeps metadata alive; libraries never unload
  std::unique_ptr<HookDispatch> dispatch;
  bool begin_called = false;
  uint32_t restarts = 0;     // of its process (another isolation tier), for on_crash = restart
  bool runner_lost = false;  // its process is gone: not even end() is delivered
  // Taken off the running job (StepEngine::detach): ended and destroyed, kept for the report; its
  // name may be used again.
  bool detached = false;
  std::string detach_reason;
  // Its runner was killed from another thread to detach it (StepEngine::interrupt): the call that
  // fails for it is no failure of the hook's, and brings no restart.
  std::atomic<bool> interrupted{false};
  std::string failure;
  std::array<CallStats, kCallbackNames.size()> stats{};
  uint64_t filtered_steps_seen = 0;  // steps step_called() was asked about, for first_n
  uint64_t steps_skipped = 0;        // steps the filter kept from the hook
  // An observer's worker (settings.observer), started with the engine; its running call, which
  // the request checks accept besides the training thread's.
  std::unique_ptr<ObserverLane, LaneDeleter> lane;
  const RunningCall* worker_running = nullptr;
  // This step's before_run of an observer ran on the training thread (its first step): after_run
  // hands what it asked for to the worker with the step.
  bool observer_first_pending = false;
  // stats with the direct calls counted in.
  CallStats stats_of(Callback callback) const {
    CallStats st = stats[static_cast<size_t>(callback)];
    if (callback == Callback::before_run) st.calls += direct_calls[0];
    if (callback == Callback::after_run) st.calls += direct_calls[1];
    return st;
  }
};

// Whether the filtered slot's before_run and after_run are called on the step whose context
// carries `global_step` (asked once per step, before its before_run).
bool step_called(Slot& slot, int64_t global_step);

}  // namespace hookhost
