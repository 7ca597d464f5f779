// A workload for tests: a counter that "trains" with a falling loss, and a script of faults to
// return at given global steps (recoverable errors, hard errors, end of data).
#pragma once

#include <hookhost/host/session.hpp>

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hookhost::testing {

class ScriptedSession : public Session {
 public:
  std::optional<int64_t> end_at;                       // end of data once this step is reached
  std::map<int64_t, std::deque<StepStatus>> faults;    // statuses to return at a global step
  std::optional<int64_t> restore_to;                   // create() resets the step to this
  std::vector<std::vector<std::string>> fetches_seen;  // per run() call
  std::vector<TensorMap> feeds_seen;                   // per run() call
  std::vector<int> creations;                          // every create(creation) argument
  int64_t step = 0;

  void create(int creation) override {
    creations.push_back(creation);
    if (restore_to) step = *restore_to;
  }
  int64_t global_step() const override { return step; }
  std::vector<std::string> fetchable() const override {
    return {"loss", "global_step", "learning_rate", "weights"};
  }
  std::vector<std::string> feedable() const override { return {"learning_rate"}; }

  StepResult run(const std::vector<std::string>& fetches, const TensorMap& feeds) override {
    fetches_seen.push_back(fetches);
    feeds_seen.push_back(feeds);
    StepResult r;
    if (end_at && step >= *end_at) {
      r.status = StepStatus::end_of_data;
      r.message = "input exhausted";
      return r;
    }
    if (auto it = faults.find(step); it != faults.end() && !it->second.empty()) {
      r.status = it->second.front();
      it->second.pop_front();
      r.message = "injected fault at step " + std::to_string(step);
      return r;
    }
    float lr = 0.1f;
    if (auto it = feeds.find("learning_rate"); it != feeds.end())
      lr = static_cast<float>(it->second.as_double());
    ++step;
    for (const auto& name : fetches) {
      if (name == "loss")
        r.values.emplace(name, Tensor::scalar_f32(10.0f / static_cast<float>(step)));
      if (name == "global_step") r.values.emplace(name, Tensor::scalar_i64(step));
      if (name == "learning_rate") r.values.emplace(name, Tensor::scalar_f32(lr));
      if (name == "weights") r.values.emplace(name, Tensor::vector_f32({1.0f, 2.0f, 3.0f}));
    }
    return r;
  }

  std::string save_state() const override { return std::to_string(step); }
  void restore_state(std::string_view bytes) override { step = std::stoll(std::string(bytes)); }
  std::optional<int64_t> last_step() const override { return end_at; }
};

}  // namespace hookhost::testing
