// Calibration: per-value ranges of a small graph over samples against values computed directly
// from the samples (min/max, and np.percentile's linear quantile within one histogram bin); the
// sample file's format enforced, each refusal naming the entry or flag.
#include "core/quantize/calibration.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/graph/testing/graph_builder.h"
#include "core/support/error.h"

namespace agate {
namespace quantize {
namespace {

using graph::DType;
using graph::Graph;
using graph::Tensor;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;
using graph::testing::RandomTensor;

const DType kF32 = DType::Float(32);

// x[6] -> Relu -> r -> Mul(3) -> m (output); x -> Neg -> n (output).
Graph TinyGraph() {
  Graph g;
  g.AddInput("x", TensorType{kF32, {6}});
  g.AddConstant("three", Tensor::Scalar(kF32, 3.0));
  Add(&g, "Relu", "relu", {"x"}, {"r"});
  Add(&g, "Mul", "mul", {"r", "three"}, {"m"});
  Add(&g, "Neg", "neg", {"x"}, {"n"});
  return Finish(g, {"m", "n"});
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

double SortedQuantile(std::vector<double> v, double fraction) {
  std::sort(v.begin(), v.end());
  double at = fraction * (v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(at));
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (at - lo);
}

TEST(Calibration, MinMaxOfEveryValue) {
  Graph g = TinyGraph();
  Tensor samples = RandomTensor({4, 6}, 11, -2.0, 5.0);
  Calibration c = Calibrate(g, {{"x", samples}}, CalibrationConfig{}, "samples.npz");
  EXPECT_EQ(c.samples, 4);
  double lo = 0, hi = 0;  // the ranges always hold 0
  for (int64_t i = 0; i < samples.numel(); ++i) {
    lo = std::min(lo, samples.GetDouble(i));
    hi = std::max(hi, samples.GetDouble(i));
  }
  EXPECT_FLOAT_EQ(c.ranges.at("x").min, lo);
  EXPECT_FLOAT_EQ(c.ranges.at("x").max, hi);
  EXPECT_FLOAT_EQ(c.ranges.at("r").min, 0);
  EXPECT_FLOAT_EQ(c.ranges.at("r").max, hi);
  EXPECT_FLOAT_EQ(c.ranges.at("m").max, 3 * hi);
  EXPECT_FLOAT_EQ(c.ranges.at("n").min, -hi);
  EXPECT_FLOAT_EQ(c.ranges.at("n").max, -lo);
  EXPECT_EQ(c.ranges.count("three"), 0u);  // constants are not calibrated
}

TEST(Calibration, PercentileClipsOutliers) {
  Graph g = TinyGraph();
  Tensor samples = RandomTensor({400, 6}, 12, -1.0, 1.0);
  samples.SetDouble(17, 1000.0);  // one outlier in 2400 values
  CalibrationConfig config = ParseCalibrationMethod("percentile:99");
  Calibration c = Calibrate(g, {{"x", samples}}, config, "samples.npz");
  std::vector<double> all = samples.ToDoubles();
  // The histogram's bins are max|x| / 2048 wide at worst twice over: 1000 / 1024.
  EXPECT_NEAR(c.ranges.at("x").max, SortedQuantile(all, 0.99), 1000.0 / 1024 + 0.01);
  EXPECT_NEAR(c.ranges.at("x").min, SortedQuantile(all, 0.01), 1000.0 / 1024 + 0.01);
  EXPECT_LT(c.ranges.at("x").max, 2.0);  // the outlier is clipped
  Calibration minmax = Calibrate(g, {{"x", samples}}, CalibrationConfig{}, "samples.npz");
  EXPECT_EQ(minmax.ranges.at("x").max, 1000.0);
  // The model's outputs keep their min-max range under every method: n = -x reaches -1000.
  EXPECT_FLOAT_EQ(c.ranges.at("n").min, -1000.0);
  EXPECT_FLOAT_EQ(Calibrate(g, {{"x", samples}}, ParseCalibrationMethod("entropy"), "s").ranges.at("n").min, -1000.0);
  EXPECT_LT(Calibrate(g, {{"x", samples}}, ParseCalibrationMethod("entropy"), "s").ranges.at("x").max, 1000.0);
}

TEST(Calibration, ConstantZeroTensorHasZeroRange) {
  Graph g = TinyGraph();
  Tensor samples(kF32, {3, 6});
  Calibration c = Calibrate(g, {{"x", samples}}, CalibrationConfig{}, "zeros.npz");
  EXPECT_EQ(c.ranges.at("m").min, 0);
  EXPECT_EQ(c.ranges.at("m").max, 0);
}

TEST(Calibration, ParsesMethods) {
  EXPECT_EQ(ParseCalibrationMethod("minmax").method, CalibrationMethod::kMinMax);
  CalibrationConfig p = ParseCalibrationMethod("percentile");
  EXPECT_EQ(p.method, CalibrationMethod::kPercentile);
  EXPECT_EQ(p.percentile, 99.99);
  EXPECT_EQ(ParseCalibrationMethod("percentile:99.9").percentile, 99.9);
  EXPECT_EQ(CalibrationMethodName(ParseCalibrationMethod("percentile:99.9")), "percentile:99.9");
  EXPECT_EQ(ParseCalibrationMethod("entropy").method, CalibrationMethod::kEntropy);
  for (const char* bad : {"kl", "percentile:", "percentile:40", "percentile:101", "percentile:9x", "percentile99"}) {
    EXPECT_NE(ErrorOf([&] { ParseCalibrationMethod(bad); }).find("--calibration-method"), std::string::npos) << bad;
  }
}

TEST(Calibration, RefusesBadSamplesNamingTheEntry) {
  Graph g = TinyGraph();
  auto check = [&](std::map<std::string, Tensor> samples) {
    return ErrorOf([&] { CheckCalibrationSamples(g, samples, "cal.npz"); });
  };
  Tensor good = RandomTensor({2, 6}, 1);
  EXPECT_EQ(check({{"x", good}}), "(no error)");
  std::string missing = check({});
  EXPECT_NE(missing.find("no entry for model input 'x'"), std::string::npos) << missing;
  EXPECT_NE(missing.find("cal.npz"), std::string::npos) << missing;
  std::string extra = check({{"x", good}, {"y", good}});
  EXPECT_NE(extra.find("entry 'y' names no input"), std::string::npos) << extra;
  std::string shape = check({{"x", RandomTensor({2, 5}, 1)}});
  EXPECT_NE(shape.find("entry 'x' has shape [2,5]"), std::string::npos) << shape;
  std::string unbatched = check({{"x", RandomTensor({6}, 1)}});
  EXPECT_NE(unbatched.find("entry 'x' has shape"), std::string::npos) << unbatched;
  std::string dtype = check({{"x", Tensor(DType::Float(64), {2, 6})}});
  EXPECT_NE(dtype.find("entry 'x' is float64"), std::string::npos) << dtype;
  std::string empty = check({{"x", Tensor(kF32, {0, 6})}});
  EXPECT_NE(empty.find("entry 'x' holds zero samples"), std::string::npos) << empty;
  Tensor nan = good;
  nan.SetDouble(3, NAN);
  std::string not_finite = check({{"x", nan}});
  EXPECT_NE(not_finite.find("entry 'x' holds nan at element 3"), std::string::npos) << not_finite;
}

TEST(Calibration, SamplesAgreeInCount) {
  Graph g;
  g.AddInput("a", TensorType{kF32, {2}});
  g.AddInput("b", TensorType{kF32, {2}});
  Add(&g, "Add", "add", {"a", "b"}, {"c"});
  g = Finish(g, {"c"});
  std::string e = ErrorOf([&] {
    CheckCalibrationSamples(g, {{"a", RandomTensor({3, 2}, 1)}, {"b", RandomTensor({4, 2}, 2)}}, "cal.npz");
  });
  EXPECT_NE(e.find("entry 'b' holds 4 samples, entry 'a' 3"), std::string::npos) << e;
}

}  // namespace
}  // namespace quantize
}  // namespace agate
