// The report's charts as inline SVG: a scalar curve over the steps, and the hooks' cost. Every
// text from the run is escaped here; the SVG needs no script, font or file from elsewhere.
#pragma once

#include <string>
#include <vector>

#include "report/downsample.hpp"
#include "report/run_record.hpp"

namespace hookhost {

// A line chart of `curve` (at least one point): axes with the step and value ranges, and one
// <path class="curve" data-points="N"> with N = curve.points.size().
std::string curve_svg(const DownsampledCurve& curve, const std::string& title);

// Per callback of each hook that was timed: p50, p99 and max on a logarithmic time axis.
std::string callback_cost_svg(const RecordedCost& cost);

// Each hook's share of the run's wall time (its callbacks' estimated total over wall_time_s).
std::string hook_share_svg(const RecordedCost& cost);

// 1234 ns -> "1.23 us", 2.5e9 -> "2.50 s".
std::string duration_text(double ns);

}  // namespace hookhost
