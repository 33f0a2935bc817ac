// A streaming histogram of one tensor's values: min, max and quantiles in bounded memory.
//
// Why: post-training calibration (calibration.h) runs the float model on every sample and needs,
// for each activation, its range (min-max) or a clipped range that ignores rare outliers
// (percentile). Keeping the activations of many samples would take gigabytes for a CNN; a
// histogram per tensor takes 2 x kBins counters whatever the sample count.
//
// How: positive values and the magnitudes of negative values go into two halves anchored at 0,
// each kBins equal bins over [0, kBins * width). When a value falls past the last bin, the half
// doubles its width by merging neighbouring bins pairwise (exact: bin edges stay aligned), so
// the bins always cover what was seen and resolution is width = max|x| / kBins at worst 2x finer.
// A quantile is exact up to one bin width, and clamped to the observed [min, max].
#ifndef AGATE_CORE_QUANTIZE_HISTOGRAM_H_
#define AGATE_CORE_QUANTIZE_HISTOGRAM_H_

#include <cstdint>
#include <vector>

namespace agate {
namespace quantize {

class RangeHistogram {
 public:
  static constexpr int kBins = 2048;

  // Adds n values (NaN is ignored; infinities are refused by the caller, calibration.cc).
  void Add(const float* values, int64_t n);

  int64_t count() const { return count_; }
  double min() const { return min_; }  // 0 when empty
  double max() const { return max_; }
  // The value below which `fraction` (in [0, 1]) of the values lie, linearly interpolated within a
  // bin; 0 when empty. Quantile(0) = min(), Quantile(1) = max().
  double Quantile(double fraction) const;
  // The widest bin of either half: the quantiles' resolution.
  double resolution() const;
  // Entropy calibration (TensorRT's): the clipping threshold T of one side of 0 (the positive
  // values, or the magnitudes of the negative ones) whose quantization to `levels` steps over
  // [0, T], values past T clipped to T, loses the least information: the T minimizing the KL
  // divergence between the side's histogram and its quantized form. 0 when the side is empty.
  double EntropyThreshold(bool positive, int levels) const;

 private:
  struct Half {
    std::vector<int64_t> bins = std::vector<int64_t>(kBins, 0);
    double width = 0;  // 0 until the first non-zero magnitude
    int64_t count = 0;
    void Cover(double magnitude);  // widens until `magnitude` falls in a bin
    void Add(double magnitude);
  };
  Half positive_, negative_;  // values > 0; magnitudes of values < 0
  int64_t zeros_ = 0;
  int64_t count_ = 0;
  double min_ = 0, max_ = 0;
};

}  // namespace quantize
}  // namespace agate

#endif  // AGATE_CORE_QUANTIZE_HISTOGRAM_H_
