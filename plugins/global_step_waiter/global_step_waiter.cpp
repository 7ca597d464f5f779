// global_step_waiter: TensorFlow's GlobalStepWaiterHook. Holds the first step back until the
// global step (read through the host, e.g. advanced by a chief in another process) reaches
// wait_until_step, polling every poll_secs. Beyond TensorFlow: timeout_secs bounds the wait.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <hookhost/hook.hpp>
#include <hookhost/sdk/text.hpp>
#include <string>
#include <thread>

namespace {

using hookhost::format_number;

class GlobalStepWaiter : public hookhost::Hook {
 public:
  explicit GlobalStepWaiter(const hookhost::CreateContext& ctx)
      : Hook(ctx),
        wait_until_step_(params().get_int("wait_until_step")),
        poll_secs_(params().get_float("poll_secs")),
        timeout_secs_(params().get_float("timeout_secs")) {
    if (!(poll_secs_ > 0) || !std::isfinite(poll_secs_))
      throw hookhost::Error("invalid poll_secs=" + format_number(poll_secs_) + " (must be > 0)");
    if (!(timeout_secs_ >= 0) || !std::isfinite(timeout_secs_))
      throw hookhost::Error("invalid timeout_secs=" + format_number(timeout_secs_) +
                            " (must be >= 0; 0 waits forever)");
    warn_if_distributed();
  }

  void begin() override { started_ = false; }

  void before_run(const hh_run_context&, hookhost::RunRequest&) override {
    if (started_) return;
    if (wait_until_step_ <= 0 || host().global_step() >= wait_until_step_) {
      started_ = true;
      return;
    }
    if (host().should_stop()) return;  // the job ends after this step anyway
    const std::string target = std::to_string(wait_until_step_);
    if (!announced_) {
      host().info("Waiting for global step " + target + " before starting training.");
      announced_ = true;
    }
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const std::chrono::duration<double> poll(poll_secs_);
    const std::chrono::duration<double> timeout(timeout_secs_);
    int64_t last_logged = host().global_step();
    for (;;) {
      const auto waited = clock::now() - start;
      if (timeout_secs_ > 0 && waited >= timeout)
        throw hookhost::Error("global step " + std::to_string(host().global_step()) +
                              " did not reach " + target + " within " +
                              format_number(timeout_secs_) + " s");
      std::this_thread::sleep_for(
          timeout_secs_ > 0 ? std::min<std::chrono::duration<double>>(poll, timeout - waited)
                            : poll);
      const int64_t step = host().global_step();
      if (step >= wait_until_step_) {
        host().info("global step " + std::to_string(step) + " reached " + target +
                    "; starting training");
        started_ = true;
        return;
      }
      if (step - last_logged > 1000) {  // TensorFlow's progress note
        host().info("Waiting for global step " + target + " before starting training. " +
                    "Current step is " + std::to_string(step) + ".");
        last_logged = step;
      }
      if (host().should_stop()) {
        host().info("stop requested while waiting for global step " + target);
        return;
      }
    }
  }

 private:
  // TensorFlow's waiter is for asynchronous workers. Here every process of a distributed job steps
  // together, so no other process moves the global step while this one waits. Said once, by the
  // first process of the hook's group; a group of one that is not the chief is in a larger job.
  void warn_if_distributed() const {
    const auto* dist = host().service<hh_dist_service>(HH_SERVICE_DIST);
    if (!dist || dist->struct_size < HH_DIST_SERVICE_SIZE_1_1) return;
    const hh_host* h = host().raw();
    if (dist->rank(h) == 0 && (dist->world_size(h) > 1 || !dist->is_chief(h)))
      host().warn(
          "in a distributed job every process steps together, so a waiter that holds one process "
          "back holds back all of them until timeout_secs (docs/distributed.md)");
  }

  int64_t wait_until_step_;
  double poll_secs_;
  double timeout_secs_;
  bool started_ = false;
  bool announced_ = false;
};

}  // namespace

#define GLOBAL_STEP_WAITER_PARAMS(P)                                                  \
  P(wait_until_step, INT, REQUIRED, "",                                               \
    "hold the first step back until the global step reaches this")                    \
  P(poll_secs, FLOAT, DEFAULT, "0.5", "seconds between two reads of the global step") \
  P(timeout_secs, FLOAT, DEFAULT, "0", "fail the hook after waiting this long (0 waits forever)")

HOOKHOST_PLUGIN(GlobalStepWaiter, "global_step_waiter", "1.0.0",
                "Waits for a global step before the first step (TensorFlow's "
                "GlobalStepWaiterHook)",
                GLOBAL_STEP_WAITER_PARAMS)
