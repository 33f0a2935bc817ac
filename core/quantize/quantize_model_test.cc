// QuantizeGraph: batch norm folded into the convolution before calibration (so the quantized
// convolution carries it), the description the module records, and the refusals: a model that
// is already quantized, bad samples before any pass runs.
#include "core/quantize/quantize_model.h"

#include <gtest/gtest.h>

#include "core/graph/passes/qdq_folding.h"
#include "core/graph/passes/testing/rewrite_check.h"
#include "core/graph/testing/graph_builder.h"
#include "core/support/error.h"

namespace agate {
namespace quantize {
namespace {

using graph::Attribute;
using graph::DType;
using graph::Graph;
using graph::Tensor;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::CountOps;
using graph::testing::Finish;
using graph::testing::OutputDifference;
using graph::testing::RandomTensor;

const DType kF32 = DType::Float(32);

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// x -> Conv -> BatchNormalization -> Relu -> GlobalAveragePool -> Flatten -> Gemm -> y.
Graph SmallCnn() {
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, 3, 8, 8}});
  g.AddConstant("w", RandomTensor({6, 3, 3, 3}, 1, -0.5, 0.5));
  g.AddConstant("gamma", RandomTensor({6}, 2, 0.5, 1.5));
  g.AddConstant("beta", RandomTensor({6}, 3, -0.2, 0.2));
  g.AddConstant("mean", RandomTensor({6}, 4, -0.1, 0.1));
  g.AddConstant("var", RandomTensor({6}, 5, 0.5, 1.0));
  g.AddConstant("fc_w", RandomTensor({5, 6}, 6, -0.5, 0.5));
  g.AddConstant("fc_b", RandomTensor({5}, 7, -0.1, 0.1));
  Add(&g, "Conv", "conv", {"x", "w"}, {"c"}, {{"pads", Attribute(std::vector<int64_t>{1, 1, 1, 1})}});
  Add(&g, "BatchNormalization", "bn", {"c", "gamma", "beta", "mean", "var"}, {"b"});
  Add(&g, "Relu", "relu", {"b"}, {"r"});
  Add(&g, "GlobalAveragePool", "gap", {"r"}, {"p"});
  Add(&g, "Flatten", "flatten", {"p"}, {"f"});
  Add(&g, "Gemm", "fc", {"f", "fc_w", "fc_b"}, {"y"}, {{"transB", int64_t{1}}});
  return Finish(g, {"y"});
}

QuantizeOptions OptionsFor(const Graph& g, int64_t n = 8) {
  QuantizeOptions o;
  o.samples["x"] = RandomTensor({n, 1, 3, 8, 8}, 9);
  o.samples_source = "cal.npz";
  return o;
}

TEST(QuantizeGraph, FoldsBatchNormThenQuantizesEveryConvAndGemm) {
  Graph g = SmallCnn();
  QuantizedGraph q = QuantizeGraph(g, OptionsFor(g));
  EXPECT_EQ(q.samples, 8);
  EXPECT_EQ(q.report.candidates, 2);
  EXPECT_EQ(q.report.quantized.size(), 2u);
  EXPECT_EQ(CountOps(q.graph, "BatchNormalization"), 0);
  Graph folded = graph::FoldQDQ(q.graph);
  EXPECT_EQ(CountOps(folded, "QLinearConv") + CountOps(folded, "MatMulInteger"), 2);  // the conv and the Gemm
  EXPECT_LE(OutputDifference(g, folded), 0.05);
  EXPECT_NE(q.description.find("int8; calibration cal.npz (8 samples, minmax); 2 of 2 Conv/MatMul/Gemm"),
            std::string::npos)
      << q.description;
}

TEST(QuantizeGraph, KeepFloatAndMethodAreRecorded) {
  Graph g = SmallCnn();
  QuantizeOptions o = OptionsFor(g);
  o.keep_float = {"fc"};
  o.calibration = ParseCalibrationMethod("percentile:99.9");
  QuantizedGraph q = QuantizeGraph(g, o);
  EXPECT_EQ(q.report.quantized.size(), 1u);
  EXPECT_NE(q.description.find("percentile:99.9"), std::string::npos) << q.description;
  EXPECT_NE(q.description.find("--keep-float fc"), std::string::npos) << q.description;
  EXPECT_NE(q.description.find("Gemm 'fc': --keep-float"), std::string::npos) << q.description;
}

TEST(QuantizeGraph, Refusals) {
  Graph g = SmallCnn();
  QuantizeOptions bad = OptionsFor(g);
  bad.samples["x"] = RandomTensor({2, 3, 8, 8}, 9);
  EXPECT_NE(ErrorOf([&] { QuantizeGraph(g, bad); }).find("entry 'x' has shape [2,3,8,8]"), std::string::npos);
  QuantizeOptions unknown = OptionsFor(g);
  unknown.keep_float = {"Sofmax"};
  EXPECT_NE(ErrorOf([&] { QuantizeGraph(g, unknown); }).find("--keep-float 'Sofmax'"), std::string::npos);

  Graph quantized;
  quantized.AddInput("x", TensorType{kF32, {4}});
  quantized.AddConstant("s", Tensor::Scalar(kF32, 0.1));
  Add(&quantized, "QuantizeLinear", "q", {"x", "s"}, {"xq"});
  Add(&quantized, "DequantizeLinear", "dq", {"xq", "s"}, {"y"});
  quantized = Finish(quantized, {"y"});
  QuantizeOptions o;
  o.samples["x"] = RandomTensor({2, 4}, 1);
  std::string e = ErrorOf([&] { QuantizeGraph(quantized, o); });
  EXPECT_NE(e.find("already quantized (QuantizeLinear 'q')"), std::string::npos) << e;
}

}  // namespace
}  // namespace quantize
}  // namespace agate
