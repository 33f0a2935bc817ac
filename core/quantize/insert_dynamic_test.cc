// Dynamic quantization (--quantize int8-dynamic) on small graphs: MatMul (3-D activations, two
// products sharing one DynamicQuantizeLinear) and Gemm (transB, bias) rewritten into
// DynamicQuantizeLinear + MatMulInteger + scale, near the float graph; products of two activations
// and --keep-float nodes stay float and are reported; QuantizeGraph takes the dynamic form without
// samples.
#include "core/quantize/insert_dynamic.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/graph/passes/quantize_dynamic.h"
#include "core/graph/testing/graph_builder.h"
#include "core/graph_eval/interpreter.h"
#include "core/quantize/quantize_model.h"

namespace agate {
namespace quantize {
namespace {

using graph::Attribute;
using graph::DType;
using graph::Graph;
using graph::Tensor;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;
using graph::testing::RandomTensor;

const DType kF32 = DType::Float(32);

int Count(const Graph& g, const std::string& op) {
  return static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(), [&](const graph::Node& n) { return n.op == op; }));
}

// x [2, 5, 16] -> q = x W_q + b_q, k = x W_k (both read x), s = q k^T (two activations) -> y;
// z [3, 16] -> Gemm(z, W_g^T, c) -> g.
Graph Model() {
  Graph g;
  g.AddInput("x", TensorType{kF32, {2, 5, 16}});
  g.AddInput("z", TensorType{kF32, {3, 16}});
  g.AddConstant("wq", RandomTensor({16, 12}, 1, -0.5, 0.5));
  g.AddConstant("bq", RandomTensor({12}, 2, -0.2, 0.2));
  g.AddConstant("wk", RandomTensor({16, 12}, 3, -0.5, 0.5));
  g.AddConstant("wg", RandomTensor({7, 16}, 4, -0.5, 0.5));
  g.AddConstant("cg", RandomTensor({7}, 5, -0.2, 0.2));
  Add(&g, "MatMul", "proj_q", {"x", "wq"}, {"q0"});
  Add(&g, "Add", "bias_q", {"q0", "bq"}, {"q"});
  Add(&g, "MatMul", "proj_k", {"x", "wk"}, {"k"});
  Add(&g, "Transpose", "kt", {"k"}, {"kt"}, {{"perm", Attribute(std::vector<int64_t>{0, 2, 1})}});
  Add(&g, "MatMul", "scores", {"q", "kt"}, {"y"});
  Add(&g, "Gemm", "fc", {"z", "wg", "cg"}, {"g"}, {{"transB", Attribute(int64_t{1})}});
  return Finish(g, {"y", "g"});
}

std::map<std::string, Tensor> Inputs(const Graph& g, uint32_t seed) {
  std::map<std::string, Tensor> in;
  for (const std::string& name : g.inputs) in[name] = RandomTensor(g.TypeOf(name).shape, seed++);
  return in;
}

TEST(InsertDynamic, MatMulAndGemmBecomeMatMulIntegerNearTheFloatGraph) {
  Graph g = Model();
  QuantizeReport report;
  Graph q = InsertDynamicQuantization(g, {}, &report);
  EXPECT_EQ(report.candidates, 4);
  EXPECT_EQ(report.quantized.size(), 3u);
  ASSERT_EQ(report.kept_float.size(), 1u);
  EXPECT_NE(report.kept_float[0].find("scores"), std::string::npos) << report.kept_float[0];
  EXPECT_EQ(Count(q, "MatMulInteger"), 3);
  EXPECT_EQ(Count(q, "DynamicQuantizeLinear"), 2);  // x once for both of its products, z
  EXPECT_EQ(Count(q, "MatMul"), 1);
  EXPECT_EQ(Count(q, "Gemm"), 0);
  EXPECT_EQ(q.inputs, g.inputs);
  EXPECT_EQ(q.outputs, g.outputs);
  for (const graph::Node& n : q.nodes) {
    if (n.op != "MatMulInteger") continue;
    const Tensor& w = q.ConstantOf(n.inputs[1]);
    EXPECT_EQ(w.dtype(), DType::Int(8));
    for (int64_t i = 0; i < w.numel(); ++i) EXPECT_LE(std::abs(w.GetInt(i)), 127);
    const Tensor& zero = q.ConstantOf(n.inputs[3]);
    EXPECT_EQ(zero.numel(), w.shape()[1]);  // per output column, all 0
    for (int64_t i = 0; i < zero.numel(); ++i) EXPECT_EQ(zero.GetInt(i), 0);
  }
  // Within 2% of the largest output (8-bit activations and weights: steps of 1/255 and 1/127 of
  // their ranges).
  Graph decomposed = graph::DecomposeDynamicQuantize(q);
  for (uint32_t seed : {1u, 2u}) {
    auto want = graph_eval::Interpret(g, Inputs(g, seed));
    auto got = graph_eval::Interpret(decomposed, Inputs(g, seed));
    for (const std::string& out : {"y", "g"}) {
      double magnitude = 0, diff = 0;
      for (int64_t i = 0; i < want.at(out).numel(); ++i) {
        magnitude = std::max(magnitude, std::fabs(want.at(out).GetDouble(i)));
        diff = std::max(diff, std::fabs(want.at(out).GetDouble(i) - got.at(out).GetDouble(i)));
      }
      EXPECT_GT(diff, 0) << out << ": not quantized?";
      EXPECT_LE(diff, 0.02 * magnitude) << out;
    }
  }
}

TEST(InsertDynamic, KeepFloatAndQuantizeGraphWithoutSamples) {
  Graph g = Model();
  QuantizeReport report;
  Graph q = InsertDynamicQuantization(g, {"proj_k", "Gemm"}, &report);
  EXPECT_EQ(report.quantized.size(), 1u);
  EXPECT_EQ(Count(q, "MatMulInteger"), 1);
  EXPECT_EQ(Count(q, "Gemm"), 1);
  QuantizeOptions options;
  options.dynamic = true;
  QuantizedGraph result = QuantizeGraph(g, options);
  EXPECT_EQ(Count(result.graph, "MatMulInteger"), 3);
  EXPECT_NE(result.description.find("int8 dynamic"), std::string::npos) << result.description;
  EXPECT_NE(result.description.find("3 of 4 MatMul/Gemm nodes int8"), std::string::npos) << result.description;
}

}  // namespace
}  // namespace quantize
}  // namespace agate
