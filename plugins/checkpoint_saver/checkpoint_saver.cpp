// checkpoint_saver: TensorFlow's CheckpointSaverHook. Asks the host (hh.checkpoint/1) for a
// checkpoint of the workload's state and every hook's stored state when a session is created
// (again after a recovery), on its timer (save_steps and/or save_secs, whichever comes first), and
// at the end of the job unless the last one was at the same step. The host writes it at the step
// boundary into the job's checkpoint folder ([run] checkpoint_dir, keep_checkpoints), and never
// writes one for a job that failed. With save_steps alone it tells the host, after each save,
// which step it needs next, and is not called before it.
#include <hookhost/ext/checkpoint.h>

#include <cstdint>
#include <cstring>
#include <hookhost/hook.hpp>
#include <hookhost/sdk/text.hpp>
#include <hookhost/sdk/timer.hpp>
#include <limits>
#include <optional>
#include <string>

namespace {

// MonitoredTrainingSession's default when no frequency is given.
constexpr double kDefaultSaveSecs = 600.0;

using hookhost::format_number;

class CheckpointSaver : public hookhost::Hook {
 public:
  explicit CheckpointSaver(const hookhost::CreateContext& ctx) : Hook(ctx) {
    const bool has_steps = params().has("save_steps");
    const bool has_secs = params().has("save_secs");
    if (has_steps) {
      const int64_t steps = params().get_int("save_steps");
      if (steps <= 0)
        throw hookhost::Error("invalid save_steps=" + std::to_string(steps) + " (must be > 0)");
      steps_timer_ = hookhost::StepTimer::every_steps(steps);
    }
    if (has_secs) {
      const double secs = params().get_float("save_secs");
      if (!(secs > 0))
        throw hookhost::Error("invalid save_secs=" + format_number(secs) + " (must be > 0)");
      secs_timer_ = hookhost::StepTimer::every_secs(secs);
    }
    if (!has_steps && !has_secs) secs_timer_ = hookhost::StepTimer::every_secs(kDefaultSaveSecs);

    service_ = host().service<hh_checkpoint_service>(HH_SERVICE_CHECKPOINT);
    if (!service_ || service_->struct_size < HH_CHECKPOINT_SERVICE_SIZE_1_0 || !service_->request)
      throw hookhost::Error("the host offers no " HH_SERVICE_CHECKPOINT " service");
  }

  void after_create_session(const hh_session_info& session) override {
    session_created_ = true;
    save(session.global_step, session.creation > 1 ? " (after a session recovery)" : "");
  }

  void after_run(const hh_run_context& context, const hookhost::RunValues&) override {
    // Like TensorFlow: a cheap test on the stale step first, then the live step decides.
    if (!due(context.global_step + 1)) return;
    const int64_t live = host().global_step();
    if (due(live)) save(live, "");
  }

  void end(const hh_end_info& info) override {
    if (!session_created_) return;  // no session ever existed: there is no state to save
    if (last_saved_step_ == info.global_step) return;
    save(info.global_step, std::string(" (final save; job ") + hh_outcome_name(info.outcome) +
                               ": " + info.reason + ")");
  }

 private:
  bool due(int64_t step) const {
    return steps_timer_.should_trigger(step) || secs_timer_.should_trigger(step);
  }

  // The host writes the checkpoint at the end of this phase, at the live global step `step`.
  void save(int64_t step, const std::string& note) {
    const std::string reason = "checkpoint_saver at global step " + std::to_string(step) + note;
    if (service_->request(host().raw(), reason.c_str()) != HH_OK)
      throw hookhost::Error("the host refused a checkpoint request at global step " +
                            std::to_string(step));
    steps_timer_.update(step);
    secs_timer_.update(step);
    last_saved_step_ = step;
    // On steps alone, no after_run is needed before the one that makes the next save due: the
    // host skips the calls until then (hh.steps/1 skip_until; an older host calls every step).
    if (!secs_timer_.is_never()) return;
    if (const auto next = steps_timer_.next_trigger_step()) host().skip_until(*next - 1);
  }

  hookhost::StepTimer steps_timer_ = hookhost::StepTimer::never();
  hookhost::StepTimer secs_timer_ = hookhost::StepTimer::never();
  const hh_checkpoint_service* service_ = nullptr;
  bool session_created_ = false;
  std::optional<int64_t> last_saved_step_;
};

}  // namespace

#define CHECKPOINT_SAVER_PARAMS(P)                              \
  P(save_steps, INT, OPTIONAL, "", "save every N global steps") \
  P(save_secs, FLOAT, OPTIONAL, "",                             \
    "save every N seconds (600 when neither save_steps nor save_secs is given)")

HOOKHOST_PLUGIN(CheckpointSaver, "checkpoint_saver", "2.0.0",
                "Saves checkpoints of the workload and every hook's state (TensorFlow's "
                "CheckpointSaverHook)",
                CHECKPOINT_SAVER_PARAMS, chief)
