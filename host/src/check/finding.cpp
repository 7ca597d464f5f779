#include "check/finding.hpp"

#include <algorithm>
#include <map>
#include <regex>

namespace hookhost::check {

const char* severity_name(Severity severity) {
  return severity == Severity::violation ? "violation" : "warning";
}

std::string why_it_matters(const std::string& kind) {
  static const std::map<std::string, std::string> kWhy = {
      {"metadata",
       "the host refuses to load it: the note (what 'plugins list' shows and what configurations "
       "are checked against) must describe the code that runs"},
      {"capability",
       "a confined hook's runner (every sandboxed hook's, by default) refuses the call: the hook "
       "sees an error, or, for a call no hook may make, its runner is stopped"},
      {"crash",
       "in process this takes the whole job down, every other hook and the training with it; "
       "sandboxed, the hook loses what it held since its last state_put and costs a restart"},
      {"exit",
       "in process this ends the whole job at once, skipping every other hook's end() and the "
       "final checkpoint; sandboxed, it costs the hook its runner"},
      {"hang",
       "a call that does not return holds up every step of the job; in process nothing can "
       "interrupt it (the watchdog can only name it)"},
      {"runner-lost",
       "the hook's process stopped talking the sandbox protocol; in process the same fault is "
       "likely to corrupt the host"},
      {"error",
       "an error where nothing provoked one makes the hook's on_error policy disable it, stop the "
       "job or fail it in a healthy run"},
      {"exception",
       "an exception crossing the C ABI is undefined behaviour; only the host's second line of "
       "defence caught it (catch at the edge, as the C++ SDK does)"},
      {"undefined-status",
       "a status outside hh_status means nothing to the host, which treats it as HH_ERROR; return "
       "HH_OK, HH_STOP_REQUESTED, HH_ERROR or HH_ERROR_FATAL"},
      {"unterminated-error",
       "the error text had no terminating NUL within hh_error.message; the host cuts it at the "
       "buffer's end, another reader would run past it (hh_fail terminates it)"},
      {"invalid-output",
       "the host refused what the hook handed it while the hook went on as if it had succeeded: "
       "its fetch, feed or service call had no effect"},
      {"memory-growth",
       "memory that grows with every step runs a long job out of memory, however slowly"},
      {"state-restore",
       "a resumed job (after a crash, a preemption or a recovery) gives the hook the state it "
       "saved; a hook that cannot take it back loses its place or fails the resume"},
      {"exported-symbols",
       "symbols besides hookhost_plugin_v1 can be interposed by the host program's own, and C++ "
       "vague-linkage objects (STB_GNU_UNIQUE) are merged with another plugin's copy even with "
       "RTLD_LOCAL; build with hookhost_add_plugin, whose version script exports the entry only"},
      {"lazy-binding",
       "with lazy binding a symbol missing at run time kills the process at its first call "
       "instead of failing the load with the linker's message: link with -z now "
       "(hookhost_add_plugin does)"},
      {"process-wide-calls",
       "these calls act on the whole process (end it, replace it, change its signal handlers or "
       "environment), not on the hook; run it with isolation = process to contain them"},
      {"executable-stack",
       "loading a library that asks for an executable stack makes every thread stack of the host "
       "executable (or fails on hardened systems); link with -z noexecstack"},
      {"unreadable-symbols",
       "without a readable dynamic symbol table its exports and imports cannot be checked, and "
       "[run] untrusted = process treats it as suspect"},
      {"trust",
       "'hookhost run' refuses to load a plugin that someone else could replace: it would run "
       "their code inside the training job"},
      {"edge-error",
       "check a parameter's value in create(), so a bad value is a configuration error before the "
       "job starts (exit status 2) rather than a failure in the middle of it"},
      {"logged-error",
       "an error in the log of a healthy run sends operators looking for a problem that is not "
       "there, or hides one that is"},
      {"not-run", "part of the check did not run, so this plugin is only partly checked"},
      {"unserved-name",
       "the checker's synthetic workload does not serve this tensor, so the calls around it "
       "were checked without it"},
  };
  const auto it = kWhy.find(kind);
  return it == kWhy.end() ? std::string() : it->second;
}

namespace {

// Runner process ids differ from one scenario to the next; they do not make a finding new.
std::string without_pids(const std::string& text) {
  static const std::regex kPid(R"( \(pid [0-9]+\))");
  return std::regex_replace(text, kPid, "");
}

// The step is left out: end() comes at another step in each scenario, and a fault at a fixed
// step shows up at that step in every scenario anyway.
bool same(const Finding& a, const Finding& b) {
  return a.severity == b.severity && a.kind == b.kind && a.callback == b.callback &&
         a.message == b.message;
}

}  // namespace

void Findings::add(Finding finding) {
  if (finding.why.empty()) finding.why = why_it_matters(finding.kind);
  finding.message = without_pids(finding.message);
  for (Finding& existing : findings_) {
    if (!same(existing, finding)) continue;
    if (finding.scenario != existing.scenario &&
        std::find(existing.also_in.begin(), existing.also_in.end(), finding.scenario) ==
            existing.also_in.end())
      existing.also_in.push_back(finding.scenario);
    return;
  }
  findings_.push_back(std::move(finding));
}

std::size_t Findings::count(Severity severity) const {
  return static_cast<std::size_t>(
      std::count_if(findings_.begin(), findings_.end(),
                    [&](const Finding& f) { return f.severity == severity; }));
}

}  // namespace hookhost::check
