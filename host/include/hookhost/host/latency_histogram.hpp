// Durations counted in fixed buckets, for a callback's p50 and p99 without keeping every sample:
// recording is a few instructions and never allocates, so it can sit on the step's path.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace hookhost {

// Log-linear buckets: below 8 ns one per nanosecond, then 8 per power of two, so a bucket is at
// most 1/8 of its lower edge wide (a quantile read from it is at most 12.5 % high). Durations of
// 2^kTopOctave ns (about 18 minutes) and more share the last bucket.
class LatencyHistogram {
 public:
  static constexpr unsigned kSubBits = 3;
  static constexpr uint64_t kSub = uint64_t{1} << kSubBits;  // buckets per power of two
  static constexpr unsigned kTopOctave = 40;
  static constexpr std::size_t kBuckets = kSub + (kTopOctave - kSubBits) * kSub + 1;

  static constexpr std::size_t bucket_of(uint64_t ns) {
    if (ns < kSub) return static_cast<std::size_t>(ns);
    const unsigned octave = static_cast<unsigned>(std::bit_width(ns)) - 1;  // >= kSubBits
    if (octave >= kTopOctave) return kBuckets - 1;
    const uint64_t mantissa = (ns >> (octave - kSubBits)) & (kSub - 1);
    return static_cast<std::size_t>(kSub + (octave - kSubBits) * kSub + mantissa);
  }
  // The largest duration a bucket holds (the last bucket's is unbounded: UINT64_MAX).
  static constexpr uint64_t upper_edge(std::size_t bucket) {
    if (bucket < kSub) return bucket;
    if (bucket >= kBuckets - 1) return UINT64_MAX;
    const uint64_t octave = kSubBits + (bucket - kSub) / kSub;
    const uint64_t mantissa = (bucket - kSub) % kSub;
    const uint64_t width = uint64_t{1} << (octave - kSubBits);
    return ((kSub + mantissa) << (octave - kSubBits)) + width - 1;
  }

  void record(int64_t ns) { ++counts_[bucket_of(ns < 0 ? 0 : static_cast<uint64_t>(ns))]; }
  void merge(const LatencyHistogram& other) {
    for (std::size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  }
  uint64_t count() const {
    uint64_t n = 0;
    for (uint64_t c : counts_) n += c;
    return n;
  }
  // The duration at or below which a fraction `q` (0 < q <= 1) of the recorded ones lie: the upper
  // edge of the bucket holding the ceil(q * count)-th, never above `max_ns` (the largest recorded,
  // known exactly). 0 when nothing was recorded.
  int64_t quantile(double q, int64_t max_ns) const {
    const uint64_t total = count();
    if (total == 0) return 0;
    q = std::clamp(q, 0.0, 1.0);
    uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(total));
    if (static_cast<double>(rank) < q * static_cast<double>(total)) ++rank;
    rank = std::clamp<uint64_t>(rank, 1, total);
    uint64_t seen = 0;
    for (std::size_t i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) {
        const uint64_t edge = upper_edge(i);
        return edge > static_cast<uint64_t>(max_ns) ? max_ns : static_cast<int64_t>(edge);
      }
    }
    return max_ns;
  }

 private:
  std::array<uint64_t, kBuckets> counts_{};
};

}  // namespace hookhost
