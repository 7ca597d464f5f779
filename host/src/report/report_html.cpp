#include "report/report_html.hpp"

#include <hookhost/version.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <stdexcept>

#include "report/atomic_file.hpp"
#include "report/downsample.hpp"
#include "report/html_text.hpp"
#include "report/svg_chart.hpp"

namespace hookhost {
namespace fs = std::filesystem;

namespace {

// A long run's timeline keeps its first and last rows; the middle is counted.
constexpr std::size_t kTimelineHead = 200;
constexpr std::size_t kTimelineTail = 300;

constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1000px;
color:#1d232b;background:#fff;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 8px;border-bottom:1px solid #d6dbe1;
padding-bottom:4px}h3{font-size:15px;margin:18px 0 2px}
.meta{color:#56606b}.note{color:#56606b;margin:2px 0 6px}
.warn{background:#fff4d6;border-left:4px solid #d99a00;padding:6px 10px;margin:6px 0}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #e6e9ed;vertical-align:top}
th{background:#f3f5f7}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
td.hash,td.path{font-family:ui-monospace,monospace;font-size:12px;word-break:break-all}
pre{background:#f6f8fa;padding:10px;overflow-x:auto;font-size:12px;white-space:pre-wrap}
svg.chart{max-width:100%;height:auto;display:block}
svg .plot{fill:#fbfcfd;stroke:#c4cad1}svg .grid{stroke:#e3e7eb}
svg .label{font-size:11px;fill:#56606b}svg .axis{font-size:12px;fill:#1d232b}
svg .curve{fill:none;stroke:#1f6feb;stroke-width:1.3}svg .dot{fill:#1f6feb}
svg .bar.p50{fill:#2da44e}svg .bar.p99{fill:#d99a00}svg .bar.max{fill:#cf222e}
svg .legend{font-size:12px}svg .legend.p50{fill:#2da44e}svg .legend.p99{fill:#b07d00}
svg .legend.max{fill:#cf222e}svg .track{fill:#eef1f4}svg .bar.share{fill:#1f6feb}
tr.kind-failure td,tr.kind-disable td{color:#a40e26}tr.kind-checkpoint td{color:#0a5c2b}
)";

std::string utc_text(double wall_time) {
  if (wall_time <= 0) return "";
  const std::time_t t = static_cast<std::time_t>(wall_time);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M:%SZ", &tm);
  return buffer;
}

// "1 curve", "3 curves".
std::string counted(std::size_t n, const std::string& noun) {
  return thousands(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string cell(const std::string& text, const char* css_class = nullptr) {
  return css_class ? "<td class=\"" + std::string(css_class) + "\">" + html_escape(text) + "</td>"
                   : "<td>" + html_escape(text) + "</td>";
}

std::string warning(const std::string& text) {
  return "<p class=\"warn\">" + html_escape(text) + "</p>\n";
}

// The timeline: each start or resume and every event, in the order they happened (a checkpoint
// when it was taken, though it is recorded once written).
struct TimelineRow {
  double wall_time;
  std::string kind;
  int64_t step;
  std::string hook;
  std::string text;
};

std::vector<TimelineRow> timeline_of(const RunRecord& record) {
  std::vector<TimelineRow> rows;
  for (const auto& s : record.starts)
    rows.push_back(
        {s.wall_time, s.resume ? "resume" : "start", s.global_step, "",
         s.resume ? "resumed from the checkpoint at global step " + std::to_string(s.global_step)
                  : "started at global step " + std::to_string(s.global_step)});
  for (const auto& e : record.events)
    rows.push_back({e.wall_time, e.kind, e.global_step, e.hook, e.text});
  std::stable_sort(rows.begin(), rows.end(), [](const TimelineRow& a, const TimelineRow& b) {
    return a.wall_time < b.wall_time;
  });
  return rows;
}

std::string timeline_row(const TimelineRow& r) {
  return "<tr class=\"kind-" + html_escape(r.kind) + "\">" + cell(utc_text(r.wall_time)) +
         cell(std::to_string(r.step), "num") + cell(r.kind) +
         cell(r.hook.empty() ? "(job)" : r.hook) + cell(r.text) + "</tr>\n";
}

std::string scalars_section(const std::string& run_dir_text, const EventScan& scalars) {
  std::string html = "<h2 id=\"scalars\">Loss and scalar summaries</h2>\n";
  if (scalars.series.empty()) {
    html += "<p class=\"empty\">No scalar summaries: no event file (events.out.tfevents.*) under " +
            html_escape(run_dir_text) + " holds a scalar (" + counted(scalars.files, "event file") +
            " read).</p>\n";
  } else {
    html += "<p class=\"note\">" + counted(scalars.series.size(), "curve") + " from " +
            counted(scalars.files, "event file") + ". A curve longer than " +
            thousands(kMaxCurvePoints) +
            " points is drawn as the smallest and the largest value of each run of consecutive "
            "points, so spikes stay visible.</p>\n";
  }
  for (const auto& problem : scalars.problems) html += warning(problem);
  for (const auto& series : scalars.series) {
    const DownsampledCurve curve = downsample_min_max(series.points);
    html += "<section class=\"curve-chart\"><h3>" + html_escape(series.title()) + "</h3>\n";
    html += "<p class=\"note\">" + html_escape(curve.description()) + "</p>\n";
    if (curve.points.empty())
      html += "<p class=\"empty\">Nothing to draw: every value is NaN or infinite.</p>\n";
    else
      html += curve_svg(curve, series.title()) + "\n";
    html += "</section>\n";
  }
  return html;
}

std::string cost_section(const RunRecord& record) {
  std::string html = "<h2 id=\"cost\">What each hook cost</h2>\n";
  if (record.costs.empty()) {
    return html +
           "<p class=\"empty\">The record has no cost line: the run has not ended (it is running, "
           "or it was killed). Regenerate the report after it ends.</p>\n";
  }
  const RecordedCost& cost = record.costs.back();
  html += "<p>Job " + html_escape(cost.outcome) + ": " + html_escape(cost.reason) +
          " (global step " + std::to_string(cost.global_step) + ", " +
          std::to_string(cost.steps_run) + " steps run in " +
          html_escape(duration_text(cost.wall_time_s * 1e9)) + ").</p>\n";
  if (cost.checkpoint_waits > 0)
    html += "<p>Checkpoints: the step waited for the previous write " +
            std::to_string(cost.checkpoint_waits) +
            (cost.checkpoint_waits == 1 ? " time, " : " times, ") +
            html_escape(duration_text(static_cast<double>(cost.checkpoint_wait_ns))) +
            " in all: the disk's time, not the hooks'.</p>\n";
  if (record.costs.size() > 1)
    html += "<p class=\"note\">The last of " + std::to_string(record.costs.size()) +
            " runs in this directory.</p>\n";
  if (cost.hooks.empty()) return html + "<p class=\"empty\">The job ran no hook.</p>\n";
  html += "<h3>Time per call (p50, p99, max of the timed calls)</h3>\n" + callback_cost_svg(cost) +
          "\n<h3>Each hook's share of the run's wall time</h3>\n"
          "<p class=\"note\">Estimated: the mean of its timed calls times its calls, over the "
          "wall time from the first step to the end.</p>\n" +
          hook_share_svg(cost) + "\n";
  // A few slow timed calls (a first call that opens its files) can make an estimate exceed the
  // run: say so rather than let the share stand unexplained.
  for (const auto& hook : cost.hooks) {
    double ns = 0;
    uint64_t calls = 0, timed = 0;
    for (const auto& cb : hook.callbacks) {
      ns += cb.estimated_total_ns();
      calls += cb.calls;
      timed += cb.timed_calls;
    }
    if (cost.wall_time_s > 0 && ns > cost.wall_time_s * 1e9)
      html += "<p class=\"note\">" + html_escape(hook.hook) + ": the estimate exceeds the run's " +
              "wall time, from " + std::to_string(timed) + " timed calls of " +
              std::to_string(calls) + " ([run] time_every_n_steps = 1 times every call).</p>\n";
  }
  html +=
      "<table class=\"cost\"><tr><th>hook</th><th>callback</th><th class=\"num\">calls</th>"
      "<th class=\"num\">timed</th><th class=\"num\">p50</th><th class=\"num\">p99</th>"
      "<th class=\"num\">max</th><th class=\"num\">failures</th></tr>\n";
  for (const auto& hook : cost.hooks) {
    bool first = true;
    for (const auto& cb : hook.callbacks) {
      if (cb.calls == 0) continue;
      html += "<tr>" + cell(first ? hook.hook : "") + cell(cb.callback) +
              cell(std::to_string(cb.calls), "num") + cell(std::to_string(cb.timed_calls), "num") +
              cell(duration_text(static_cast<double>(cb.p50_ns)), "num") +
              cell(duration_text(static_cast<double>(cb.p99_ns)), "num") +
              cell(duration_text(static_cast<double>(cb.max_ns)), "num") +
              cell(std::to_string(cb.failures), "num") + "</tr>\n";
      first = false;
    }
    if (hook.disabled)
      html += "<tr class=\"kind-disable\"><td></td><td colspan=\"7\">disabled: " +
              html_escape(hook.failure) + "</td></tr>\n";
  }
  return html + "</table>\n";
}

std::string timeline_section(const RunRecord& record) {
  std::string html = "<h2 id=\"timeline\">Timeline</h2>\n";
  const std::vector<TimelineRow> rows = timeline_of(record);
  if (rows.empty()) return html + "<p class=\"empty\">The record holds no event.</p>\n";
  html +=
      "<table class=\"timeline\"><tr><th>time (UTC)</th><th class=\"num\">global step</th>"
      "<th>what</th><th>hook</th><th>details</th></tr>\n";
  const bool cut = rows.size() > kTimelineHead + kTimelineTail;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (cut && i == kTimelineHead) {
      const std::size_t hidden = rows.size() - kTimelineHead - kTimelineTail;
      html += "<tr><td colspan=\"5\" class=\"note\">" + thousands(hidden) +
              " more events not shown (all are in run-record.jsonl)</td></tr>\n";
      i += hidden - 1;
      continue;
    }
    html += timeline_row(rows[i]);
  }
  return html + "</table>\n";
}

std::string configuration_section(const RunRecord& record) {
  std::string html = "<h2 id=\"configuration\">Configuration as run</h2>\n";
  if (record.starts.empty()) return html + "<p class=\"empty\">The record holds no start.</p>\n";
  // Each configuration once: a resume with the same one adds nothing.
  std::string previous;
  for (const auto& s : record.starts) {
    if (s.configuration == previous) continue;
    previous = s.configuration;
    html += "<h3>" + std::string(s.resume ? "Resumed" : "Started") + " " +
            html_escape(utc_text(s.wall_time)) + " at global step " +
            std::to_string(s.global_step) + "</h3>\n<pre>" + html_escape(s.configuration) +
            "</pre>\n";
  }
  return html;
}

std::string plugins_section(const RunRecord& record) {
  std::string html = "<h2 id=\"plugins\">Plugins</h2>\n";
  if (record.starts.empty()) return html + "<p class=\"empty\">The record holds no start.</p>\n";
  const RecordedStart& last = record.starts.back();
  if (last.plugins.empty()) return html + "<p class=\"empty\">The job loaded no plugin.</p>\n";
  html +=
      "<table class=\"plugins\"><tr><th>plugin</th><th>version</th><th>hooks</th><th>file</th>"
      "<th>SHA-256</th></tr>\n";
  for (const auto& p : last.plugins) {
    std::string hooks;
    for (const auto& h : p.hooks) hooks += (hooks.empty() ? "" : ", ") + h;
    html += "<tr>" + cell(p.id) + cell(p.version) + cell(hooks) + cell(p.file, "path") +
            cell(p.sha256, "hash") + "</tr>\n";
  }
  return html + "</table>\n";
}

}  // namespace

std::string render_report_html(const std::string& run_dir_text, const RunRecord& record,
                               const EventScan& scalars) {
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>hookhost "
      "run report: " +
      html_escape(run_dir_text) + "</title>\n<style>" + kStyle + "</style></head><body>\n";
  html += "<h1>hookhost run report</h1>\n<p class=\"meta\">" + html_escape(run_dir_text);
  if (!record.starts.empty())
    html += " · started " + html_escape(utc_text(record.starts.front().wall_time)) + " · " +
            counted(record.starts.size() - 1, "resume");
  if (!record.costs.empty())
    html += " · " + html_escape(record.costs.back().outcome) + " at global step " +
            std::to_string(record.costs.back().global_step);
  html += "</p>\n";
  if (record.torn_last_line)
    html += warning(
        "The record's last line was cut short (the job was killed while writing it) and is "
        "ignored.");
  for (const auto& bad : record.bad_lines) html += warning("ignored: " + bad);
  html +=
      "<p class=\"meta\"><a href=\"#scalars\">scalars</a> · <a href=\"#cost\">hook cost</a> · <a "
      "href=\"#timeline\">timeline</a> · <a href=\"#configuration\">configuration</a> · <a "
      "href=\"#plugins\">plugins</a></p>\n";
  html += scalars_section(run_dir_text, scalars);
  html += cost_section(record);
  html += timeline_section(record);
  html += configuration_section(record);
  html += plugins_section(record);
  html += "<p class=\"meta\">Written by hookhost " HOOKHOST_VERSION_STRING " from " +
          html_escape(run_dir_text) + "/" + kRunRecordFile + " and the event files.</p>\n";
  return html + "</body></html>\n";
}

WrittenReport write_run_report(const fs::path& run_dir, fs::path output) {
  const fs::path record_file = run_dir / kRunRecordFile;
  if (!fs::exists(record_file))
    throw std::runtime_error("no run record " + record_file.string() +
                             ": the run directory of a job run by this hookhost has one");
  const RunRecord record = read_run_record(record_file);
  const EventScan scalars = read_scalar_series(run_dir);
  if (output.empty()) output = run_dir / kReportFile;
  write_file_atomically(output, render_report_html(run_dir.string(), record, scalars));
  WrittenReport written{output, scalars.series.size(), {}};
  if (record.torn_last_line)
    written.notes.push_back(record_file.string() + ": the last line is torn and was ignored");
  for (const auto& bad : record.bad_lines) written.notes.push_back(bad);
  for (const auto& problem : scalars.problems) written.notes.push_back(problem);
  return written;
}

}  // namespace hookhost
