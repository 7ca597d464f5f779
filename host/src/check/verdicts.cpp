#include "check/verdicts.hpp"

#include <hookhost/status.h>

#include <string_view>

#include "support/display_text.hpp"
#include "support/text.hpp"

namespace hookhost::check {

namespace {

constexpr std::size_t kShownText = 300;  // of a plugin's message, in a finding

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

const char* status_name(hh_status status) {
  switch (status) {
    case HH_OK: return "HH_OK";
    case HH_STOP_REQUESTED: return "HH_STOP_REQUESTED";
    case HH_ERROR: return "HH_ERROR";
    case HH_ERROR_FATAL: return "HH_ERROR_FATAL";
    default: return "an undefined status";
  }
}

// What a lost runner's message says happened to it.
std::string lost_kind(std::string_view message) {
  if (contains(message, "was killed by signal")) return "crash";
  if (contains(message, "exited with status")) return "exit";
  if (contains(message, "did not answer within")) return "hang";
  return "runner-lost";
}

Finding finding(Severity severity, std::string kind, const RunSpec& spec, std::string callback,
                std::optional<int64_t> step, std::string message) {
  Finding f;
  f.severity = severity;
  f.kind = std::move(kind);
  f.scenario = spec.scenario;
  f.callback = std::move(callback);
  f.step = step;
  f.message = std::move(message);
  return f;
}

// The plugin's own text in a call's message: without the " (code N)" the host appends, and
// without the host's words about an undefined status in front.
std::string plugin_text(const CallResult& result) {
  std::string text = result.message;
  if (result.code != 0) {
    const std::string suffix = " (code " + std::to_string(result.code) + ")";
    if (text.ends_with(suffix)) text.resize(text.size() - suffix.size());
  }
  constexpr std::string_view kUndefined = "(treated as HH_ERROR): ";
  if (text.starts_with("returned the undefined status ")) {
    const auto at = text.find(kUndefined);
    text = at == std::string::npos ? std::string() : text.substr(at + kUndefined.size());
  }
  return text;
}

// A terminated message is at most HH_ERROR_MESSAGE_SIZE - 1 bytes; the host cuts one without its
// terminator at the buffer's end, so it arrives exactly HH_ERROR_MESSAGE_SIZE bytes long.
bool unterminated(const std::string& text) {
  return text.size() >= HH_ERROR_MESSAGE_SIZE;
}

std::string unterminated_message(const std::string& status, const std::string& text) {
  return "returned " + status + " with an error text that fills all " +
         std::to_string(HH_ERROR_MESSAGE_SIZE) +
         " bytes of hh_error.message without a terminating NUL (it begins '" +
         display_text(text.substr(0, 40), 60) + "')";
}

// Why the runtime refused what before_run at `step` handed it, from its log line
// "hook 'x' (plugin ...) failed in before_run at global step N: WHY [on_error=...]".
std::string refusal_reason(const CheckTarget& target, const RunOutcome& outcome, int64_t step) {
  const std::string start = "hook '" + target.instance + "' (plugin '";
  const std::string marker = " failed in before_run at global step " + std::to_string(step) + ": ";
  for (const LogRecord& record : outcome.log) {
    if (record.logger != "hookhost" || !record.text.starts_with(start)) continue;
    const auto at = record.text.find(marker);
    if (at == std::string::npos) continue;
    std::string why = record.text.substr(at + marker.size());
    if (const auto policy = why.rfind(" [on_error="); policy != std::string::npos)
      why.resize(policy);
    return why;
  }
  return {};
}

void judge_call(const CheckTarget& target, const RunSpec& spec, const RunOutcome& outcome,
                const ObservedCall& call, std::vector<Finding>& found) {
  const CallResult& r = call.result;
  if (r.runner_lost) {
    // Every call after the loss fails at once; the loss itself is the finding.
    if (r.message.starts_with("not called: ")) return;
    found.push_back(finding(Severity::violation, lost_kind(r.message), spec, call.callback,
                            call.step, display_text(r.message, 1024)));
    return;
  }
  if (!call.refused.empty()) {
    bool refused_valid_request = false;
    for (const RefusedRequest& refused : call.refused) {
      if (refused.unserved) {
        found.push_back(finding(Severity::warning, "unserved-name", spec, call.callback, call.step,
                                "it asked to " +
                                    std::string(refused.function == "add_feed" ? "feed" : "fetch") +
                                    " '" + display_text(refused.name, 128) +
                                    "', which the synthetic workload does not serve"));
      } else {
        refused_valid_request = true;
      }
    }
    if (refused_valid_request && call.step) {
      std::string why = refusal_reason(target, outcome, *call.step);
      if (why.empty()) {
        const RefusedRequest& first = call.refused.front();
        why = first.function + (first.name.empty() ? "" : " of '" + first.name + "'");
      }
      found.push_back(finding(Severity::violation, "invalid-output", spec, call.callback, call.step,
                              "the host refused what it handed over: " + display_text(why, 1024)));
    }
    return;  // a failed call here is the refusal's consequence, already reported
  }
  if (r.ok()) return;
  // A bug that fires with the defaults too is the plain run's finding; an edge warning would send
  // the author after a parameter instead.
  if (spec.edge && spec.plain_failures.count(failure_signature(call.callback, r.message))) return;

  const std::string status = status_name(r.status);
  const std::string text = plugin_text(r);
  if (r.message.starts_with("an exception escaped the plugin") ||
      r.message.starts_with("an unknown exception escaped the plugin")) {
    found.push_back(finding(Severity::violation, "exception", spec, call.callback, call.step,
                            display_text(r.message, kShownText)));
    return;
  }
  if (r.message.starts_with("returned the undefined status ")) {
    found.push_back(finding(Severity::violation, "undefined-status", spec, call.callback, call.step,
                            display_text(r.message.substr(0, r.message.find(": ")), kShownText)));
    if (unterminated(text))
      found.push_back(finding(Severity::violation, "unterminated-error", spec, call.callback,
                              call.step, unterminated_message("a status", text)));
    return;
  }
  if (unterminated(text)) {
    found.push_back(finding(Severity::violation, "unterminated-error", spec, call.callback,
                            call.step, unterminated_message(status, text)));
    return;
  }
  const std::string said = "returned " + status + ": " + display_text(r.message, kShownText);
  if (spec.restored)
    found.push_back(finding(Severity::violation, "state-restore", spec, call.callback, call.step,
                            "after the state it saved was restored, it " + said));
  else if (spec.edge)
    found.push_back(finding(Severity::warning, "edge-error", spec, call.callback, call.step,
                            "create() accepted the value, then it " + said));
  else
    found.push_back(finding(Severity::violation, "error", spec, call.callback, call.step,
                            "nothing provoked an error, but it " + said));
}

// What a plugin that made the denied call the host names in `line` declares to be allowed it.
std::string capability_advice(const std::string& line) {
  if (contains(line, "(the call failed with EACCES)")) {
    // "... tried to read a file (openat, /x/y): denied ...": the path follows the call's name.
    const size_t open = line.find(" (", line.find(" tried to "));
    const size_t comma = line.find(", ", open);
    const size_t close = line.find("): denied by", comma);
    const std::string path = comma < close ? line.substr(comma + 2, close - comma - 2) : "PATH";
    const bool reads = contains(line, "tried to read a file") || contains(line, "tried to list");
    const std::string key = reads ? "read" : "write";
    const std::string macro = reads ? "HH_NEEDS_READ" : "HH_NEEDS_WRITE";
    return " — if it needs this, add the line needs." + key + "=" + path +
           " to its note (#define HH_PLUGIN_NEEDS " + macro + "(\"" + path +
           "\") before including hookhost's headers, or " + macro +
           "_PARAM(name) when a parameter names the path), or let one instance have it with "
           "allow_" +
           key + " = " + path + " in its config section";
  }
  for (const char* call : {"(socket", "(connect"})
    if (contains(line, call))
      return " — if it needs the network, add the line needs.network=1 to its note "
             "(#define HH_PLUGIN_NEEDS HH_NEEDS_NETWORK before including hookhost's headers)";
  for (const char* call : {"(fork", "(vfork", "(clone", "(execve"})
    if (contains(line, call))
      return " — if it needs to start processes, add the line needs.processes=1 to its note "
             "(#define HH_PLUGIN_NEEDS HH_NEEDS_PROCESSES before including hookhost's headers)";
  return " — no declaration allows this call: a hook must not make it";
}

void judge_log(const CheckTarget& target, const RunSpec& spec, const RunOutcome& outcome,
               std::vector<Finding>& found) {
  const std::string own_failure = "hook '" + target.instance + "' (plugin '";
  for (const LogRecord& record : outcome.log) {
    if (record.level < spdlog::level::err) continue;
    const std::string text = display_text(record.text, 1024);
    if (record.logger == target.instance) {
      if (contains(record.text, "denied by its capability policy")) {
        found.push_back(finding(Severity::violation, "capability", spec, "", std::nullopt,
                                text + capability_advice(record.text)));
      } else if (record.text.starts_with("plugin misbehaving: ")) {
        found.push_back(finding(Severity::violation, "invalid-output", spec, "", std::nullopt,
                                "the host refused a call it made: " +
                                    text.substr(std::string_view("plugin misbehaving: ").size())));
      } else if (record.text.starts_with("add_feed refused: ") ||
                 record.text.starts_with("state_put refused: ")) {
        found.push_back(
            finding(Severity::violation, "invalid-output", spec, "", std::nullopt, text));
      } else if (spec.restored) {
        found.push_back(
            finding(Severity::violation, "state-restore", spec, "", std::nullopt,
                    "after the state it saved was restored, it logged an error: " + text));
      } else {
        found.push_back(finding(Severity::warning, "logged-error", spec, "", std::nullopt,
                                "it logged an error: " + text));
      }
    } else if (record.logger == "hookhost" && spec.restored &&
               !record.text.starts_with(own_failure)) {
      found.push_back(finding(Severity::violation, "state-restore", spec, "", std::nullopt,
                              "after the state it saved was restored, the host logged: " + text));
    }
  }
}

}  // namespace

CreateFailure classify_create_failure(const CheckTarget& target, const std::string& error) {
  CreateFailure out;
  out.callback = "create";
  const std::string prefix =
      describe_hook(target.instance, target.plugin->metadata().id, target.plugin->file().string()) +
      ": ";
  out.message = error.starts_with(prefix) ? error.substr(prefix.size()) : error;
  const std::string& m = out.message;
  if (m.starts_with("the hook's runner process")) {
    out.kind = lost_kind(m);
    if (contains(m, "while loading the plugin")) out.callback = "load";
  } else if (m.starts_with("create() returned")) {
    out.kind = "invalid-output";  // an undefined status, no instance, a bad hh_hook
  } else if (m == "create() failed without a message") {
    out.kind = "error";
  } else if (unterminated(m)) {
    out.kind = "unterminated-error";
    out.message = unterminated_message("HH_ERROR", m);
  } else {
    out.kind = "refused";
  }
  return out;
}

std::string failure_signature(const std::string& callback, const std::string& message) {
  std::string out = callback + ": ";
  for (const char c : message) {
    const bool digit = c >= '0' && c <= '9';
    if (!digit)
      out += c;
    else if (out.back() != '#')
      out += '#';
  }
  return out;
}

std::set<std::string> failure_signatures(const RunOutcome& outcome) {
  std::set<std::string> out;
  for (const ObservedCall& call : outcome.calls.calls)
    if (!call.result.ok() && !call.result.runner_lost)
      out.insert(failure_signature(call.callback, call.result.message));
  return out;
}

std::vector<Finding> judge_run(const CheckTarget& target, const RunSpec& spec,
                               const RunOutcome& outcome) {
  std::vector<Finding> found;
  for (const ObservedCall& call : outcome.calls.calls)
    judge_call(target, spec, outcome, call, found);
  if (const auto& error = outcome.calls.destroy_error) {
    const bool lost = error->starts_with("the hook's runner process");
    found.push_back(finding(Severity::violation, lost ? lost_kind(*error) : "exception", spec,
                            "destroy", std::nullopt, display_text(*error, 1024)));
  }
  judge_log(target, spec, outcome, found);
  return found;
}

}  // namespace hookhost::check
