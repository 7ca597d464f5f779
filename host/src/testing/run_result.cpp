// What HookTest tells of a run (Call, RunResult in <hookhost/testing.hpp>): views of what it
// recorded.
#include <string>
#include <string_view>
#include <vector>

#include "hookhost/testing.hpp"

namespace hookhost::testing {

std::string Call::name() const {
  const std::string base = name_of(callback);
  if (callback == Callback::before_run || callback == Callback::after_run)
    return base + "@" + std::to_string(step);
  return base;
}

std::vector<std::string> RunResult::trace() const {
  std::vector<std::string> names;
  for (const Call& call : calls) names.push_back(call.name());
  return names;
}

std::vector<std::string> RunResult::fetched(int64_t step) const {
  for (auto it = session_runs.rbegin(); it != session_runs.rend(); ++it)
    if (it->step == step) return it->fetched;
  return {};
}

TensorMap RunResult::fed(int64_t step) const {
  for (auto it = session_runs.rbegin(); it != session_runs.rend(); ++it)
    if (it->step == step) return it->fed;
  return {};
}

std::vector<std::string> RunResult::log_lines(std::string_view level) const {
  std::vector<std::string> texts;
  for (const LogLine& line : log)
    if (line.level == level) texts.push_back(line.text);
  return texts;
}

std::string RunResult::log_text() const {
  std::string text;
  for (const LoggedLine& l : all_log_)
    text += "[" + l.logger + "] [" + l.line.level + "] " + l.line.text + "\n";
  return text;
}

std::string RunResult::state_bytes() const {
  return saved_state ? saved_state->bytes : std::string();
}

}  // namespace hookhost::testing
