// The quantization pass on small graphs: calibrated Q/DQ pairs that the QDQ folding turns into
// QLinearConv/QLinearMatMul (conv+relu, matmul, gemm, a residual), with the folded integer graph
// equal to the QDQ graph within one output step and near the float graph; --keep-float honoured
// by node name and op type; zero-width ranges never give a zero scale; unknown names refused.
#include "core/quantize/insert_qdq.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/graph/passes/qdq_folding.h"
#include "core/graph/passes/testing/rewrite_check.h"
#include "core/graph/testing/graph_builder.h"
#include "core/graph_eval/interpreter.h"
#include "core/quantize/calibration.h"
#include "core/support/error.h"

namespace agate {
namespace quantize {
namespace {

using graph::Attribute;
using graph::DType;
using graph::Graph;
using graph::Shape;
using graph::Tensor;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::CountOps;
using graph::testing::Finish;
using graph::testing::OutputDifference;
using graph::testing::RandomTensor;
using Ints = std::vector<int64_t>;

const DType kF32 = DType::Float(32);

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Calibrated on samples like OutputDifference's inputs (uniform in [-1, 1)).
std::map<std::string, ValueRange> RangesOf(const Graph& g, int samples = 64) {
  std::map<std::string, Tensor> arrays;
  for (const std::string& in : g.inputs) {
    Shape shape = g.TypeOf(in).shape;
    shape.insert(shape.begin(), samples);
    arrays[in] = RandomTensor(shape, 100 + static_cast<uint32_t>(arrays.size()));
  }
  return Calibrate(g, arrays, CalibrationConfig{}, "test samples").ranges;
}

// The largest |float output| on OutputDifference's inputs (seed 1).
double OutputMagnitude(const Graph& g) {
  std::map<std::string, Tensor> inputs;
  uint32_t seed = 1;
  for (const std::string& in : g.inputs) inputs[in] = RandomTensor(g.TypeOf(in).shape, seed++);
  double m = 0;
  for (const auto& [name, t] : graph_eval::Interpret(g, inputs))
    for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::fabs(t.GetDouble(i)));
  return m;
}

// x[1,3,8,8] -> conv1 (4 channels, bias) -> relu1 [-> conv2 (4 channels)] -> y.
Graph ConvGraph(bool two_convs, bool residual = false) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, 3, 8, 8}});
  g.AddConstant("w1", RandomTensor({4, 3, 3, 3}, 1, -0.5, 0.5));
  g.AddConstant("b1", RandomTensor({4}, 2, -0.2, 0.2));
  Add(&g, "Conv", "conv1", {"x", "w1", "b1"}, {"c1"}, {{"pads", Attribute(Ints{1, 1, 1, 1})}});
  Add(&g, "Relu", "relu1", {"c1"}, {two_convs ? "r1" : "y"});
  if (two_convs) {
    g.AddConstant("w2", RandomTensor({4, 4, 1, 1}, 3, -0.5, 0.5));
    Add(&g, "Conv", "conv2", {"r1", "w2"}, {residual ? "c2" : "y"});
    if (residual) Add(&g, "Add", "residual", {"r1", "c2"}, {"y"});
  }
  return Finish(g, {"y"});
}

// Inserts, folds, and checks the folded graph against the QDQ graph (one output step) and the
// float graph (`relative` of the largest float output).
Graph QuantizeAndFold(const Graph& g, const std::vector<std::string>& keep, QuantizeReport* report,
                      double relative = 0.03) {
  std::map<std::string, ValueRange> ranges = RangesOf(g);
  Graph qdq = InsertQDQ(g, ranges, keep, report);
  EXPECT_EQ(qdq.inputs, g.inputs);
  EXPECT_EQ(qdq.outputs, g.outputs);
  for (const std::string& out : g.outputs) EXPECT_EQ(qdq.TypeOf(out), g.TypeOf(out)) << out;
  Graph folded = graph::FoldQDQ(qdq);
  double step = 0;
  for (const std::string& out : g.outputs) step = std::max<double>(step, ActivationParamsOf(ranges.at(out)).scale);
  for (uint32_t seed : {1u, 2u}) {
    EXPECT_LE(OutputDifference(qdq, folded, seed), step * 1.001 + 1e-6);
    EXPECT_LE(OutputDifference(g, folded, seed), relative * OutputMagnitude(g));
  }
  return folded;
}

TEST(InsertQDQ, ConvReluBecomesQLinearConv) {
  Graph g = ConvGraph(false);
  QuantizeReport report;
  Graph qdq = InsertQDQ(g, RangesOf(g), {}, &report);
  EXPECT_EQ(report.candidates, 1);
  ASSERT_EQ(report.quantized.size(), 1u);
  // x and y quantized once each; x, the weight, the bias and y dequantized.
  EXPECT_EQ(CountOps(qdq, "QuantizeLinear"), 2);
  EXPECT_EQ(CountOps(qdq, "DequantizeLinear"), 4);
  Graph folded = QuantizeAndFold(g, {}, &report);
  EXPECT_EQ(CountOps(folded, "QLinearConv"), 1);
  EXPECT_EQ(CountOps(folded, "Conv"), 0);
  EXPECT_EQ(CountOps(folded, "Relu"), 0);  // a bound on the quantized result
}

TEST(InsertQDQ, WeightsPerChannelSymmetricBiasInt32) {
  Graph g = ConvGraph(false);
  Graph qdq = InsertQDQ(g, RangesOf(g), {}, nullptr);
  bool weight = false, bias = false;
  for (const graph::Node& n : qdq.nodes) {
    if (n.op != "DequantizeLinear" || !qdq.IsConstant(n.inputs[0])) continue;
    const Tensor& data = qdq.ConstantOf(n.inputs[0]);
    const Tensor& scale = qdq.ConstantOf(n.inputs[1]);
    const Tensor& zero = qdq.ConstantOf(n.inputs[2]);
    EXPECT_EQ(scale.numel(), 4);  // one per output channel
    for (int64_t i = 0; i < zero.numel(); ++i) EXPECT_EQ(zero.GetInt(i), 0);
    if (data.dtype() == DType::Int(8)) {
      weight = true;
      const Tensor& w = g.ConstantOf("w1");
      for (int64_t c = 0; c < 4; ++c) {
        double max_abs = 0;
        for (int64_t i = 0; i < 27; ++i) max_abs = std::max(max_abs, std::fabs(w.GetDouble(c * 27 + i)));
        EXPECT_FLOAT_EQ(scale.GetDouble(c), max_abs / 127);
      }
      for (int64_t i = 0; i < data.numel(); ++i) EXPECT_LE(std::abs(data.GetInt(i)), 127);
    } else {
      bias = true;
      EXPECT_EQ(data.dtype(), DType::Int(32));
    }
  }
  EXPECT_TRUE(weight);
  EXPECT_TRUE(bias);
}

TEST(InsertQDQ, ChainAndResidualShareOnePair) {
  for (bool residual : {false, true}) {
    Graph g = ConvGraph(true, residual);
    QuantizeReport report;
    Graph folded = QuantizeAndFold(g, {}, &report, 0.05);
    EXPECT_EQ(report.quantized.size(), 2u);
    EXPECT_EQ(CountOps(folded, "QLinearConv"), 2) << "residual " << residual;
    EXPECT_EQ(CountOps(folded, "Conv"), 0);
    // r1 is quantized once: conv2 and the residual Add read the same dequantized value.
    EXPECT_EQ(CountOps(InsertQDQ(g, RangesOf(g), {}, nullptr), "QuantizeLinear"), 3);
  }
}

TEST(InsertQDQ, MatMulAndGemm) {
  Graph m;
  m.AddInput("x", TensorType{kF32, {4, 16}});
  m.AddConstant("w", RandomTensor({16, 8}, 5, -0.5, 0.5));
  Add(&m, "MatMul", "mm", {"x", "w"}, {"y"});
  m = Finish(m, {"y"});
  QuantizeReport report;
  Graph folded = QuantizeAndFold(m, {}, &report);
  EXPECT_EQ(CountOps(folded, "QLinearMatMul"), 1);
  EXPECT_EQ(CountOps(folded, "MatMul"), 0);

  Graph gemm;
  gemm.AddInput("x", TensorType{kF32, {2, 16}});
  gemm.AddConstant("w", RandomTensor({8, 16}, 6, -0.5, 0.5));
  gemm.AddConstant("b", RandomTensor({8}, 7, -0.5, 0.5));
  Add(&gemm, "Gemm", "fc", {"x", "w", "b"}, {"y"}, {{"transB", int64_t{1}}});
  gemm = Finish(gemm, {"y"});
  folded = QuantizeAndFold(gemm, {}, &report);
  EXPECT_EQ(CountOps(folded, "MatMulInteger"), 1);  // the folding's integer-product form of Gemm
  EXPECT_EQ(CountOps(folded, "Gemm"), 0);
}

TEST(InsertQDQ, KeepFloatByNameAndByOpType) {
  Graph g = ConvGraph(true);
  QuantizeReport report;
  Graph by_name = InsertQDQ(g, RangesOf(g), {"conv2"}, &report);
  Graph folded = graph::FoldQDQ(by_name);
  EXPECT_EQ(CountOps(folded, "QLinearConv"), 1);
  EXPECT_EQ(CountOps(folded, "Conv"), 1);
  ASSERT_EQ(report.kept_float.size(), 1u);
  EXPECT_NE(report.kept_float[0].find("conv2"), std::string::npos);
  EXPECT_NE(report.Summary().find("1 of 2"), std::string::npos) << report.Summary();

  QuantizeReport none;
  Graph by_type = InsertQDQ(g, RangesOf(g), {"Conv"}, &none);
  EXPECT_EQ(none.quantized.size(), 0u);
  EXPECT_EQ(CountOps(by_type, "QuantizeLinear"), 0);
  EXPECT_EQ(CountOps(by_type, "DequantizeLinear"), 0);
}

TEST(InsertQDQ, KeptNodeComputesInFloat) {
  // MatMul -> Softmax with Softmax kept: the MatMul folds, the Softmax reads its result dequantized.
  Graph g;
  g.AddInput("x", TensorType{kF32, {4, 16}});
  g.AddConstant("w", RandomTensor({16, 8}, 5, -0.5, 0.5));
  Add(&g, "MatMul", "mm", {"x", "w"}, {"s"});
  Add(&g, "Softmax", "softmax", {"s"}, {"y"}, {{"axis", int64_t{-1}}});
  g = Finish(g, {"y"});
  QuantizeReport report;
  Graph folded = graph::FoldQDQ(InsertQDQ(g, RangesOf(g), {"Softmax"}, &report));
  EXPECT_EQ(report.quantized.size(), 1u);
  EXPECT_EQ(CountOps(folded, "QLinearMatMul"), 1);
  EXPECT_EQ(CountOps(folded, "Softmax"), 1);

  // x read by a quantized conv1 and a kept conv2: conv2 reads x itself, not its quantized copy.
  Graph two;
  two.AddInput("x", TensorType{kF32, {1, 3, 8, 8}});
  two.AddConstant("w1", RandomTensor({4, 3, 1, 1}, 1));
  two.AddConstant("w2", RandomTensor({4, 3, 1, 1}, 2));
  Add(&two, "Conv", "conv1", {"x", "w1"}, {"a"});
  Add(&two, "Conv", "conv2", {"x", "w2"}, {"b"});
  Add(&two, "Add", "sum", {"a", "b"}, {"y"});
  two = Finish(two, {"y"});
  Graph qdq = InsertQDQ(two, RangesOf(two), {"conv2"}, nullptr);
  for (const graph::Node& n : qdq.nodes) {
    if (n.name == "conv2") {
      EXPECT_EQ(n.inputs[0], "x");
      EXPECT_EQ(n.inputs[1], "w2");  // its weight stays float
    }
  }
  EXPECT_EQ(CountOps(graph::FoldQDQ(qdq), "QLinearConv"), 1);
}

TEST(InsertQDQ, ZeroWidthRangeGetsAPositiveScale) {
  EXPECT_EQ(ActivationParamsOf({0, 0}).scale, 1.0f);
  EXPECT_EQ(ActivationParamsOf({0, 0}).zero_point, 0);
  ActivationParams p = ActivationParamsOf({-1, 3});
  EXPECT_FLOAT_EQ(p.scale, 4.0f / 255);
  EXPECT_EQ(p.zero_point, 64);  // round(1 / (4 / 255)) = round(63.75)
  EXPECT_EQ(ActivationParamsOf({0, 2}).zero_point, 0);
  // A model whose activations are always 0: quantized, folded (no zero scale refused), still 0.
  Graph g = ConvGraph(false);
  std::map<std::string, ValueRange> zero_ranges;
  for (auto& [v, t] : g.types) zero_ranges[v] = ValueRange{0, 0};
  Graph folded = graph::FoldQDQ(InsertQDQ(g, zero_ranges, {}, nullptr));
  EXPECT_EQ(CountOps(folded, "QLinearConv"), 1);
}

TEST(InsertQDQ, UnknownKeepFloatNameIsRefused) {
  Graph g = ConvGraph(true);
  EXPECT_EQ(ErrorOf([&] { CheckKeepFloat(g, {"conv1", "Softmax", "LayerNormalization"}); }), "(no error)");
  std::string e = ErrorOf([&] { CheckKeepFloat(g, {"conv1", "conv_9"}); });
  EXPECT_NE(e.find("--keep-float 'conv_9'"), std::string::npos) << e;
}

TEST(InsertQDQ, NodeWithoutRangeStaysFloat) {
  Graph g = ConvGraph(false);
  QuantizeReport report;
  Graph same = InsertQDQ(g, {}, {}, &report);
  EXPECT_EQ(report.quantized.size(), 0u);
  ASSERT_EQ(report.kept_float.size(), 1u);
  EXPECT_NE(report.kept_float[0].find("no calibrated range for its input 'x'"), std::string::npos);
  EXPECT_EQ(CountOps(same, "QuantizeLinear"), 0);
}

}  // namespace
}  // namespace quantize
}  // namespace agate
