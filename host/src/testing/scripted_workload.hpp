// The harness's workload: a Session that plays a script (detail::Script in <hookhost/testing.hpp>)
// of values, feedable names, end of data, failed attempts and stop requests. HookTest, `hookhost
// check`, the tests and the benches all drive hooks around it.
//
// Step N is the step that takes the global step from N-1 to N. Used by the thread that runs the
// job only, as every Session.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hookhost/host/runtime.hpp"
#include "hookhost/host/session.hpp"
#include "hookhost/testing.hpp"

namespace hookhost::testing {

// Whether a workload playing `script` provides the tensor `name`.
bool script_serves(const detail::Script& script, const std::string& name);

class ScriptedWorkload final : public Session {
 public:
  // `runs`, when given, receives one SessionRun per run() call, failed attempts included.
  explicit ScriptedWorkload(detail::Script script, std::vector<SessionRun>* runs = nullptr);

  // The runtime the script's stop requests go to (none: they are not made).
  void set_runtime(Runtime* runtime) { runtime_ = runtime; }
  detail::Script& script() { return script_; }
  bool serves(const std::string& name) const { return script_serves(script_, name); }
  // The creation create() was last given (0 before the first).
  int creation() const { return creation_; }
  // Every creation create() was given, in order.
  const std::vector<int>& creations() const { return creations_; }
  // Moves the workload to `step`, as a session restored or rewound outside create() would be.
  void set_global_step(int64_t step) { step_ = step; }

  void create(int creation) override;
  int64_t global_step() const override { return step_; }
  std::vector<std::string> fetchable() const override;
  std::vector<std::string> feedable() const override;
  StepResult run(const std::vector<std::string>& fetches, const TensorMap& feeds) override;
  std::string save_state() const override { return std::to_string(step_); }
  // Throws std::runtime_error for bytes that are not a state of this workload.
  void restore_state(std::string_view bytes) override;
  // Unknown (nullopt) for an endless script.
  std::optional<int64_t> last_step() const override;

 private:
  // The fault the script has for this attempt at `step`, consumed unless it fails every attempt.
  std::optional<detail::ScriptedFault> take_fault(int64_t step);
  // A fed value first (as a session returns what was fed), then the script, then the defaults.
  Tensor value_of(const std::string& name, int64_t step, const TensorMap& feeds) const;

  detail::Script script_;
  std::vector<SessionRun>* runs_;
  Runtime* runtime_ = nullptr;
  int64_t step_;
  int creation_ = 0;
  std::vector<int> creations_;
};

}  // namespace hookhost::testing
