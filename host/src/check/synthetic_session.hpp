// The checker's workload: a Session that serves every tensor name it was told about (a float
// scalar each, "global_step" as an int64 scalar), accepts feeds of those names, ends its data
// after a planned number of steps and can fail one step with a recoverable error.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "hookhost/host/session.hpp"

namespace hookhost::check {

struct WorkloadPlan {
  int64_t first_step = 0;  // the global step the session starts at (a resumed job's)
  int64_t steps = 20;      // steps until the end of data
  // The step attempted at this global step fails once with StepStatus::aborted (recoverable).
  std::optional<int64_t> recoverable_error_at;
};

class SyntheticSession : public Session {
 public:
  // `names`: what hooks may fetch and feed ("global_step" is always served).
  SyntheticSession(std::set<std::string> names, WorkloadPlan plan);

  void create(int creation) override { creations_ = creation; }
  int64_t global_step() const override { return step_; }
  std::vector<std::string> fetchable() const override;
  std::vector<std::string> feedable() const override;
  StepResult run(const std::vector<std::string>& fetches, const TensorMap& feeds) override;
  std::string save_state() const override { return std::to_string(step_); }
  void restore_state(std::string_view bytes) override;
  std::optional<int64_t> last_step() const override { return end_step_; }

  bool serves(const std::string& name) const { return names_.count(name) > 0; }
  int creations() const { return creations_; }

 private:
  std::set<std::string> names_;
  int64_t step_;
  int64_t end_step_;
  std::optional<int64_t> recoverable_error_at_;
  int creations_ = 0;
};

}  // namespace hookhost::check
