#include "check/synthetic_session.hpp"

#include <charconv>

namespace hookhost::check {

namespace {
constexpr const char* kGlobalStep = "global_step";
}

SyntheticSession::SyntheticSession(std::set<std::string> names, WorkloadPlan plan)
    : names_(std::move(names)),
      step_(plan.first_step),
      end_step_(plan.first_step + plan.steps),
      recoverable_error_at_(plan.recoverable_error_at) {
  names_.insert(kGlobalStep);
}

std::vector<std::string> SyntheticSession::fetchable() const {
  return {names_.begin(), names_.end()};
}

std::vector<std::string> SyntheticSession::feedable() const {
  std::vector<std::string> out;
  for (const auto& name : names_)
    if (name != kGlobalStep) out.push_back(name);
  return out;
}

StepResult SyntheticSession::run(const std::vector<std::string>& fetches, const TensorMap& feeds) {
  StepResult result;
  if (step_ >= end_step_) {
    result.status = StepStatus::end_of_data;
    result.message = "the synthetic workload's data ended";
    return result;
  }
  if (recoverable_error_at_ && *recoverable_error_at_ == step_) {
    recoverable_error_at_.reset();
    result.status = StepStatus::aborted;
    result.message = "hookhost check: a recoverable error from the workload (the session was lost)";
    return result;
  }
  ++step_;
  for (const auto& name : fetches) {
    if (name == kGlobalStep) {
      result.values.emplace(name, Tensor::scalar_i64(step_));
    } else if (auto fed = feeds.find(name); fed != feeds.end()) {
      result.values.emplace(name, fed->second);  // as a session returns a value fed this step
    } else if (name == "loss") {
      result.values.emplace(name, Tensor::scalar_f32(1.0f / (1.0f + 0.01f * step_)));
    } else {
      result.values.emplace(name, Tensor::scalar_f32(0.5f));
    }
  }
  return result;
}

void SyntheticSession::restore_state(std::string_view bytes) {
  int64_t step = 0;
  if (std::from_chars(bytes.data(), bytes.data() + bytes.size(), step).ec == std::errc()) {
    end_step_ += step - step_;
    step_ = step;
  }
}

}  // namespace hookhost::check
