// Layer-norm and RMS-norm fusion on the node sequences PyTorch 1.13 exports
// (opset 13: nn.LayerNorm decomposed; opset 17: LayerNormalization, already one
// node; a LLaMA-style RMSNorm at both opsets), variants other exporters write,
// and near misses that must stay unfused.
#include "core/graph/passes/norm_fusion.h"

#include <gtest/gtest.h>

#include "core/graph/passes/testing/rewrite_check.h"
#include "core/graph/testing/graph_builder.h"

namespace agate {
namespace graph {
namespace {

using testing::Add;
using testing::CountOps;
using testing::Finish;
using testing::OutputDifference;
using testing::RandomTensor;

TensorType F32(Shape shape) { return TensorType{DType::Float(32), std::move(shape)}; }
Tensor Scalar(double v) { return Tensor::Scalar(DType::Float(32), v); }
using Ints = std::vector<int64_t>;

struct LayerNormSpec {
  Shape x = {2, 5, 16};
  Ints mean_axes = {-1};
  Ints var_axes = {-1};
  double exponent = 2.0;
  double epsilon = 1e-5;
  bool square_by_mul = false;    // Mul(d, d) instead of Pow(d, 2)
  bool reciprocal = false;       // d * Reciprocal(Sqrt(.)) instead of d / Sqrt(.)
  bool eps_first = false;        // Add(eps, var)
  bool affine = true;
  Shape gamma = {16};
  bool gamma_first = false;      // Mul(gamma, n)
  bool extra_reader = false;     // d also read outside the pattern
};

// nn.LayerNorm(16) exported by PyTorch 1.13 at opset 13 (and its variants):
//   ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add.
Graph LayerNormGraph(const LayerNormSpec& s) {
  Graph g;
  g.AddInput("input", F32(s.x));
  g.AddConstant("two", Scalar(s.exponent));
  g.AddConstant("eps", Scalar(s.epsilon));
  Add(&g, "ReduceMean", "mean", {"input"}, {"mean_out"}, {{"axes", s.mean_axes}});
  Add(&g, "Sub", "sub", {"input", "mean_out"}, {"d"});
  if (s.square_by_mul) {
    Add(&g, "Mul", "square", {"d", "d"}, {"sq"});
  } else {
    Add(&g, "Pow", "pow", {"d", "two"}, {"sq"});
  }
  Add(&g, "ReduceMean", "var", {"sq"}, {"var_out"}, {{"axes", s.var_axes}});
  Add(&g, "Add", "add_eps", s.eps_first ? std::vector<std::string>{"eps", "var_out"}
                                        : std::vector<std::string>{"var_out", "eps"},
      {"var_eps"});
  Add(&g, "Sqrt", "sqrt", {"var_eps"}, {"std"});
  if (s.reciprocal) {
    Add(&g, "Reciprocal", "recip", {"std"}, {"inv"});
    Add(&g, "Mul", "div", {"d", "inv"}, {"n"});
  } else {
    Add(&g, "Div", "div", {"d", "std"}, {"n"});
  }
  std::vector<std::string> outputs = {"n"};
  if (s.affine) {
    g.AddConstant("weight", RandomTensor(s.gamma, 1, 0.5, 1.5));
    g.AddConstant("bias", RandomTensor({s.x.back()}, 2));
    Add(&g, "Mul", "mul", s.gamma_first ? std::vector<std::string>{"weight", "n"}
                                        : std::vector<std::string>{"n", "weight"},
        {"scaled"});
    Add(&g, "Add", "add", {"scaled", "bias"}, {"y"});
    outputs = {"y"};
  }
  if (s.extra_reader) {
    Add(&g, "Relu", "other", {"d"}, {"other_out"});
    outputs.push_back("other_out");
  }
  return Finish(g, outputs);
}

TEST(NormFusionTest, LayerNormAsPyTorchExportsItAtOpset13) {
  Graph g = LayerNormGraph({});
  Graph fused = FuseNormalizations(g);
  ASSERT_EQ(fused.nodes.size(), 1u);
  const Node& ln = fused.nodes[0];
  EXPECT_EQ(ln.op, "LayerNormalization");
  EXPECT_EQ(ln.inputs, (std::vector<std::string>{"input", "weight", "bias"}));
  EXPECT_EQ(ln.attrs.GetInt("axis"), 2);
  EXPECT_DOUBLE_EQ(ln.attrs.GetFloat("epsilon"), static_cast<float>(1e-5));
  EXPECT_LT(OutputDifference(g, fused), 1e-5);
}

TEST(NormFusionTest, LayerNormVariants) {
  std::vector<LayerNormSpec> specs(6);
  specs[0].square_by_mul = true;
  specs[1].reciprocal = true;
  specs[2].eps_first = true;
  specs[2].gamma_first = true;
  specs[3].affine = false;  // a unit scale is made up
  specs[4].mean_axes = specs[4].var_axes = {1, 2};  // over the last two axes, scale [5, 16]
  specs[4].gamma = {5, 16};
  specs[5].x = {3, 7};
  specs[5].gamma = {7};
  specs[5].epsilon = 1e-12;
  for (size_t i = 0; i < specs.size(); ++i) {
    Graph g = LayerNormGraph(specs[i]);
    Graph fused = FuseNormalizations(g);
    EXPECT_EQ(CountOps(fused, "LayerNormalization"), 1) << "variant " << i;
    EXPECT_EQ(fused.nodes.size(), 1u) << "variant " << i;
    EXPECT_LT(OutputDifference(g, fused), 1e-5) << "variant " << i;
  }
}

TEST(NormFusionTest, LayerNormNearMissesStayUnfused) {
  std::vector<LayerNormSpec> specs(4);
  specs[0].var_axes = {-2};   // variance over another axis than the mean
  specs[1].exponent = 3.0;    // not a square
  specs[2].epsilon = -1e-5;   // a negative epsilon
  specs[3].mean_axes = specs[3].var_axes = {1};  // not trailing axes
  for (size_t i = 0; i < specs.size(); ++i) {
    Graph g = LayerNormGraph(specs[i]);
    Graph fused = FuseNormalizations(g);
    EXPECT_EQ(CountOps(fused, "LayerNormalization"), 0) << "near miss " << i;
    EXPECT_EQ(CountOps(fused, "RMSNormalization"), 0) << "near miss " << i;
    EXPECT_EQ(fused.nodes.size(), g.nodes.size()) << "near miss " << i;
  }
}

// When the centred value x - mean(x) is also read elsewhere it must stay computed: the rest is
// then an RMS norm of it (the same numbers), not a layer norm of x.
TEST(NormFusionTest, CentredValueReadElsewhereGivesAnRmsNormOfIt) {
  LayerNormSpec s;
  s.extra_reader = true;
  Graph g = LayerNormGraph(s);
  Graph fused = FuseNormalizations(g);
  EXPECT_EQ(CountOps(fused, "LayerNormalization"), 0);
  ASSERT_EQ(CountOps(fused, "RMSNormalization"), 1);
  EXPECT_EQ(CountOps(fused, "Sub"), 1);
  EXPECT_LT(OutputDifference(g, fused), 1e-5);
}

// A scale that also broadcasts over a batch axis cannot be LayerNormalization's scale: the
// normalization fuses, the Mul stays.
TEST(NormFusionTest, ScaleOverTheBatchStaysOutside) {
  LayerNormSpec s;
  s.gamma = {2, 1, 16};
  Graph g = LayerNormGraph(s);
  Graph fused = FuseNormalizations(g);
  EXPECT_EQ(CountOps(fused, "LayerNormalization"), 1);
  EXPECT_EQ(CountOps(fused, "Mul"), 1);
  EXPECT_EQ(CountOps(fused, "Add"), 1);
  EXPECT_LT(OutputDifference(g, fused), 1e-5);
}

// A LLaMA-style RMSNorm (x * rsqrt(mean(x^2) + eps) * weight) as PyTorch 1.13 exports it at
// opsets 13 and 17: Pow, ReduceMean(keepdims=1), Add, Sqrt, Div(1, .), Mul, Mul.
TEST(NormFusionTest, RmsNormAsPyTorchExportsIt) {
  Graph g;
  g.AddInput("x", F32({2, 5, 16}));
  g.AddConstant("two", Scalar(2));
  g.AddConstant("eps", Scalar(1e-6));
  g.AddConstant("one", Scalar(1));
  g.AddConstant("weight", RandomTensor({16}, 3, 0.5, 1.5));
  Add(&g, "Pow", "pow", {"x", "two"}, {"sq"});
  Add(&g, "ReduceMean", "mean", {"sq"}, {"ms"}, {{"axes", Ints{-1}}, {"keepdims", int64_t{1}}});
  Add(&g, "Add", "add", {"ms", "eps"}, {"ms_eps"});
  Add(&g, "Sqrt", "sqrt", {"ms_eps"}, {"rms"});
  Add(&g, "Div", "inv", {"one", "rms"}, {"inv_rms"});
  Add(&g, "Mul", "norm", {"x", "inv_rms"}, {"n"});
  Add(&g, "Mul", "scale", {"weight", "n"}, {"y"});
  g = Finish(g, {"y"});
  Graph fused = FuseNormalizations(g);
  ASSERT_EQ(fused.nodes.size(), 1u);
  EXPECT_EQ(fused.nodes[0].op, "RMSNormalization");
  EXPECT_EQ(fused.nodes[0].inputs, (std::vector<std::string>{"x", "weight"}));
  EXPECT_LT(OutputDifference(g, fused), 1e-5);
}

TEST(NormFusionTest, RmsNormWithoutWeightAndByDivision) {
  Graph g;
  g.AddInput("x", F32({4, 32}));
  g.AddConstant("eps", Scalar(1e-5));
  Add(&g, "Mul", "square", {"x", "x"}, {"sq"});
  Add(&g, "ReduceMean", "mean", {"sq"}, {"ms"}, {{"axes", Ints{1}}});
  Add(&g, "Add", "add", {"eps", "ms"}, {"ms_eps"});
  Add(&g, "Sqrt", "sqrt", {"ms_eps"}, {"rms"});
  Add(&g, "Div", "norm", {"x", "rms"}, {"y"});
  g = Finish(g, {"y"});
  Graph fused = FuseNormalizations(g);
  ASSERT_EQ(fused.nodes.size(), 1u);
  EXPECT_EQ(fused.nodes[0].op, "RMSNormalization");
  EXPECT_LT(OutputDifference(g, fused), 1e-5);
  // The same with the mean of another tensor's square: not a normalization of x.
  Graph h;
  h.AddInput("x", F32({4, 32}));
  h.AddInput("z", F32({4, 32}));
  h.AddConstant("eps", Scalar(1e-5));
  Add(&h, "Mul", "square", {"z", "z"}, {"sq"});
  Add(&h, "ReduceMean", "mean", {"sq"}, {"ms"}, {{"axes", Ints{1}}});
  Add(&h, "Add", "add", {"eps", "ms"}, {"ms_eps"});
  Add(&h, "Sqrt", "sqrt", {"ms_eps"}, {"rms"});
  Add(&h, "Div", "norm", {"x", "rms"}, {"y"});
  h = Finish(h, {"y"});
  EXPECT_EQ(FuseNormalizations(h).nodes.size(), h.nodes.size());
}

}  // namespace
}  // namespace graph
}  // namespace agate
