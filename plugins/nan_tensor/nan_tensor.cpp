// nan_tensor: TensorFlow's NanTensorHook, also catching +-Inf (as Keras' TerminateOnNaN does).
// Fetches the loss every step. A non-finite loss either fails this hook's after_run with
// "NaN loss during training at global step N" (fail_on_nan_loss=true) or stops the job cleanly.
//
// Failing a call fails the job only when the instance runs with on_error = fail; under the
// default policy (disable) the hook is just switched off. Configure it with on_error = fail.
#include <cmath>
#include <cstdio>
#include <hookhost/hook.hpp>
#include <string>

namespace {

std::string format_loss(double v) {
  if (std::isnan(v)) return "NaN";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

class NanTensor : public hookhost::Hook {
 public:
  explicit NanTensor(const hookhost::CreateContext& ctx)
      : Hook(ctx),
        loss_tensor_(params().get_string("loss_tensor")),
        fail_on_nan_loss_(params().get_bool("fail_on_nan_loss")) {
    if (loss_tensor_.empty()) throw hookhost::Error("'loss_tensor' must name a tensor");
  }

  void before_run(const hh_run_context&, hookhost::RunRequest& request) override {
    request.fetch(loss_tensor_);
  }

  void after_run(const hh_run_context&, const hookhost::RunValues& values) override {
    const hookhost::TensorView loss = values.get(loss_tensor_);
    if (!loss.is_numeric()) throw hookhost::Error("'" + loss_tensor_ + "' is not numeric");
    // A non-scalar loss diverged if any element did.
    for (std::size_t i = 0; i < loss.size(); ++i) {
      const double v = loss.at(i);
      if (std::isfinite(v)) continue;
      const std::string diverged = "Model diverged with loss = " + format_loss(v) + ".";
      const std::string what = "NaN loss during training at global step " +
                               std::to_string(host().global_step()) + " ('" + loss_tensor_ +
                               "' = " + format_loss(v) + ")";
      if (fail_on_nan_loss_) {
        host().error(diverged);
        throw hookhost::Error(what);
      }
      host().warn(diverged);
      host().request_stop(what + "; stopping because fail_on_nan_loss is false");
      return;
    }
  }

 private:
  std::string loss_tensor_;
  bool fail_on_nan_loss_;
};

}  // namespace

#define NAN_TENSOR_PARAMS(P)                                                     \
  P(loss_tensor, STRING, DEFAULT, "loss", "the loss tensor to check every step") \
  P(fail_on_nan_loss, BOOL, DEFAULT, "true",                                     \
    "true: fail the hook (use on_error = fail); false: warn and stop the job cleanly")

HOOKHOST_PLUGIN(NanTensor, "nan_tensor", "1.0.0",
                "Fails or stops the job when the loss becomes NaN or +-Inf (TF NanTensorHook)",
                NAN_TENSOR_PARAMS)
