// What a Runtime is made of: the job's state (JobState), the running call, the hooks and the calls
// into them (StepEngine), the services with the context they see, the event writers and the
// checkpoint writer. This façade composes them and runs the step boundary, recovery and
// checkpoints; each part owns its data and states its own thread rules.
// Not installed; embedders see runtime.hpp only.
#pragma once

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "context/host_services.hpp"
#include "context/job_state.hpp"
#include "context/running_call.hpp"
#include "context/service_context.hpp"
#include "hookhost/host/runtime.hpp"
#include "runtime/agreed_changes.hpp"
#include "runtime/change_queue.hpp"
#include "runtime/step_agreement.hpp"
#include "runtime/step_engine.hpp"
#include "services/services.hpp"
#include "storage/checkpoint_writer.hpp"
#include "storage/event_writer.hpp"

namespace hookhost {

struct Runtime::Impl {
  Session& session;
  RuntimeOptions options;
  Runtime* owner_runtime = nullptr;
  std::shared_ptr<spdlog::logger> log;

  // Training thread (the thread that calls the Runtime's entry points).
  bool started = false;
  bool closed = false;
  bool in_call = false;  // a runtime entry point is running: re-entry is refused
  int creation = 0;
  int64_t steps_run = 0;
  JobResult result;
  // The caller's fetch list as last checked against the workload, so an unchanged list is
  // checked with one comparison per step instead of a set lookup per name.
  std::vector<std::string> checked_fetches;
  // Live changes (Runtime::at_next_boundary), run at the step boundary.
  ChangeQueue changes;
  void run_changes();  // live_changes.cpp
  // A distributed job's live changes, agreed at a boundary and made on every process there.
  AgreedChanges agreed_changes;
  void share_agreed_changes();  // live_changes.cpp
  // For progress() from other threads: stored once per step (a plain store), and at start().
  std::atomic<int64_t> steps_run_shared{0};
  std::atomic<bool> started_shared{false};
  // States restored from a checkpoint, given to each instance as it is created.
  std::map<std::string, SavedHookState> restored_states;

  // The step, stops, failure and checkpoint requests: the parts hooks' threads may reach.
  JobState job;
  // The hook call running now, for those that name it from another thread.
  RunningCall running;
  // The snapshot is taken at the boundary; checkpoint_writer writes it in the background, one at a
  // time, and must be idle before the members it uses go (~Runtime waits).
  CheckpointWriter checkpoint_writer{[this](const CheckpointSave& save) { write_snapshot(save); }};
  // This job's TensorBoard writers, one per folder (hh.summary/1).
  EventWriters event_writers;
  // What get_service hands out (services/), and what the services see of the job.
  ServiceRegistry services;
  ServiceContext service_context;
  // The hooks, their slots and every call into them.
  StepEngine engine;
  // A distributed job's step boundary (options.communicator); none for a single process.
  std::optional<StepAgreement> agreement;

  Impl(Session& s, RuntimeOptions o);

  void read_workload_steps() {
    job.set_global_step(session.global_step());
    job.set_workload_last_step(session.last_step().value_or(-1));
  }
  bool should_stop() const {
    if (agreement) return closed || agreement->job_ends();
    return closed || job.failed() || job.end_of_data() || job.stop_requested();
  }
  // The step boundary: a distributed job's processes agree on the outcome and on a checkpoint,
  // which is then taken (agree_across_processes); a single process takes a requested checkpoint.
  // Inline, so a single process pays one flag load per step for it.
  [[gnu::always_inline]] void step_boundary() {
    if (agreement)
      agree_across_processes();
    else if (job.checkpoint_requested(std::memory_order_relaxed))
      write_requested_checkpoint();
    if (changes.waiting()) [[unlikely]]
      run_changes();
  }
  // The agreement (StepAgreement::agree), then the checkpoint and the live changes it decided.
  void agree_across_processes(bool decide_requests = true) {
    const StepAgreement::Decision decision =
        agreement->agree(decide_requests, decide_requests && agreed_changes.waiting());
    if (decision.checkpoint) write_agreed_checkpoint();
    if (decision.changes) share_agreed_changes();
  }

  // The workload's session, created (again); false when the job failed.
  bool create_session();
  // After a recoverable error: a new session, on_recover, after_create_session again.
  bool recover(int attempt, const std::string& message);

  std::unique_ptr<HostServices> make_services(const HookSettings& settings,
                                              const std::string& plugin_id, uint32_t state_version);
  // Checked before a plugin instance is created, so a refused hook is never created at all.
  void check_can_add(const HookSettings& settings) const;
  // A new hook joins: added before start(); inside a change, also attached (begin and
  // after_create_session with the live step).
  void place(std::unique_ptr<Slot> slot);
  std::map<std::string, SavedHookState> collect_hook_states() const;

  // checkpoints.cpp: a request is recorded at once [thread-safe] and carried out at the next
  // step boundary by write_requested_checkpoint (never when the job failed), which takes the
  // snapshot and hands it to checkpoint_writer; write_snapshot runs on the writer's thread.
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
  uint64_t checkpoints_skipped = 0;  // replaced before they were written (training thread)
  uint64_t checkpoint_waits = 0;     // waited for the previous write (training thread)
  std::chrono::nanoseconds checkpoint_wait_time{0};
  std::filesystem::path checkpoint_folder() const;
  // Gives `services` the restored state of its instance name, once: a later hook of the same name
  // (detached, then attached again) starts without it. Not when another plugin saved it, nor when
  // another build of its plugin did and `settings.resume_state` is same_build (each logged).
  void adopt_restored_state(HostServices& services, const HookSettings& settings);

  // run_events.cpp: tells options.on_event (nothing when it is empty); what it throws is logged.
  // [thread-safe] as on_event is.
  void emit(RunEvent::Kind kind, int64_t global_step, std::string hook, std::string text,
            std::chrono::system_clock::time_point at = std::chrono::system_clock::now());
  // Connects the job's state and the engine to emit(); once, in the constructor.
  void connect_run_events();
};

}  // namespace hookhost
