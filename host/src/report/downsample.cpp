#include "report/downsample.hpp"

#include <algorithm>
#include <cmath>

namespace hookhost {

std::string thousands(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string DownsampledCurve::description() const {
  std::string text = thousands(finite_points) + (finite_points == 1 ? " point" : " points");
  if (bucket_size == 0)
    text += finite_points == 1 ? ", shown" : ", all shown";
  else
    text += ", shown as " + thousands(points.size()) + ": min and max of each " +
            thousands(bucket_size) + " consecutive points";
  if (skipped_non_finite > 0)
    text += "; " + thousands(skipped_non_finite) + " NaN or infinite " +
            (skipped_non_finite == 1 ? "value" : "values") + " skipped";
  return text;
}

DownsampledCurve downsample_min_max(std::span<const ScalarPoint> points, std::size_t max_points) {
  DownsampledCurve curve;
  std::vector<ScalarPoint> finite;
  finite.reserve(points.size());
  for (const ScalarPoint& p : points) {
    if (std::isfinite(p.value))
      finite.push_back(p);
    else
      ++curve.skipped_non_finite;
  }
  curve.finite_points = finite.size();
  max_points = std::max<std::size_t>(max_points, 2);
  if (finite.size() <= max_points) {
    curve.points = std::move(finite);
    return curve;
  }
  // Two points per bucket; the bucket size rounded up, so the count never exceeds the bound.
  const std::size_t buckets = max_points / 2;
  curve.bucket_size = (finite.size() + buckets - 1) / buckets;
  curve.points.reserve(max_points);
  for (std::size_t first = 0; first < finite.size(); first += curve.bucket_size) {
    const auto begin = finite.begin() + static_cast<std::ptrdiff_t>(first);
    const auto end = finite.begin() + static_cast<std::ptrdiff_t>(
                                          std::min(first + curve.bucket_size, finite.size()));
    const auto [low, high] = std::minmax_element(
        begin, end, [](const ScalarPoint& a, const ScalarPoint& b) { return a.value < b.value; });
    if (low == high) {
      curve.points.push_back(*low);
    } else if (low < high) {
      curve.points.push_back(*low);
      curve.points.push_back(*high);
    } else {
      curve.points.push_back(*high);
      curve.points.push_back(*low);
    }
  }
  return curve;
}

}  // namespace hookhost
