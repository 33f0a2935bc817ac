#include "core/quantize/calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>

#include "core/graph_eval/interpreter.h"
#include "core/quantize/histogram.h"
#include "core/support/error.h"

namespace agate {
namespace quantize {

using graph::DType;
using graph::Graph;
using graph::Shape;
using graph::Tensor;

CalibrationConfig ParseCalibrationMethod(const std::string& text) {
  CalibrationConfig config;
  if (text == "minmax") return config;
  if (text == "entropy") {
    config.method = CalibrationMethod::kEntropy;
    return config;
  }
  const std::string prefix = "percentile";
  AGATE_REQUIRE(text.rfind(prefix, 0) == 0, kInvalidArgument)
      << "--calibration-method '" << text << "': expected minmax, entropy, percentile or percentile:P (50 < P <= 100)";
  config.method = CalibrationMethod::kPercentile;
  if (text.size() == prefix.size()) return config;
  AGATE_REQUIRE(text[prefix.size()] == ':' && text.size() > prefix.size() + 1, kInvalidArgument)
      << "--calibration-method '" << text << "': expected percentile:P, e.g. percentile:99.99";
  const std::string number = text.substr(prefix.size() + 1);
  char* end = nullptr;
  double p = std::strtod(number.c_str(), &end);
  AGATE_REQUIRE(end != number.c_str() && *end == '\0' && p > 50 && p <= 100, kInvalidArgument)
      << "--calibration-method '" << text << "': the percentile '" << number << "' is not a number in (50, 100]";
  config.percentile = p;
  return config;
}

std::string CalibrationMethodName(const CalibrationConfig& config) {
  if (config.method == CalibrationMethod::kMinMax) return "minmax";
  if (config.method == CalibrationMethod::kEntropy) return "entropy";
  std::ostringstream os;
  os << "percentile:" << config.percentile;
  return os.str();
}

int64_t CheckCalibrationSamples(const Graph& graph, const std::map<std::string, Tensor>& samples,
                                const std::string& source) {
  int64_t count = -1;
  std::string first;
  for (const std::string& input : graph.inputs) {
    auto it = samples.find(input);
    const graph::TensorType& type = graph.TypeOf(input);
    AGATE_REQUIRE(it != samples.end(), kInvalidArgument)
        << "calibration samples '" << source << "': no entry for model input '" << input << "' (expected "
        << type.dtype << " [N," << graph::ShapeToString(type.shape).substr(1) << ": N samples of the input; the "
        << "file's entries: " << [&] {
             std::string all;
             for (const auto& [name, array] : samples) all += (all.empty() ? "" : ", ") + name;
             return all.empty() ? std::string("none") : all;
           }()
        << ")";
    const Tensor& array = it->second;
    Shape sample_shape(array.shape().begin() + std::min<size_t>(1, array.shape().size()), array.shape().end());
    AGATE_REQUIRE(array.dtype() == type.dtype, kInvalidArgument)
        << "calibration samples '" << source << "': entry '" << input << "' is " << array.dtype() << ", input '"
        << input << "' is " << type.dtype;
    AGATE_REQUIRE(array.rank() == type.rank() + 1 && sample_shape == type.shape, kInvalidArgument)
        << "calibration samples '" << source << "': entry '" << input << "' has shape "
        << graph::ShapeToString(array.shape()) << "; expected [N," << graph::ShapeToString(type.shape).substr(1)
        << " (N samples of input '" << input << "' " << type.ToString() << ")";
    int64_t n = array.shape()[0];
    AGATE_REQUIRE(n > 0, kInvalidArgument)
        << "calibration samples '" << source << "': entry '" << input << "' holds zero samples";
    AGATE_REQUIRE(count < 0 || n == count, kInvalidArgument)
        << "calibration samples '" << source << "': entry '" << input << "' holds " << n << " samples, entry '"
        << first << "' " << count;
    if (array.dtype().is_float()) {
      for (int64_t i = 0; i < array.numel(); ++i) {
        AGATE_REQUIRE(std::isfinite(array.GetDouble(i)), kInvalidArgument)
            << "calibration samples '" << source << "': entry '" << input << "' holds " << array.GetDouble(i)
            << " at element " << i << "; samples must be finite";
      }
    }
    count = n;
    first = input;
  }
  for (const auto& [name, array] : samples) {
    AGATE_REQUIRE(graph.IsGraphInput(name), kInvalidArgument)
        << "calibration samples '" << source << "': entry '" << name << "' names no input of the model (its inputs: "
        << [&] {
             std::string all;
             for (const std::string& in : graph.inputs) all += (all.empty() ? "" : ", ") + in;
             return all;
           }()
        << ")";
  }
  AGATE_REQUIRE(count > 0, kInvalidArgument) << "calibration samples '" << source << "': the model has no inputs";
  return count;
}

namespace {

// Sample i of an [N, ...] array.
Tensor SampleOf(const Tensor& array, int64_t i) {
  Shape shape(array.shape().begin() + 1, array.shape().end());
  size_t bytes = static_cast<size_t>(graph::NumElements(shape)) * array.dtype().element_bytes();
  const uint8_t* base = static_cast<const uint8_t*>(array.raw_data());
  return Tensor::FromBytes(array.dtype(), shape, base + bytes * i, bytes);
}

ValueRange RangeOf(const RangeHistogram& h, const CalibrationConfig& config) {
  ValueRange r;
  if (config.method == CalibrationMethod::kMinMax) {
    r.min = h.min();
    r.max = h.max();
  } else if (config.method == CalibrationMethod::kEntropy) {
    // 255 steps for a one-sided tensor (after ReLU); a two-sided one shares them, about half a side.
    bool two_sided = h.min() < 0 && h.max() > 0;
    int levels = two_sided ? 128 : 255;
    r.min = std::max(-h.EntropyThreshold(false, levels), h.min());
    r.max = std::min(h.EntropyThreshold(true, levels), h.max());
  } else {
    double p = config.percentile / 100.0;
    r.min = h.Quantile(1.0 - p);
    r.max = h.Quantile(p);
  }
  r.min = std::min(r.min, 0.0);
  r.max = std::max(r.max, 0.0);
  return r;
}

}  // namespace

Calibration Calibrate(const Graph& graph, const std::map<std::string, Tensor>& samples,
                      const CalibrationConfig& config, const std::string& source) {
  const int64_t n = CheckCalibrationSamples(graph, samples, source);
  std::map<std::string, std::unique_ptr<RangeHistogram>> histograms;
  for (const auto& [value, type] : graph.types) {
    if (type.dtype == DType::Float(32) && !graph.IsConstant(value)) histograms[value] = std::make_unique<RangeHistogram>();
  }
  auto observe = [&](const std::string& value, const Tensor& tensor) {
    auto it = histograms.find(value);
    if (it == histograms.end() || tensor.dtype() != DType::Float(32)) return;
    const float* data = tensor.data<float>();
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      AGATE_REQUIRE(!std::isinf(data[i]), kInvalidArgument)
          << "calibration: value '" << value << "' is infinite on a sample of '" << source
          << "'; the float model overflows there and cannot be calibrated";
    }
    it->second->Add(data, tensor.numel());
  };
  for (int64_t i = 0; i < n; ++i) {
    std::map<std::string, Tensor> inputs;
    for (const std::string& input : graph.inputs) inputs[input] = SampleOf(samples.at(input), i);
    graph_eval::Interpret(graph, inputs, observe);
  }
  Calibration result;
  result.samples = n;
  for (const auto& [value, h] : histograms) {
    // A model output is what the user reads: clipping it (its largest logits) is never a gain.
    if (h->count() > 0) result.ranges[value] = RangeOf(*h, graph.IsGraphOutput(value) ? CalibrationConfig{} : config);
  }
  return result;
}

}  // namespace quantize
}  // namespace agate
