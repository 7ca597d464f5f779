// The per-callback latency histogram behind the summary's p50 and p99: bucket edges, quantiles at
// the extremes, merging an observer's share, and the summary table's columns from a real job.
#include <hookhost/host/latency_histogram.hpp>
#include <hookhost/host/runtime.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace hookhost {
namespace {
namespace HOOKHOST_TEST_FILE {

using std::chrono::nanoseconds;

TEST(LatencyHistogram, EveryDurationLiesInsideItsBucketAndBucketsAreAtMostAnEighthWide) {
  std::vector<uint64_t> probes;
  for (uint64_t v = 0; v < 5000; ++v) probes.push_back(v);
  for (unsigned bit = 12; bit < 63; ++bit) {
    const uint64_t p = uint64_t{1} << bit;
    probes.insert(probes.end(), {p - 1, p, p + 1, p + p / 3});
  }
  probes.push_back(UINT64_MAX);
  for (uint64_t v : probes) {
    const std::size_t b = LatencyHistogram::bucket_of(v);
    ASSERT_LT(b, LatencyHistogram::kBuckets) << v;
    EXPECT_LE(v, LatencyHistogram::upper_edge(b)) << v;
    if (b > 0) {
      EXPECT_GT(v, LatencyHistogram::upper_edge(b - 1)) << v;
    }
    const uint64_t low = b == 0 ? 0 : LatencyHistogram::upper_edge(b - 1) + 1;
    if (b + 1 < LatencyHistogram::kBuckets && low >= 8) {
      EXPECT_LE(LatencyHistogram::upper_edge(b) - low + 1, low / 8 + 1) << v;
    }
  }
  // Exact below 8 ns; 2^40 ns and beyond share the last bucket.
  EXPECT_EQ(LatencyHistogram::bucket_of(7), 7u);
  EXPECT_EQ(LatencyHistogram::bucket_of(uint64_t{1} << 40), LatencyHistogram::kBuckets - 1);
  EXPECT_EQ(LatencyHistogram::bucket_of((uint64_t{1} << 40) - 1), LatencyHistogram::kBuckets - 2);
}

TEST(LatencyHistogram, QuantilesOfNothingAreZeroAndOfOneValueAreThatValue) {
  CallStats empty;
  EXPECT_EQ(empty.quantile(0.5), nanoseconds(0));
  EXPECT_EQ(empty.quantile(0.99), nanoseconds(0));
  CallStats one;
  one.record(nanoseconds(123456));
  // One sample: its bucket's edge is above it, and max (exact) caps the answer.
  EXPECT_EQ(one.quantile(0.5), nanoseconds(123456));
  EXPECT_EQ(one.quantile(0.99), nanoseconds(123456));
  EXPECT_EQ(one.quantile(1.0), nanoseconds(123456));
  CallStats zero;
  zero.record(nanoseconds(0));
  zero.record(nanoseconds(-5));  // a clock step backwards counts as 0
  EXPECT_EQ(zero.quantile(0.99), nanoseconds(0));
}

TEST(LatencyHistogram, P99IsWithinAnEighthOfTheTrueValueAndSeesTheTail) {
  CallStats stats;
  std::vector<int64_t> all;
  std::mt19937_64 random(7);
  std::lognormal_distribution<double> body(8.0, 0.6);  // around 3 us
  for (int i = 0; i < 9900; ++i) all.push_back(static_cast<int64_t>(body(random)));
  for (int i = 0; i < 100; ++i) all.push_back(5'000'000 + i);  // a 1 % tail at 5 ms
  for (int64_t v : all) stats.record(nanoseconds(v));
  std::sort(all.begin(), all.end());
  const auto exact = [&](double q) {
    return all[static_cast<size_t>(std::ceil(q * static_cast<double>(all.size()))) - 1];
  };
  for (double q : {0.5, 0.9, 0.99, 0.995}) {
    const int64_t truth = exact(q);
    const int64_t read = stats.quantile(q).count();
    EXPECT_GE(read, truth) << q;
    EXPECT_LE(read, truth + truth / 8 + 1) << q;
  }
  EXPECT_LT(stats.quantile(0.5).count(), 100'000);      // the body
  EXPECT_GE(stats.quantile(0.995).count(), 5'000'000);  // the tail
  EXPECT_EQ(stats.quantile(1.0), stats.max);
}

TEST(LatencyHistogram, DurationsPastTheTopBucketReadAsTheExactMax) {
  CallStats stats;
  const nanoseconds hour = std::chrono::hours(1);
  stats.record(nanoseconds(100));
  stats.record(hour);
  EXPECT_EQ(stats.quantile(0.99), hour);
  EXPECT_GE(stats.quantile(0.5).count(), 100);  // its bucket's upper edge
  EXPECT_LE(stats.quantile(0.5).count(), 112);
}

TEST(LatencyHistogram, MergingAddsTheOtherSharesCalls) {
  CallStats training, worker;
  for (int i = 0; i < 98; ++i) training.record(nanoseconds(1000));
  worker.calls = 2;
  worker.record(nanoseconds(9'000'000));
  worker.record(nanoseconds(9'000'001));
  training.merge(worker);
  EXPECT_EQ(training.timed_calls, 100u);
  EXPECT_EQ(training.histogram.count(), 100u);
  EXPECT_EQ(training.max, nanoseconds(9'000'001));
  EXPECT_GE(training.quantile(0.98).count(), 1000);
  EXPECT_LE(training.quantile(0.98).count(), 1125);
  EXPECT_GE(training.quantile(0.99).count(), 9'000'000);
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost
