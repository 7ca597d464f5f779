// A check's report as people read it (one line per finding, then the summary line) and as
// programs read it (one JSON object).
#pragma once

#include <string>

#include "check/check.hpp"

namespace hookhost::check {

// "violation [crash] scenario 'plain run', after_run at step 3: ... Why it matters: ...", one line
// per finding, the scenarios that ran, with `notes` what was skipped or refused, and last
// "check: N violation(s), M warning(s)".
std::string format_text(const CheckReport& report, bool notes);

// {"plugin", "version", "file", "passed", "findings": [{"severity", "kind", "scenario",
// "callback", "step", "message", "why", "also_in"}], "counts": {"violations", "warnings"},
// "scenarios", "notes"}; scenario, callback and step are null when they do not apply.
std::string format_json(const CheckReport& report);

}  // namespace hookhost::check
