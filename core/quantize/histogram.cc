#include "core/quantize/histogram.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace agate {
namespace quantize {

void RangeHistogram::Half::Cover(double magnitude) {
  if (magnitude <= 0) return;
  if (width == 0) {
    // The first magnitude lands in the middle: room to grow 2x before the first merge.
    width = magnitude * 2 / kBins;
    return;
  }
  while (magnitude >= width * kBins) {
    for (int i = 0; i < kBins / 2; ++i) bins[i] = bins[2 * i] + bins[2 * i + 1];
    std::fill(bins.begin() + kBins / 2, bins.end(), 0);
    width *= 2;
  }
}

void RangeHistogram::Half::Add(double magnitude) {
  int64_t bin = static_cast<int64_t>(magnitude / width);
  bins[std::min<int64_t>(bin, kBins - 1)] += 1;
  count += 1;
}

void RangeHistogram::Add(const float* values, int64_t n) {
  // Widen once per call from the call's extremes, then count.
  double lo = 0, hi = 0;
  bool any = false;
  for (int64_t i = 0; i < n; ++i) {
    float v = values[i];
    if (std::isnan(v)) continue;
    if (!any && count_ == 0) min_ = max_ = v;
    any = true;
    lo = std::min<double>(lo, v);
    hi = std::max<double>(hi, v);
    min_ = std::min<double>(min_, v);
    max_ = std::max<double>(max_, v);
  }
  if (!any) return;
  positive_.Cover(hi);
  negative_.Cover(-lo);
  for (int64_t i = 0; i < n; ++i) {
    float v = values[i];
    if (std::isnan(v)) continue;
    count_ += 1;
    if (v > 0) {
      positive_.Add(v);
    } else if (v < 0) {
      negative_.Add(-static_cast<double>(v));
    } else {
      zeros_ += 1;
    }
  }
}

double RangeHistogram::resolution() const { return std::max(positive_.width, negative_.width); }

double RangeHistogram::Quantile(double fraction) const {
  if (count_ == 0) return 0;
  if (fraction <= 0) return min_;
  if (fraction >= 1) return max_;
  const double target = fraction * static_cast<double>(count_);
  double seen = 0;
  auto clamp = [&](double v) { return std::min(max_, std::max(min_, v)); };
  // In ascending order of value: negative bins from the largest magnitude down, zeros, positive bins.
  for (int i = kBins - 1; i >= 0; --i) {
    double c = static_cast<double>(negative_.bins[i]);
    if (c > 0 && seen + c >= target) {
      double lo = -(i + 1) * negative_.width;
      return clamp(lo + negative_.width * (target - seen) / c);
    }
    seen += c;
  }
  if (zeros_ > 0 && seen + zeros_ >= target) return clamp(0.0);
  seen += static_cast<double>(zeros_);
  for (int i = 0; i < kBins; ++i) {
    double c = static_cast<double>(positive_.bins[i]);
    if (c > 0 && seen + c >= target) {
      return clamp(i * positive_.width + positive_.width * (target - seen) / c);
    }
    seen += c;
  }
  return max_;
}

namespace {

// KL(P || Q) of `p` (clipped reference) against its quantization to `levels` chunks, each chunk's
// mass spread evenly over the chunk's non-empty bins (TensorRT's entropy calibration).
double ClippedKL(const std::vector<int64_t>& bins, int end, int levels) {
  std::vector<double> p(bins.begin(), bins.begin() + end);
  for (size_t i = end; i < bins.size(); ++i) p[end - 1] += static_cast<double>(bins[i]);  // clipped to T
  std::vector<double> q(end, 0.0);
  for (int chunk = 0; chunk < levels; ++chunk) {
    int lo = static_cast<int>(static_cast<int64_t>(chunk) * end / levels);
    int hi = static_cast<int>(static_cast<int64_t>(chunk + 1) * end / levels);
    double mass = 0;
    int nonzero = 0;
    for (int i = lo; i < hi; ++i) {
      // The chunk's mass from the unclipped bins: clipping is what Q cannot represent.
      mass += static_cast<double>(bins[i]);
      nonzero += bins[i] > 0;
    }
    for (int i = lo; i < hi; ++i) q[i] = bins[i] > 0 ? mass / nonzero : 0.0;
  }
  double p_sum = 0, q_sum = 0;
  for (int i = 0; i < end; ++i) {
    p_sum += p[i];
    q_sum += q[i];
  }
  if (p_sum == 0 || q_sum == 0) return 0;
  double kl = 0;
  for (int i = 0; i < end; ++i) {
    if (p[i] == 0) continue;
    double pn = p[i] / p_sum, qn = q[i] / q_sum;
    // A clipped tail landing in a bin Q leaves empty: a large penalty, not infinity.
    kl += pn * std::log(pn / (qn > 0 ? qn : 1e-12));
  }
  return kl;
}

}  // namespace

double RangeHistogram::EntropyThreshold(bool positive, int levels) const {
  const Half& half = positive ? positive_ : negative_;
  if (half.count == 0 || half.width == 0) return 0;
  int last = 0;  // the last non-empty bin: thresholds past it clip nothing
  for (int i = 0; i < kBins; ++i)
    if (half.bins[i] > 0) last = i;
  if (last + 1 <= levels) return (last + 1) * half.width;
  double best_kl = std::numeric_limits<double>::infinity();
  int best = last + 1;
  const int step = std::max(1, (last + 1 - levels) / 256);  // at most ~256 candidates
  for (int end = levels; end <= last + 1; end += step) {
    double kl = ClippedKL(half.bins, end, levels);
    if (kl < best_kl) {
      best_kl = kl;
      best = end;
    }
  }
  return best * half.width;
}

}  // namespace quantize
}  // namespace agate
