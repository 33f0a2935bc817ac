// RangeHistogram: exact min/max, quantiles within one bin of the sorted values' (numpy's
// np.percentile, linear), while its range grows by merging bins.
#include "core/quantize/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace agate {
namespace quantize {
namespace {

// np.percentile(values, 100 * fraction) (the 'linear' method).
double SortedQuantile(std::vector<float> values, double fraction) {
  std::sort(values.begin(), values.end());
  double at = fraction * (values.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(at));
  size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (at - lo);
}

TEST(RangeHistogram, EmptyIsZero) {
  RangeHistogram h;
  EXPECT_EQ(h.count(), 0);
  EXPECT_EQ(h.Quantile(0.5), 0);
  EXPECT_EQ(h.min(), 0);
  EXPECT_EQ(h.max(), 0);
}

TEST(RangeHistogram, FixedValuesAgainstNumpy) {
  // np.percentile(np.concatenate([np.arange(-300, 700) / 10, [-50, 95.5]]), [0.5, 1, 50, 99, 99.9])
  //   = [-29.5995, -29.099, 19.95, 68.999, 69.8999]; min -50, max 95.5.
  std::vector<float> v;
  for (int i = -300; i < 700; ++i) v.push_back(i / 10.0f);
  v.push_back(-50);
  v.push_back(95.5f);
  RangeHistogram h;
  h.Add(v.data(), static_cast<int64_t>(v.size()));
  EXPECT_EQ(h.count(), 1002);
  EXPECT_EQ(h.min(), -50);
  EXPECT_EQ(h.max(), 95.5);
  const double tolerance = h.resolution() + 0.1;  // one bin, and one step of the data
  EXPECT_NEAR(h.Quantile(0.005), -29.5995, tolerance);
  EXPECT_NEAR(h.Quantile(0.01), -29.099, tolerance);
  EXPECT_NEAR(h.Quantile(0.5), 19.95, tolerance);
  EXPECT_NEAR(h.Quantile(0.99), 68.999, tolerance);
  EXPECT_NEAR(h.Quantile(0.999), 69.8999, tolerance);
  EXPECT_EQ(h.Quantile(0), -50);
  EXPECT_EQ(h.Quantile(1), 95.5);
}

TEST(RangeHistogram, GrowingRangeKeepsQuantiles) {
  // Batches whose range grows 1000x: the bins merge, the quantiles stay within a bin.
  std::mt19937 rng(7);
  std::vector<float> all;
  RangeHistogram h;
  for (int batch = 0; batch < 4; ++batch) {
    std::normal_distribution<float> normal(0.5f, std::pow(10.0f, batch));
    std::vector<float> v(5000);
    for (float& x : v) x = normal(rng);
    h.Add(v.data(), static_cast<int64_t>(v.size()));
    all.insert(all.end(), v.begin(), v.end());
  }
  EXPECT_EQ(h.count(), static_cast<int64_t>(all.size()));
  EXPECT_EQ(h.min(), *std::min_element(all.begin(), all.end()));
  EXPECT_EQ(h.max(), *std::max_element(all.begin(), all.end()));
  for (double f : {0.0001, 0.01, 0.25, 0.5, 0.75, 0.99, 0.9999}) {
    // One bin, plus the gap between neighbouring sorted values near the quantile (sparse tails).
    double rank = 1.0 / all.size();
    double gap = SortedQuantile(all, std::min(1.0, f + rank)) - SortedQuantile(all, std::max(0.0, f - rank));
    EXPECT_NEAR(h.Quantile(f), SortedQuantile(all, f), h.resolution() + gap) << "fraction " << f;
  }
  EXPECT_LE(h.resolution(), 2 * (std::max(h.max(), -h.min())) / RangeHistogram::kBins * 2);
}

TEST(RangeHistogram, ZerosAndOneSign) {
  RangeHistogram zeros;
  std::vector<float> z(100, 0.0f);
  zeros.Add(z.data(), 100);
  EXPECT_EQ(zeros.Quantile(0.99), 0);
  EXPECT_EQ(zeros.max(), 0);

  RangeHistogram negative;
  std::vector<float> v;
  for (int i = 1; i <= 1000; ++i) v.push_back(-static_cast<float>(i));
  negative.Add(v.data(), 1000);
  EXPECT_EQ(negative.max(), -1);
  EXPECT_NEAR(negative.Quantile(0.01), SortedQuantile(v, 0.01), negative.resolution() + 1);
  EXPECT_NEAR(negative.Quantile(0.5), SortedQuantile(v, 0.5), negative.resolution() + 1);
}

TEST(RangeHistogram, EntropyClipsALongTailAndKeepsAUniformRange) {
  // ReLU-like: |normal| with rare far outliers: the threshold sits past the bulk, before the outliers.
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> v(100000);
  for (float& x : v) x = std::fabs(normal(rng));
  for (int i = 0; i < 10; ++i) v[i * 997] = 40.0f + i;
  RangeHistogram tail;
  tail.Add(v.data(), static_cast<int64_t>(v.size()));
  double t = tail.EntropyThreshold(true, 255);
  EXPECT_GT(t, SortedQuantile(v, 0.99));
  EXPECT_LT(t, 20.0);
  EXPECT_EQ(tail.EntropyThreshold(false, 255), 0);  // no negative side

  // Uniform: nothing to gain by clipping; the threshold stays near the maximum.
  std::uniform_real_distribution<float> uniform(0, 1);
  for (float& x : v) x = uniform(rng);
  RangeHistogram flat;
  flat.Add(v.data(), static_cast<int64_t>(v.size()));
  EXPECT_GT(flat.EntropyThreshold(true, 255), 0.9);
}

TEST(RangeHistogram, IgnoresNaN) {
  std::vector<float> v = {1, NAN, 3};
  RangeHistogram h;
  h.Add(v.data(), 3);
  EXPECT_EQ(h.count(), 2);
  EXPECT_EQ(h.max(), 3);
}

}  // namespace
}  // namespace quantize
}  // namespace agate
