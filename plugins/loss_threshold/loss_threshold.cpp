// loss_threshold: the lifecycle article's example hook. Fetches the loss every step and stops the
// job cleanly after the first step whose loss falls below `threshold`.
#include <cmath>
#include <hookhost/hook.hpp>
#include <hookhost/sdk/text.hpp>
#include <string>

namespace {

using hookhost::format_number;

class LossThreshold : public hookhost::Hook {
 public:
  explicit LossThreshold(const hookhost::CreateContext& ctx)
      : Hook(ctx),
        threshold_(params().get_float("threshold")),
        loss_tensor_(params().get_string("loss_tensor")) {
    // A NaN threshold would never trigger and +-Inf would trigger at once or never: both typos.
    if (!std::isfinite(threshold_))
      throw hookhost::Error("invalid threshold=" + format_number(threshold_) +
                            " ('threshold' must be a finite number)");
    if (loss_tensor_.empty()) throw hookhost::Error("'loss_tensor' must name a tensor");
  }

  void before_run(const hh_run_context&, hookhost::RunRequest& request) override {
    request.fetch(loss_tensor_);
  }

  void after_run(const hh_run_context&, const hookhost::RunValues& values) override {
    const double loss = values.scalar(loss_tensor_);
    // NaN compares false: a diverged loss is nan_tensor's business, not a success.
    if (loss < threshold_) {
      const std::string what = loss_tensor_ + " " + format_number(loss) + " fell below threshold " +
                               format_number(threshold_);
      host().info(what + " at global step " + std::to_string(host().global_step()));
      host().request_stop(what);
    }
  }

 private:
  double threshold_;
  std::string loss_tensor_;
};

}  // namespace

#define LOSS_THRESHOLD_PARAMS(P)                                                          \
  P(threshold, FLOAT, REQUIRED, "", "stop after the first step whose loss is below this") \
  P(loss_tensor, STRING, DEFAULT, "loss", "the tensor to compare with the threshold")

HOOKHOST_PLUGIN(LossThreshold, "loss_threshold", "1.0.0",
                "Stops the job cleanly once the loss falls below a threshold",
                LOSS_THRESHOLD_PARAMS)
