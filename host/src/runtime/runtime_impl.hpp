// The runtime's internals, shared by the files of this folder: one hook instance's slot, the
// hh_host each instance sees, the per-step request a hook fills in before_run, and the lifecycle
// state that ties them together. Not installed; embedders see runtime.hpp only.
#pragma once

#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <hookhost/ext/device_values.h>

#include "hookhost/host/runtime.hpp"
#include "runtime/checkpoint_writer.hpp"
#include "services/event_writer.hpp"
#include "services/services.hpp"

namespace hookhost {

struct Slot;

// Where an instance is in its lifecycle. The runtime checks every call against it.
enum class HookState : uint8_t { created, begun, in_session, in_step, ended, destroyed };

// The services one instance sees through hh_host (services/host_table.cpp). Lives as long as the
// runtime, or forever for an instance whose create() the host refused (orphaned): a thread that
// create() started may go on calling, and every call is refused before it reaches `owner`, which
// may be gone.
struct HostServices {
  static constexpr uint64_t kMagic = 0x68682e686f737431ULL;  // "hh.host1"
  uint64_t magic = kMagic;
  hh_host c{};
  Runtime::Impl* owner = nullptr;  // never read once `orphaned` is set
  std::atomic<bool> orphaned{false};
  std::string instance_name;
  std::string plugin_id;
  uint32_t state_version = 1;
  std::string run_dir;
  std::string blame_name;  // "hook 'X' (plugin 'id', FILE)", prepared for a crash's last words
  std::shared_ptr<spdlog::logger> logger;
  std::atomic<bool> ended{false};  // end() returned: state_put, request_stop, services refuse
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

// Collects one hook's fetches and feeds during its before_run (step_request.cpp). One per slot, so
// a request a plugin keeps past its before_run points at a live object that says it is closed.
// Standard layout with the C struct first: a request pointer converts back to its builder. It is
// open while its slot's before_run runs on this thread (the runtime's running call says so), so
// opening and closing it costs the step nothing.
struct RequestBuilder {
  static constexpr uint64_t kMagic = 0x68682e7265713031ULL;  // "hh.req01"
  hh_run_request c;
  uint64_t magic;
  Runtime::Impl* owner;
  Slot* slot;
};
void init_request(RequestBuilder& builder, Runtime::Impl* owner, Slot* slot);

struct alignas(64) Slot {  // the hot fields below share the first cache line
  // Read or written by every step's calls: kept together at the front, in one cache line.
  HookState state = HookState::created;
  bool disabled = false;
  // Calls the plugin's functions directly: it runs in this process, has no call_timeout (the
  // watchdog needs each call's start) and timing is sampled.
  bool direct_step_calls = false;
  // add_fetch or add_feed was called in this before_run: its request needs looking at.
  bool request_touched = false;
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
  uint32_t restarts = 0;  // of its process (another isolation tier), for on_crash = restart
  bool runner_lost = false;  // its process is gone: not even end() is delivered
  std::string failure;
  std::array<CallStats, kCallbackNames.size()> stats{};
  // stats with the direct calls counted in.
  CallStats stats_of(Callback callback) const {
    CallStats st = stats[static_cast<size_t>(callback)];
    if (callback == Callback::before_run) st.calls += direct_calls[0];
    if (callback == Callback::after_run) st.calls += direct_calls[1];
    return st;
  }
};

struct Runtime::Impl {
  Session& session;
  RuntimeOptions options;
  Runtime* owner_runtime = nullptr;
  std::shared_ptr<spdlog::logger> log;
  std::vector<std::unique_ptr<Slot>> slots;  // in resolved order after start()
  std::set<std::string, std::less<>> fetchable;
  std::set<std::string, std::less<>> feedable;

  bool started = false;
  bool closed = false;
  bool end_of_data = false;
  bool failed = false;
  bool in_call = false;  // a runtime entry point is running: re-entry is refused
  int creation = 0;
  int64_t steps_run = 0;
  std::atomic<int64_t> live_step{0};
  // session.last_step() (-1: unknown), copied on the training thread for hooks' other threads.
  std::atomic<int64_t> workload_last_step{-1};
  void read_workload_steps() {
    live_step = session.global_step();
    workload_last_step = session.last_step().value_or(-1);
  }
  std::atomic<bool> stop_requested{false};
  mutable std::mutex stop_mutex;
  hh_stop_cause stop_cause = HH_STOP_CAUSE_NONE;
  std::string stop_reason;
  std::string failure_reason;
  bool failure_logged = false;  // the cause already has its own log line
  JobResult result;

  // Checkpoints requested since the last step boundary, and the newest one written
  // (checkpoints.cpp). The snapshot is taken at the boundary; checkpoint_writer writes it in the
  // background, one at a time, and must be idle before the members it uses go (~Runtime waits).
  std::atomic<bool> checkpoint_requested{false};
  mutable std::mutex checkpoint_mutex;
  std::string checkpoint_reasons;
  std::optional<WrittenCheckpoint> newest_checkpoint;
  // A distributed job's chief: the newest checkpoint as last told to the other processes, which
  // keep the chief's in newest_checkpoint (step_boundary.cpp).
  std::optional<WrittenCheckpoint> shared_checkpoint;
  uint64_t checkpoint_failures = 0;  // under checkpoint_mutex, with the last one's error
  std::string checkpoint_error;
  CheckpointWriter checkpoint_writer{[this](const CheckpointSave& save) { write_snapshot(save); }};
  // States restored from a checkpoint, given to each instance as it is created.
  std::map<std::string, SavedHookState> restored_states;

  // This job's TensorBoard writers, one per folder (hh.summary/1).
  EventWriters event_writers;
  // What get_service hands out (services/).
  ServiceRegistry services;

  // The hook call running now, for a second signal's last words (read from another thread).
  std::atomic<const Slot*> running_slot{nullptr};
  std::atomic<int> running_callback{-1};
  // The global step the running call concerns, as its error line would say it: the context's
  // step for before_run and after_run (after_run runs once the live step has moved on).
  std::atomic<int64_t> running_step{0};
  // An instance's create() or destroy() running now: there is no slot (yet, or any more) to name,
  // so crash blame names these services and this call instead.
  std::atomic<const HostServices*> instance_call{nullptr};
  std::atomic<const char*> instance_call_name{nullptr};
  // When the running call started (steady clock) and which call it is, for the watchdog.
  std::atomic<int64_t> running_since_ns{0};
  std::atomic<int64_t> call_serial{0};
  std::unique_ptr<class CallWatchdog> watchdog;  // only when a hook has a call timeout

  // The slots a step calls: active, implementing before_run or after_run, in order. Rebuilt after
  // a hook is disabled, so a hook with neither callback costs nothing per step.
  std::vector<Slot*> step_slots;
  bool step_slots_stale = true;
  hh_error call_error{};  // reused by every direct call (reset_error: not the message buffer)
  bool timed_step = false;          // this step's per-step calls are timed
  uint32_t untimed_steps_left = 0;  // before the next timed step

  // The caller's fetch list as last checked against the workload, so an unchanged list is
  // checked with one comparison per step instead of a set lookup per name.
  std::vector<std::string> checked_fetches;
  std::vector<hh_tensor> views_buffer;
  // This step's fetches and feeds once a hook added some (the caller's are used as they are
  // otherwise), and who gave each hook feed.
  bool hooks_fetch = false;
  bool hooks_feed = false;
  const TensorMap* caller_feeds = nullptr;
  std::vector<std::string> step_fetches;
  TensorMap merged_feeds;
  std::map<std::string, std::string, std::less<>> feed_owner;

  Impl(Session& s, RuntimeOptions o);

  // A distributed job (options.communicator): whether the processes agreed to end the job at the
  // last step boundary. Until they do, a local stop or failure does not end this process's loop,
  // so no process leaves the others waiting in a collective.
  bool agreed_stop = false;

  void request_stop(hh_stop_cause cause, const std::string& reason);
  void fail_job(const std::string& reason);
  bool should_stop() const {
    if (options.communicator) return closed || agreed_stop;
    return closed || failed || end_of_data || stop_requested.load();
  }
  // The step boundary: a distributed job's processes agree on the outcome and on a checkpoint,
  // which is then taken (agree_across_processes); a single process takes a requested checkpoint.
  // Inline, so a single process pays one flag load per step for it.
  void step_boundary() {
    if (options.communicator)
      agree_across_processes();
    else if (checkpoint_requested.load(std::memory_order_relaxed))
      write_requested_checkpoint();
  }
  // One collective on every process of a distributed job (step_boundary.cpp), then the
  // checkpoint it decided, if any. Without `decide_checkpoint` a pending request waits for the
  // next boundary (a recovery agrees before the session's state is restored).
  void agree_across_processes(bool decide_checkpoint = true);
  bool chief_checkpoint_unshared() const;
  // Collective: every process learns the chief's newest completed checkpoint.
  void share_chief_checkpoint();
  // A slot gets no more calls but end(); the step's slot list is rebuilt before the next step.
  void disable(Slot& slot) {
    slot.disabled = true;
    step_slots_stale = true;
  }
  void refresh_step_slots() {
    if (step_slots_stale) rebuild_step_slots();
  }
  void rebuild_step_slots();

  std::unique_ptr<HostServices> make_services(const HookSettings& settings,
                                              const std::string& plugin_id, uint32_t state_version);
  std::map<std::string, SavedHookState> collect_hook_states() const;

  // checkpoints.cpp: a request is recorded at once [thread-safe] and carried out at the next
  // step boundary by write_requested_checkpoint (never when the job failed), which takes the
  // snapshot and hands it to checkpoint_writer; write_snapshot runs on the writer's thread.
  void record_checkpoint_request(const std::string& reason);
  void write_requested_checkpoint();
  // A distributed job's checkpoint: every process's hook states go to the chief, which writes.
  void write_agreed_checkpoint();
  void write_snapshot(const CheckpointSave& save);
  // Logs a checkpoint that could not be written and counts it for the job's result. [thread-safe]
  void checkpoint_failed(int64_t global_step, const std::string& reasons, const std::string& why);
  // Waits for the save in flight, then snapshots the workload and `hook_states()` at this boundary
  // for the writer.
  void submit_snapshot(std::string reasons,
                       const std::function<std::map<std::string, SavedHookState>()>& hook_states);
  // Returns once no save is in flight. [thread-safe]
  void wait_for_checkpoints();
  // The newest checkpoint completed. [thread-safe]
  std::optional<WrittenCheckpoint> last_checkpoint() const;
  std::filesystem::path checkpoint_folder() const;
  // Gives `services` the state restored for its instance, unless another plugin saved it.
  void adopt_restored_state(HostServices& services) const;
};

std::string join_names(const std::vector<std::string>& items);

}  // namespace hookhost
