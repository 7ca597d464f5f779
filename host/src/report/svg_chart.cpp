#include "report/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report/html_text.hpp"

namespace hookhost {

namespace {

constexpr double kWidth = 960;
constexpr double kCurveHeight = 260;
constexpr double kLeft = 80, kRight = 20, kTop = 16, kBottom = 36;

// A coordinate or a number for a label, short and locale-free.
std::string num(double v, const char* format = "%.1f") {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, v);
  return buffer;
}

std::string value_label(double v) {
  return num(v, std::fabs(v) >= 1e5 || (v != 0 && std::fabs(v) < 1e-3) ? "%.3g" : "%.4g");
}

std::string text_at(double x, double y, const std::string& text, const char* anchor = "start",
                    const char* css_class = "label") {
  return "<text class=\"" + std::string(css_class) + "\" x=\"" + num(x) + "\" y=\"" + num(y) +
         "\" text-anchor=\"" + anchor + "\">" + html_escape(text) + "</text>";
}

std::string line(double x1, double y1, double x2, double y2, const char* css_class) {
  return "<line class=\"" + std::string(css_class) + "\" x1=\"" + num(x1) + "\" y1=\"" + num(y1) +
         "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) + "\"/>";
}

std::string svg_open(double height, const std::string& title) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" viewBox=\"0 0 " +
         num(kWidth, "%.0f") + " " + num(height, "%.0f") + "\" width=\"" + num(kWidth, "%.0f") +
         "\" height=\"" + num(height, "%.0f") + "\" role=\"img\" aria-label=\"" +
         html_escape(title) + "\"><title>" + html_escape(title) + "</title>";
}

}  // namespace

std::string duration_text(double ns) {
  if (ns < 1e3) return num(ns, "%.0f") + " ns";
  if (ns < 1e6) return num(ns / 1e3, "%.2f") + " us";
  if (ns < 1e9) return num(ns / 1e6, "%.2f") + " ms";
  return num(ns / 1e9, "%.2f") + " s";
}

std::string curve_svg(const DownsampledCurve& curve, const std::string& title) {
  const auto& pts = curve.points;
  const auto [step_lo_it, step_hi_it] = std::minmax_element(
      pts.begin(), pts.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  const auto [val_lo_it, val_hi_it] = std::minmax_element(
      pts.begin(), pts.end(), [](const auto& a, const auto& b) { return a.value < b.value; });
  const double step_lo = static_cast<double>(step_lo_it->step);
  double step_hi = static_cast<double>(step_hi_it->step);
  double val_lo = val_lo_it->value, val_hi = val_hi_it->value;
  if (step_hi == step_lo) step_hi = step_lo + 1;
  if (val_hi == val_lo) {
    val_lo -= 0.5;
    val_hi += 0.5;
  }
  const double plot_w = kWidth - kLeft - kRight, plot_h = kCurveHeight - kTop - kBottom;
  auto x_of = [&](double step) { return kLeft + (step - step_lo) / (step_hi - step_lo) * plot_w; };
  auto y_of = [&](double v) { return kTop + (val_hi - v) / (val_hi - val_lo) * plot_h; };

  std::string svg = svg_open(kCurveHeight, title);
  svg += "<rect class=\"plot\" x=\"" + num(kLeft) + "\" y=\"" + num(kTop) + "\" width=\"" +
         num(plot_w) + "\" height=\"" + num(plot_h) + "\"/>";
  for (int i = 0; i <= 4; ++i) {  // value grid
    const double v = val_lo + (val_hi - val_lo) * i / 4;
    svg += line(kLeft, y_of(v), kLeft + plot_w, y_of(v), "grid");
    svg += text_at(kLeft - 6, y_of(v) + 4, value_label(v), "end");
  }
  for (int i = 0; i <= 4; ++i) {  // step ticks
    const double s = step_lo + (step_hi - step_lo) * i / 4;
    svg += text_at(x_of(s), kCurveHeight - kBottom + 16, num(std::round(s), "%.0f"), "middle");
  }
  svg += text_at(kLeft + plot_w / 2, kCurveHeight - 4, "global step", "middle", "axis");
  svg += "<path class=\"curve\" data-points=\"" + std::to_string(pts.size()) + "\" d=\"";
  bool first = true;
  for (const auto& p : pts) {
    svg += first ? "M" : "L";
    svg += num(x_of(static_cast<double>(p.step))) + " " + num(y_of(p.value));
    first = false;
  }
  svg += "\"/>";
  if (pts.size() == 1)
    svg += "<circle class=\"dot\" cx=\"" + num(x_of(step_lo)) + "\" cy=\"" +
           num(y_of(pts[0].value)) + "\" r=\"3\"/>";
  return svg + "</svg>";
}

std::string callback_cost_svg(const RecordedCost& cost) {
  struct Row {
    std::string label;
    const RecordedCallbackCost* cb;
  };
  std::vector<Row> rows;
  int64_t longest = 1;
  for (const auto& hook : cost.hooks)
    for (const auto& cb : hook.callbacks) {
      if (cb.timed_calls == 0) continue;
      rows.push_back(Row{hook.hook + " · " + cb.callback, &cb});
      longest = std::max(longest, cb.max_ns);
    }
  const double row_h = 22, label_w = 260, right = 20, top = 28;
  const double height = top + row_h * static_cast<double>(rows.size()) + 30;
  const double bar_x = label_w, bar_w = kWidth - label_w - right;
  // A logarithmic axis from 10 ns to the next power of ten above the longest call.
  const double decades = std::max(1.0, std::ceil(std::log10(static_cast<double>(longest))) - 1);
  auto x_of = [&](double ns) {
    return bar_x + std::clamp(std::log10(std::max(ns, 10.0)) - 1, 0.0, decades) / decades * bar_w;
  };
  std::string svg = svg_open(height, "time per call of each hook's callbacks");
  svg += text_at(bar_x, 14, "p50", "start", "legend p50") +
         text_at(bar_x + 60, 14, "p99", "start", "legend p99") +
         text_at(bar_x + 120, 14, "max", "start", "legend max") +
         text_at(bar_x + 180, 14, "time per call, logarithmic", "start", "axis");
  for (int d = 0; d <= static_cast<int>(decades); ++d) {
    const double ns = std::pow(10.0, d + 1);
    svg += line(x_of(ns), top - 4, x_of(ns), height - 26, "grid");
    svg += text_at(x_of(ns), height - 10, duration_text(ns), "middle");
  }
  double y = top;
  for (const auto& row : rows) {
    svg += text_at(label_w - 8, y + 15, row.label, "end");
    const std::pair<const char*, int64_t> bars[] = {
        {"bar max", row.cb->max_ns}, {"bar p99", row.cb->p99_ns}, {"bar p50", row.cb->p50_ns}};
    double bar_y = y + 3;
    for (const auto& [css, ns] : bars) {
      svg += "<rect class=\"" + std::string(css) + "\" x=\"" + num(bar_x) + "\" y=\"" + num(bar_y) +
             "\" width=\"" + num(std::max(1.0, x_of(static_cast<double>(ns)) - bar_x)) +
             "\" height=\"5\"><title>" + html_escape(row.label) + " " + (css + 4) + ": " +
             duration_text(static_cast<double>(ns)) + "</title></rect>";
      bar_y += 5.5;
    }
    y += row_h;
  }
  return svg + "</svg>";
}

std::string hook_share_svg(const RecordedCost& cost) {
  const double row_h = 22, label_w = 260, right = 120, top = 8;
  const double height = top + row_h * static_cast<double>(cost.hooks.size()) + 8;
  const double bar_w = kWidth - label_w - right;
  const double wall_ns = cost.wall_time_s * 1e9;
  std::string svg = svg_open(height, "each hook's share of the run's wall time");
  double y = top;
  for (const auto& hook : cost.hooks) {
    double ns = 0;
    for (const auto& cb : hook.callbacks) ns += cb.estimated_total_ns();
    const double share = wall_ns > 0 ? std::clamp(ns / wall_ns, 0.0, 1.0) : 0.0;
    svg += text_at(label_w - 8, y + 15, hook.hook, "end");
    svg += "<rect class=\"track\" x=\"" + num(label_w) + "\" y=\"" + num(y + 4) + "\" width=\"" +
           num(bar_w) + "\" height=\"12\"/>";
    svg += "<rect class=\"bar share\" x=\"" + num(label_w) + "\" y=\"" + num(y + 4) +
           "\" width=\"" + num(share * bar_w) + "\" height=\"12\"/>";
    svg += text_at(label_w + bar_w + 8, y + 15,
                   num(share * 100, "%.2f") + " % (" + duration_text(ns) + ")");
    y += row_h;
  }
  return svg + "</svg>";
}

}  // namespace hookhost
