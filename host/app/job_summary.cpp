#include "job_summary.hpp"

#include <cstdio>

#include <hookhost/host/job.hpp>
#include "support/display_text.hpp"

namespace hookhost {

std::string format_summary(const JobResult& result, const std::vector<HookReport>& reports,
                           std::chrono::duration<double> wall_time, int64_t first_step) {
  // One line per part, so a part added later is one more line here.
  std::string out = "\nhookhost: job " + std::string(outcome_name(result.outcome));
  if (const std::string failures = hook_failures_text(reports); !failures.empty())
    out += "; " + failures;
  out += " (" + display_text(result.reason) + ")\n";
  char line[512];
  const double secs = wall_time.count();
  std::snprintf(line, sizeof line,
                "  steps: %lld run (global step %lld -> %lld)\n"
                "  wall time: %.3f s, %.1f steps/s\n",
                static_cast<long long>(result.steps_run), static_cast<long long>(first_step),
                static_cast<long long>(result.global_step), secs,
                secs > 0 ? static_cast<double>(result.steps_run) / secs : 0.0);
  out += line;
  if (result.checkpoint_failures > 0)
    out += "  checkpoints: " + std::to_string(result.checkpoint_failures) + " write" +
           (result.checkpoint_failures == 1 ? "" : "s") +
           " failed, so the job cannot resume where it should; the last at " +
           display_text(result.checkpoint_error) + "\n";
  if (result.checkpoints_skipped > 0)
    out += "  checkpoints: " + std::to_string(result.checkpoints_skipped) + " requested " +
           (result.checkpoints_skipped == 1 ? "was" : "were") +
           " skipped, replaced by a newer one while an earlier one was being written "
           "([run] checkpoint_wait = true writes each)\n";
  if (result.checkpoint_waits > 0) {
    std::snprintf(line, sizeof line,
                  "  checkpoints: the step waited for the previous write %llu time%s, %.3f s in "
                  "all (the disk's time, not the hooks'; [run] checkpoint_wait = false never "
                  "waits and may skip checkpoints)\n",
                  static_cast<unsigned long long>(result.checkpoint_waits),
                  result.checkpoint_waits == 1 ? "" : "s",
                  std::chrono::duration<double>(result.checkpoint_wait_time).count());
    out += line;
  }
  if (reports.empty()) return out + "  hooks: none\n";
  std::snprintf(line, sizeof line, "  %-20s %-22s %8s %10s %10s %10s %10s %10s\n", "hook",
                "callback", "calls", "total ms", "mean us", "p50 us", "p99 us", "max us");
  out += line;
  for (const auto& r : reports) {
    bool first = true;
    for (const char* cb : {"begin", "after_create_session", "before_run", "after_run", "end"}) {
      auto it = r.callbacks.find(cb);
      if (it == r.callbacks.end() || it->second.calls == 0) continue;
      const CallStats& s = it->second;
      // Per-step callbacks are timed on a sample of steps: the total is estimated from their mean.
      const double total_ms =
          std::chrono::duration<double, std::milli>(s.estimated_total()).count();
      const double mean_us = std::chrono::duration<double, std::micro>(s.mean()).count();
      const double max_us = std::chrono::duration<double, std::micro>(s.max).count();
      const double p50_us = std::chrono::duration<double, std::micro>(s.quantile(0.50)).count();
      const double p99_us = std::chrono::duration<double, std::micro>(s.quantile(0.99)).count();
      std::snprintf(line, sizeof line, "  %-20s %-22s %8llu %10.3f %10.1f %10.1f %10.1f %10.1f\n",
                    first ? r.instance_name.c_str() : "", cb,
                    static_cast<unsigned long long>(s.calls), total_ms, mean_us, p50_us, p99_us,
                    max_us);
      out += line;
      first = false;
    }
    if (r.detached)
      out += "  " + std::string(20, ' ') + " detached " + display_text(r.detach_reason) + "\n";
    if (r.disabled)
      out += "  " + std::string(20, ' ') + " disabled: " + display_text(r.failure) + "\n";
    if (r.observer_skipped_steps > 0)
      out += "  " + std::string(20, ' ') +
             " observer: " + std::to_string(r.observer_skipped_steps) +
             " steps skipped, its queue full (policy = skip)\n";
    if (r.observer_unfetched_steps > 0)
      out += "  " + std::string(20, ' ') +
             " observer: " + std::to_string(r.observer_unfetched_steps) +
             " steps without after_run, their fetches asked for one step late\n";
  }
  return out;
}

}  // namespace hookhost
