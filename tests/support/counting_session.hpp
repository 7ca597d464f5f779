// A Session for the embedding tests: steps count up, "loss" is 1 / (step + 1), the state is the
// step as text, and `runs` counts the steps this instance ran.
#pragma once

#include <hookhost/host/session.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hookhost::testing {

class CountingSession final : public Session {
 public:
  void create(int) override {}
  int64_t global_step() const override { return step_; }
  std::vector<std::string> fetchable() const override { return {"loss"}; }
  std::vector<std::string> feedable() const override { return {}; }
  StepResult run(const std::vector<std::string>& fetches, const TensorMap&) override {
    StepResult out;
    for (const auto& name : fetches)
      out.values.emplace(name, Tensor::scalar_f32(1.0f / static_cast<float>(step_ + 1)));
    ++step_;
    ++runs;
    return out;
  }
  std::string save_state() const override { return std::to_string(step_); }
  void restore_state(std::string_view bytes) override { step_ = std::stoll(std::string(bytes)); }
  int runs = 0;

 private:
  int64_t step_ = 0;
};

}  // namespace hookhost::testing
