#include "check/report.hpp"

#include <hookhost/sdk/json.hpp>

#include "job/hook_policy.hpp"
#include "support/display_text.hpp"

namespace hookhost::check {

namespace {

// Where a finding was seen: "file", "load", "sandbox", "scenario 'plain run', after_run at step 3".
std::string location(const Finding& f) {
  if (f.kind == "not-run") return "sandbox";
  if (f.scenario.empty()) return f.callback.empty() ? "file" : f.callback;
  std::string where = "scenario '" + f.scenario + "'";
  if (!f.callback.empty()) where += ", " + f.callback;
  if (f.step) where += " at step " + std::to_string(*f.step);
  return where;
}

std::string quoted_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "'" : ", '") + item + "'";
  return out;
}

}  // namespace

std::string format_text(const CheckReport& report, bool notes) {
  const Findings& findings = report.findings;
  std::string out = "checking " + display_text(report.plugin.id) + " " +
                    display_text(report.plugin.version) + " (" +
                    display_text(report.file.string(), 1024) + ")\n";
  if (!report.plugin.needs.empty())
    out += "needs (when confined): " + describe_needs(report.plugin.needs) +
           ": the check grants them; a job's operator grants them with allow_read, allow_write, "
           "allow_network, allow_processes or grant = declared, and refuses the hook otherwise\n";
  for (const Finding& f : findings.all()) {
    out += std::string(severity_name(f.severity)) + " [" + f.kind + "] " + location(f) + ": " +
           f.message;
    if (!f.also_in.empty()) out += " (also in " + quoted_list(f.also_in) + ")";
    if (!f.why.empty()) out += ". Why it matters: " + f.why;
    out += "\n";
  }
  if (!report.scenarios.empty())
    out += "scenarios run in a sandbox (" + std::to_string(report.scenarios.size()) +
           "): " + quoted_list(report.scenarios) + "\n";
  if (notes)
    for (const auto& note : report.notes) out += "note: " + note + "\n";
  out += "check: " + std::to_string(findings.count(Severity::violation)) + " violation(s), " +
         std::to_string(findings.count(Severity::warning)) + " warning(s)\n";
  return out;
}

std::string format_json(const CheckReport& report) {
  const auto optional_text = [](const std::string& text) {
    return text.empty() ? std::string("null") : json_string(text);
  };
  const auto text_array = [](const std::vector<std::string>& items) {
    std::string out = "[";
    for (size_t i = 0; i < items.size(); ++i) {
      // Two appends, not `(i ? "," : "") + text`: GCC 12's -Wrestrict misfires on that at -O3.
      if (i) out += ',';
      out += json_string(items[i]);
    }
    return out + "]";
  };
  const Findings& findings = report.findings;
  std::string out = "{\"plugin\":" + json_string(report.plugin.id) +
                    ",\"version\":" + json_string(report.plugin.version) +
                    ",\"file\":" + json_string(report.file.string()) +
                    ",\"passed\":" + (findings.count(Severity::violation) == 0 ? "true" : "false") +
                    ",\"findings\":[";
  for (size_t i = 0; i < findings.all().size(); ++i) {
    const Finding& f = findings.all()[i];
    out += std::string(i ? "," : "") + "{\"severity\":" + json_string(severity_name(f.severity)) +
           ",\"kind\":" + json_string(f.kind) + ",\"scenario\":" + optional_text(f.scenario) +
           ",\"callback\":" + optional_text(f.callback) +
           ",\"step\":" + (f.step ? std::to_string(*f.step) : "null") +
           ",\"message\":" + json_string(f.message) + ",\"why\":" + json_string(f.why) +
           ",\"also_in\":" + text_array(f.also_in) + "}";
  }
  out += "],\"counts\":{\"violations\":" + std::to_string(findings.count(Severity::violation)) +
         ",\"warnings\":" + std::to_string(findings.count(Severity::warning)) +
         "},\"scenarios\":" + text_array(report.scenarios) +
         ",\"notes\":" + text_array(report.notes) + "}\n";
  return out;
}

}  // namespace hookhost::check
