// What HookTest tells of a run (Call, RunResult in <hookhost/testing.hpp>): what it reads from the
// runtime's words, and the views of what it recorded.
#include "testing/run_result.hpp"

#include <charconv>
#include <string>
#include <string_view>
#include <vector>

namespace hookhost::testing {

namespace {

// "after_run failed: MESSAGE" (HookReport::failure) as a callback and a message.
std::optional<HookFailure> parse_failure(const std::string& text) {
  if (text.empty()) return std::nullopt;
  for (size_t i = 0; i < kCallbackNames.size(); ++i) {
    const std::string prefix = std::string(kCallbackNames[i]) + " failed: ";
    if (text.rfind(prefix, 0) == 0)
      return HookFailure{static_cast<Callback>(i), text.substr(prefix.size())};
  }
  return HookFailure{Callback::begin, text};
}

// The runtime's checkpoint lines: "wrote checkpoint FILE (requested by WHO)" and "not writing
// the checkpoint requested by WHO: the job failed, ...".
void collect_checkpoints(RunResult& run) {
  const std::string wrote = "wrote checkpoint ";
  const std::string by = " (requested by ";
  const std::string not_written = "not writing the checkpoint requested by ";
  const std::string because_failed = ": the job failed";
  for (const LogLine& line : run.host_log) {
    const std::string& text = line.text;
    if (text.rfind(wrote, 0) == 0) {
      const size_t open = text.find(by);
      if (open == std::string::npos || text.back() != ')') continue;
      RequestedCheckpoint c;
      c.file = text.substr(wrote.size(), open - wrote.size());
      c.requested_by = text.substr(open + by.size(), text.size() - 1 - open - by.size());
      c.written = true;
      const std::string name = c.file.filename().string();
      const auto dash = name.rfind('-');
      if (dash != std::string::npos)
        std::from_chars(name.data() + dash + 1, name.data() + name.size(), c.global_step);
      run.checkpoints.push_back(std::move(c));
    } else if (text.rfind(not_written, 0) == 0) {
      const size_t end = text.find(because_failed, not_written.size());
      RequestedCheckpoint c;
      c.requested_by = text.substr(not_written.size(), end - not_written.size());
      c.global_step = run.global_step;
      run.checkpoints.push_back(std::move(c));
    }
  }
}

// Whether the job stopped because the hook asked, and in its words.
void find_hook_stop(RunResult& run, const std::string& instance) {
  if (run.outcome != Outcome::stopped || run.stop_cause != HH_STOP_CAUSE_HOOK) return;
  const std::string asked = "hook '" + instance + "': ";
  const std::string returned = "hook '" + instance + "' requested a stop in ";
  if (run.reason.rfind(asked, 0) == 0) {
    run.stopped_by_hook = true;
    run.hook_stop_reason = run.reason.substr(asked.size());
  } else if (run.reason.rfind(returned, 0) == 0) {
    run.stopped_by_hook = true;
    run.hook_stop_reason = run.reason.substr(std::string("hook '" + instance + "' ").size());
  }
}

}  // namespace

void read_failure_checkpoints_and_stop(RunResult& run, const std::string& instance) {
  run.failure = parse_failure(run.report.failure);
  collect_checkpoints(run);
  find_hook_stop(run, instance);
}

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
