// stop_at_step: TensorFlow's StopAtStepHook. Stops the job after the step that makes the global
// step reach last_step, or num_steps after the global step of the first session creation. That
// computed limit is kept in the hook's saved state, so neither a recovery nor a resume from a
// checkpoint moves it.
#include <hookhost/ext/steps.h>

#include <cstdint>
#include <hookhost/hook.hpp>
#include <optional>
#include <stdexcept>
#include <string>

namespace {

constexpr char kLastStepKey[] = "last_step";

class StopAtStep : public hookhost::Hook {
 public:
  explicit StopAtStep(const hookhost::CreateContext& ctx) : Hook(ctx) {
    params().require_exactly_one("num_steps", "last_step");
    if (params().has("num_steps")) {
      num_steps_ = params().get_int("num_steps");
      if (*num_steps_ <= 0)
        throw hookhost::Error("invalid num_steps=" + std::to_string(*num_steps_) +
                              " (must be > 0)");
    } else {
      last_step_ = params().get_int("last_step");
      if (*last_step_ < 0)
        throw hookhost::Error("invalid last_step=" + std::to_string(*last_step_) +
                              " (must be >= 0)");
    }
  }

  void begin() override { adopt_saved_limit(); }

  void after_create_session(const hh_session_info& session) override {
    adopt_saved_limit();  // a recovery may have restored states from a checkpoint
    if (!last_step_) {
      last_step_ = session.global_step + *num_steps_;
      host().info("will stop at global step " + std::to_string(*last_step_) +
                  " (num_steps=" + std::to_string(*num_steps_) + " from global step " +
                  std::to_string(session.global_step) + ")");
    }
    host().save_state_map({{kLastStepKey, std::to_string(*last_step_)}});
    if (auto* steps = host().service<hh_steps_service>(HH_SERVICE_STEPS);
        steps && steps->struct_size >= HH_STEPS_SERVICE_SIZE_1_0 &&
        steps->publish_last_step(host().raw(), *last_step_) != HH_OK)
      host().warn("the host refused to publish the last step " + std::to_string(*last_step_));
    // Beyond TensorFlow: a job resumed at or past its limit stops before running another step.
    if (session.global_step >= *last_step_) stop(session.global_step);
  }

  void after_run(const hh_run_context& context, const hookhost::RunValues&) override {
    if (!last_step_ || context.global_step + 1 < *last_step_) return;
    const int64_t live = host().global_step();  // also catches a step that jumped past the limit
    if (live >= *last_step_) stop(live);
  }

 private:
  // Only num_steps computes a limit; an explicit last_step always follows the configuration.
  void adopt_saved_limit() {
    if (!num_steps_) return;
    const auto saved = host().load_state_map();
    const auto it = saved.find(kLastStepKey);
    if (it == saved.end()) return;
    int64_t value = 0;
    try {
      std::size_t used = 0;
      value = std::stoll(it->second, &used);
      if (used != it->second.size()) throw std::invalid_argument("trailing text");
    } catch (const std::exception&) {
      throw hookhost::Error("the saved state holds an invalid " + std::string(kLastStepKey) + "='" +
                            it->second + "'");
    }
    if (last_step_ != value) {
      last_step_ = value;
      host().info("will stop at global step " + std::to_string(value) +
                  " (limit restored from the saved state; num_steps is not counted again)");
    }
  }

  void stop(int64_t step) {
    if (stop_requested_) return;
    stop_requested_ = true;
    host().request_stop("reached the step limit (last_step=" + std::to_string(*last_step_) +
                        ", global step " + std::to_string(step) + ")");
  }

  std::optional<int64_t> num_steps_;
  std::optional<int64_t> last_step_;
  bool stop_requested_ = false;
};

}  // namespace

#define STOP_AT_STEP_PARAMS(P)                                                       \
  P(num_steps, INT, OPTIONAL, "",                                                    \
    "stop after this many steps, counted from the global step of the first session") \
  P(last_step, INT, OPTIONAL, "", "stop once the global step reaches this value")

HOOKHOST_PLUGIN(StopAtStep, "stop_at_step", "1.0.0",
                "Stops the job at a global step (TensorFlow's StopAtStepHook; a job resumed at or "
                "past the limit stops before running another step)",
                STOP_AT_STEP_PARAMS)
