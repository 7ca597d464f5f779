// What a scenario's outcome says about the plugin: each call that did not succeed, each request
// the host refused, each refusal in the log, an instance that could not be created, a destroy()
// that failed, classified into findings (crash, hang, exit, error, invalid output, ...).
#pragma once

#include <string>
#include <vector>

#include "check/finding.hpp"
#include "check/scenario_run.hpp"

namespace hookhost::check {

// How create() failed, when the hook could not be created.
struct CreateFailure {
  // "refused": the plugin's own HH_ERROR with a message (a configuration it does not accept);
  // otherwise the kind of a violation ("crash", "hang", "invalid-output", ...).
  std::string kind;
  std::string callback;  // "create", or "load" when the runner died loading the library
  std::string message;   // what happened, without the "hook 'x' (plugin 'p', FILE): " prefix
};
CreateFailure classify_create_failure(const CheckTarget& target, const std::string& error);

// Findings from a scenario whose hook was created.
std::vector<Finding> judge_run(const CheckTarget& target, const RunSpec& spec,
                               const RunOutcome& outcome);

}  // namespace hookhost::check
