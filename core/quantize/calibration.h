// Calibration: the range of every float activation of a model, measured by running the float graph
// on sample inputs with the reference interpreter (core/graph_eval).
//
// Why: post-training quantization (quantize_model.h) maps each activation's range onto 256 levels;
// the ranges come from running the model on inputs like those it will see. The interpreter is the
// oracle: it runs any graph, and its results are what the compiled float model computes.
//
// The samples: one array per graph input, named like the input, whose shape is the input's shape
// with a leading sample axis ([N, *input shape]; a [1, 3, 224, 224] input takes [N, 1, 3, 224, 224]),
// of the input's dtype; every array has the same N >= 1. Anything else (a missing or extra entry, a
// wrong shape or dtype, zero samples, a NaN or infinity) is refused naming the entry.
//
// Memory: one RangeHistogram per float value (histogram.h), never the activations themselves.
#ifndef AGATE_CORE_QUANTIZE_CALIBRATION_H_
#define AGATE_CORE_QUANTIZE_CALIBRATION_H_

#include <cstdint>
#include <map>
#include <string>

#include "core/graph/graph.h"

namespace agate {
namespace quantize {

enum class CalibrationMethod {
  kMinMax,      // the observed [min, max]
  kPercentile,  // [the (100 - p)th, the pth percentile] of all the samples' values: outliers clipped
  kEntropy,     // each side of 0 clipped where the KL divergence of its 8-bit quantization is least
};

struct CalibrationConfig {
  CalibrationMethod method = CalibrationMethod::kMinMax;
  double percentile = 99.99;  // p, for kPercentile
};

// "minmax", "entropy", "percentile" (99.99) or "percentile:P" with 50 < P <= 100. kInvalidArgument otherwise,
// naming the flag (--calibration-method).
CalibrationConfig ParseCalibrationMethod(const std::string& text);
// The text ParseCalibrationMethod reads back ("percentile:99.99").
std::string CalibrationMethodName(const CalibrationConfig& config);

// A value's calibrated range; always contains 0 (so that 0 is exactly representable, as zero
// padding and ReLU need).
struct ValueRange {
  double min = 0;
  double max = 0;
};

struct Calibration {
  std::map<std::string, ValueRange> ranges;  // every float32 graph input and node output
  int64_t samples = 0;
};

// Checks `samples` against the graph's inputs (the format above) and returns N. `source` names the
// samples in messages (the .npz file).
int64_t CheckCalibrationSamples(const graph::Graph& graph, const std::map<std::string, graph::Tensor>& samples,
                                const std::string& source);

// Runs the graph on each sample and returns the range of every float32 value under `config`; the
// graph's outputs always get their min-max range (clipping the largest logits is never a gain).
Calibration Calibrate(const graph::Graph& graph, const std::map<std::string, graph::Tensor>& samples,
                      const CalibrationConfig& config, const std::string& source);

}  // namespace quantize
}  // namespace agate

#endif  // AGATE_CORE_QUANTIZE_CALIBRATION_H_
