// What a scenario's outcome says about the plugin: each call that did not succeed, each request
// the host refused, each refusal in the log, an instance that could not be created, a destroy()
// that failed, classified into findings (crash, hang, exit, error, invalid output, ...).
#pragma once

#include <set>
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

// A failed call's callback and message with every number left out, so that the same bug seen at
// another step, or with another parameter value in its text, compares equal.
std::string failure_signature(const std::string& callback, const std::string& message);

// The failures of a scenario's calls (failure_signature), lost runners left out.
std::set<std::string> failure_signatures(const RunOutcome& outcome);

// Findings from a scenario whose hook was created. In an edge run, a failure in
// spec.plain_failures is the plain run's finding already and is not reported again.
std::vector<Finding> judge_run(const CheckTarget& target, const RunSpec& spec,
                               const RunOutcome& outcome);

}  // namespace hookhost::check
