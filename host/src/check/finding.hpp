// One thing `hookhost check` found wrong with a plugin, and the list that collects them: the same
// fault seen in several scenarios is one finding that names every scenario it showed up in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hookhost::check {

// A violation fails the check (exit status 1); a warning is reported and does not.
enum class Severity { violation, warning };
const char* severity_name(Severity severity);

struct Finding {
  Severity severity = Severity::violation;
  std::string kind;                  // "crash", "hang", "lazy-binding", ... (see why_it_matters)
  std::string scenario;              // empty for what is read from the file
  std::string callback;              // "create", "before_run", ...; empty when no call is concerned
  std::optional<int64_t> step;       // the global step of the call, when it has one
  std::string message;               // what was seen
  std::string why;                   // why it matters
  std::vector<std::string> also_in;  // further scenarios that showed the same
};

// Why a finding of `kind` matters, for the report; every kind the checker uses has a text.
std::string why_it_matters(const std::string& kind);

class Findings {
 public:
  // Adds `finding` (its `why` filled in from its kind when empty), or, when the same finding
  // (severity, kind, callback and message; runner pids left out) is already there from another
  // scenario, names that scenario in the existing one.
  void add(Finding finding);
  const std::vector<Finding>& all() const { return findings_; }
  std::size_t count(Severity severity) const;

 private:
  std::vector<Finding> findings_;
};

}  // namespace hookhost::check
