// Checkpoints at the step boundary. Hooks only ask (hh.checkpoint/1, Runtime::request_checkpoint);
// once the phase is over the runtime takes a snapshot, so the workload's state and every hook's
// state are taken at one moment whatever the hook order, and never while a step runs. The files
// are written in the background (checkpoint_writer.hpp): the training thread pays for the copy
// only.
#include "storage/checkpoint.hpp"
#include "storage/event_writer.hpp"

#include "distributed/state_transfer.hpp"
#include "runtime_impl.hpp"

namespace hookhost {

std::filesystem::path Runtime::Impl::checkpoint_folder() const {
  const auto& dir = options.checkpoint_dir;
  return dir.is_relative() ? options.run_dir / dir : dir;
}

void Runtime::Impl::write_requested_checkpoint() {
  if (!job.take_checkpoint_flag()) return;
  std::string reasons = job.take_checkpoint_reasons();
  if (job.failed()) {
    wait_for_checkpoints();  // the newest is the last one asked for before the failure
    const auto newest = job.last_checkpoint();
    log->warn(
        "not writing the checkpoint requested by {}: the job failed, and a failed job never "
        "replaces a good checkpoint{}",
        reasons, newest ? " (the newest is " + newest->file.string() + ")" : std::string());
    return;
  }
  // Every observer has seen every step up to this one: its state is this step's.
  engine.drain_observers();
  submit_snapshot(std::move(reasons), [this] { return collect_hook_states(); });
}

void Runtime::Impl::submit_snapshot(
    std::string reasons,
    const std::function<std::map<std::string, SavedHookState>()>& hook_states) {
  CheckpointSave save;
  save.reasons = std::move(reasons);
  save.checkpoint.global_step = job.global_step();
  // checkpoint_wait: at most one save in flight, waited for before the snapshot, so no more than
  // one snapshot exists besides the live state. The state cannot change meanwhile: this is the
  // training thread. Otherwise the snapshot waits behind the write (at most two besides the live
  // state, three while one replaces another).
  if (options.checkpoint_wait && checkpoint_writer.busy()) {
    log->debug("the checkpoint at global step {} waits for the one being written",
               save.checkpoint.global_step);
    const auto started = std::chrono::steady_clock::now();
    checkpoint_writer.wait_idle();
    ++checkpoint_waits;
    checkpoint_wait_time += std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::steady_clock::now() - started);
  }
  try {
    save.checkpoint.workload_state = session.save_state();
    save.checkpoint.hook_states = hook_states();
    if (options.checkpoint_job_entries)
      for (auto& [name, entry] : options.checkpoint_job_entries())
        save.checkpoint.hook_states.insert_or_assign(name, std::move(entry));
    if (options.checkpoint_wait) {
      checkpoint_writer.submit(std::move(save));
      return;
    }
    const int64_t step = save.checkpoint.global_step;
    const auto replaced = checkpoint_writer.submit_replacing(std::move(save));
    if (replaced && ++checkpoints_skipped == 1)
      log->warn(
          "the checkpoint at global step {} (requested by {}) was not written: the one at global "
          "step {} replaced it while an earlier one was still being written; later skips are "
          "counted in the job's summary ([run] checkpoint_wait = true writes every requested "
          "checkpoint, the step waiting for the disk)",
          replaced->global_step, replaced->reasons, step);
  } catch (const std::exception& e) {
    checkpoint_failed(save.checkpoint.global_step, save.reasons, e.what());
  }
}

void Runtime::Impl::checkpoint_failed(int64_t global_step, const std::string& reasons,
                                      const std::string& why) {
  log->error("could not write the checkpoint at global step {} requested by {}: {}", global_step,
             reasons, why);
  job.count_checkpoint_failure("global step " + std::to_string(global_step) + ": " + why);
}

void Runtime::Impl::write_snapshot(const CheckpointSave& save) {
  try {
    // Events written before the checkpoint must survive a crash after it: a resume never replays
    // the steps that wrote them.
    event_writers.flush_all();
  } catch (const std::exception& e) {
    log->error("{}", e.what());
  } catch (...) {
    log->error("could not flush the event files before a checkpoint: unknown error");
  }
  try {
    const std::filesystem::path file =
        write_checkpoint(checkpoint_folder(), options.checkpoint_basename, save.checkpoint,
                         options.keep_checkpoints);
    job.set_last_checkpoint(WrittenCheckpoint{file, save.checkpoint.global_step});
    log->info("wrote checkpoint {} (requested by {})", file.string(), save.reasons);
    emit(RunEvent::Kind::checkpoint, save.checkpoint.global_step, "",
         file.string() + " (requested by " + save.reasons + ")", save.taken);
  } catch (const std::exception& e) {
    checkpoint_failed(save.checkpoint.global_step, save.reasons, e.what());
  } catch (...) {
    checkpoint_failed(save.checkpoint.global_step, save.reasons, "unknown error");
  }
}

void Runtime::Impl::wait_for_checkpoints() {
  if (checkpoint_writer.busy()) log->debug("waiting for the checkpoint being written");
  checkpoint_writer.wait_idle();
}

namespace {

// A build as the log names it: the first 12 hex digits of its SHA-256.
std::string short_build(const std::string& build) {
  return build.substr(0, 12);
}

}  // namespace

void Runtime::Impl::adopt_restored_state(HostServices& services, const HookSettings& settings) {
  auto it = restored_states.find(services.instance_name);
  if (it == restored_states.end()) return;
  const SavedHookState saved = std::move(it->second);
  restored_states.erase(it);  // one instance adopts it
  if (!saved.plugin_id.empty() && saved.plugin_id != services.plugin_id) {
    log->warn(
        "the checkpoint holds state for hook '{}' saved by plugin '{}', but '{}' now uses plugin "
        "'{}': it starts without state",
        services.instance_name, saved.plugin_id, services.instance_name, services.plugin_id);
    return;
  }
  // Another build of the same plugin (rebuilt, or rewritten under the same id and versions) may
  // read these bytes differently: it takes them only when its configuration says so.
  const bool other_build = !saved.plugin_build.empty() && !services.plugin_build.empty() &&
                           saved.plugin_build != services.plugin_build;
  if (other_build && settings.resume_state == ResumeState::same_build) {
    log->warn(
        "hook '{}' (plugin '{}') starts without the state the checkpoint holds for it: another "
        "build of the plugin saved it (SHA-256 {}, this build {}); set resume_state = any_build "
        "in [hook.{}] to resume it anyway",
        services.instance_name, services.plugin_id, short_build(saved.plugin_build),
        short_build(services.plugin_build), services.instance_name);
    return;
  }
  if (other_build)
    log->info(
        "hook '{}' (plugin '{}') resumes the state another build of the plugin saved (SHA-256 {}, "
        "this build {}): resume_state = any_build",
        services.instance_name, services.plugin_id, short_build(saved.plugin_build),
        short_build(services.plugin_build));
  std::lock_guard lock(services.state_mutex);
  services.state = saved;
  services.state.plugin_id = services.plugin_id;
  // A state of unknown build is now this build's; another build's stays tagged as its own until
  // the hook stores a state of its own.
  if (services.state.plugin_build.empty()) services.state.plugin_build = services.plugin_build;
  services.has_state = true;
  services.state_saved_by_plugin = false;
}

void Runtime::request_checkpoint(const std::string& reason) {
  impl_->job.record_checkpoint_request(reason.empty() ? "the embedding program" : reason);
}

std::optional<WrittenCheckpoint> Runtime::last_checkpoint() const {
  return impl_->job.last_checkpoint();
}

void Runtime::wait_for_checkpoints() {
  impl_->wait_for_checkpoints();
}

void Runtime::Impl::write_agreed_checkpoint() {
  Communicator& comm = *options.communicator;
  std::string reasons = job.take_checkpoint_reasons();
  if (job.failed()) {  // agreed: every process skips it
    if (comm.is_chief())
      log->warn(
          "not writing the checkpoint requested by {}: the job failed, and a failed job never "
          "replaces a good checkpoint",
          reasons);
    return;
  }
  engine.drain_observers();
  // Every process's hook states, and its part of the workload state, travel to the chief, which
  // writes one file for the job.
  std::vector<std::string> gathered;
  try {
    HookStates mine = collect_hook_states();
    if (std::optional<std::string> rank_state = session.save_rank_state())
      mine.insert_or_assign(kRankWorkloadEntry,
                            SavedHookState{"hookhost", 1, std::move(*rank_state)});
    gathered = comm.gather(encode_hook_states(mine), 0);
  } catch (const std::exception& e) {
    log->error("could not gather the hook states for a checkpoint: {}", e.what());
    comm.abort(1);
  }
  if (!comm.is_chief()) return;
  submit_snapshot(std::move(reasons), [&] {
    HookStates all;
    for (int r = 0; r < static_cast<int>(gathered.size()); ++r)
      for (auto& [name, state] : decode_hook_states(gathered[static_cast<std::size_t>(r)]))
        all.emplace(rank_state_key(name, r), std::move(state));
    return all;
  });
}

}  // namespace hookhost
