// A curve of any length drawn with a bounded number of points: the points in order, cut into
// buckets of equal count, each bucket drawn as its smallest and its largest value (in step order),
// so a spike of one step survives however long the run. Non-finite values (NaN, inf) cannot be
// drawn: they are skipped and counted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "report/event_series.hpp"

namespace hookhost {

// At most this many points per curve in the report.
inline constexpr std::size_t kMaxCurvePoints = 2000;

struct DownsampledCurve {
  std::vector<ScalarPoint> points;  // what is drawn, in step order
  std::size_t finite_points = 0;    // the curve's drawable points before downsampling
  std::size_t skipped_non_finite = 0;
  std::size_t bucket_size = 0;  // points per bucket; 0 when every point is drawn
  // How the curve was drawn, for the reader: "1,234 points, all shown" or "10,000,000 points,
  // shown as 2,000: min and max of each 10,000 consecutive points"; then the skipped ones.
  std::string description() const;
};

// `points` in step order; `max_points` >= 2 (an odd bound draws one point fewer).
DownsampledCurve downsample_min_max(std::span<const ScalarPoint> points,
                                    std::size_t max_points = kMaxCurvePoints);

// 10000000 -> "10,000,000".
std::string thousands(uint64_t n);

}  // namespace hookhost
