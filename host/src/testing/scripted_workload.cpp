#include "testing/scripted_workload.hpp"

#include <array>
#include <charconv>
#include <set>
#include <stdexcept>

namespace hookhost::testing {

namespace {

constexpr std::array<const char*, 5> kBuiltinNames = {"global_step", "loss", "learning_rate",
                                                      "weights", "bias"};

// The values of the built-in names (those of the program's built-in workload).
std::optional<Tensor> builtin_value(const std::string& name, int64_t step) {
  if (name == "global_step") return Tensor::scalar_i64(step);
  if (name == "loss") return Tensor::scalar_f32(1.0f / static_cast<float>(step));
  if (name == "learning_rate") return Tensor::scalar_f32(0.1f);
  if (name == "weights") return Tensor::vector_f32({1.0f, 2.0f, 3.0f});
  if (name == "bias") return Tensor::scalar_f32(0.0f);
  return std::nullopt;
}

}  // namespace

ScriptedWorkload::ScriptedWorkload(detail::Script script, std::vector<SessionRun>* runs)
    : script_(std::move(script)), runs_(runs), step_(script_.start_step) {}

void ScriptedWorkload::create(int creation) {
  creation_ = creation;
  creations_.push_back(creation);
  if (script_.step_after_create) step_ = *script_.step_after_create;
}

std::optional<int64_t> ScriptedWorkload::last_step() const {
  if (script_.end_of_data_step == detail::Script::kEndless) return std::nullopt;
  return script_.end_of_data_step - 1;
}

bool script_serves(const detail::Script& script, const std::string& name) {
  if (script.builtin_values && builtin_value(name, 1)) return true;
  if (script.values.count(name)) return true;
  for (const auto& [key, _] : script.values_at)
    if (key.first == name) return true;
  return false;
}

std::vector<std::string> ScriptedWorkload::fetchable() const {
  std::set<std::string> names;
  if (script_.builtin_values) names.insert(kBuiltinNames.begin(), kBuiltinNames.end());
  for (const auto& [name, _] : script_.values) names.insert(name);
  for (const auto& [key, _] : script_.values_at) names.insert(key.first);
  return {names.begin(), names.end()};
}

std::vector<std::string> ScriptedWorkload::feedable() const {
  std::set<std::string> names = script_.feedable;
  if (script_.builtin_values) names.insert("learning_rate");
  return {names.begin(), names.end()};
}

std::optional<detail::ScriptedFault> ScriptedWorkload::take_fault(int64_t step) {
  const auto it = script_.faults.find(step);
  if (it == script_.faults.end() || it->second.empty()) return std::nullopt;
  std::vector<detail::ScriptedFault>& faults = it->second;
  for (const detail::ScriptedFault& fault : faults)
    if (fault.every_attempt) return fault;
  detail::ScriptedFault first = std::move(faults.front());
  faults.erase(faults.begin());
  return first;
}

StepResult ScriptedWorkload::run(const std::vector<std::string>& fetches, const TensorMap& feeds) {
  const int64_t step = step_ + 1;
  SessionRun* recorded = nullptr;
  if (runs_)
    recorded = &runs_->emplace_back(SessionRun{step, fetches, feeds, {}, StepStatus::error});
  StepResult result;
  const auto fail = [&](StepStatus status, std::string message) {
    result.status = status;
    if (recorded) recorded->status = status;
    result.message = std::move(message);
    return result;
  };
  if (step >= script_.end_of_data_step)
    return fail(StepStatus::end_of_data,
                script_.end_of_data_message.empty()
                    ? "the script has no data for step " + std::to_string(step)
                    : script_.end_of_data_message);
  if (std::optional<detail::ScriptedFault> fault = take_fault(step))
    return fail(fault->status, std::move(fault->message));
  for (const auto& name : fetches)
    result.values.insert_or_assign(name, value_of(name, step, feeds));
  step_ = step;
  if (recorded) {
    recorded->status = StepStatus::ok;
    recorded->returned = result.values;
  }
  if (auto it = script_.stops.find(step); it != script_.stops.end()) {
    if (runtime_) runtime_->request_stop(it->second.second, it->second.first);
    script_.stops.erase(it);
  }
  return result;
}

void ScriptedWorkload::restore_state(std::string_view bytes) {
  int64_t step = 0;
  const auto [end, ec] = std::from_chars(bytes.data(), bytes.data() + bytes.size(), step);
  if (ec != std::errc() || end != bytes.data() + bytes.size())
    throw std::runtime_error("not a state of the harness's workload: '" + std::string(bytes) + "'");
  step_ = step;
}

Tensor ScriptedWorkload::value_of(const std::string& name, int64_t step,
                                  const TensorMap& feeds) const {
  if (auto fed = feeds.find(name); fed != feeds.end()) return fed->second;
  if (auto at = script_.values_at.find({name, step}); at != script_.values_at.end())
    return at->second.tensor();
  if (auto fn = script_.values.find(name); fn != script_.values.end())
    return fn->second(step).tensor();
  if (script_.builtin_values)
    if (auto builtin = builtin_value(name, step)) return *builtin;
  throw std::logic_error("no value for '" + name + "'");  // fetchable() lists only known names
}

}  // namespace hookhost::testing
