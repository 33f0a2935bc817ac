// GELU, SiLU/Swish and HardSwish fusion on the node sequences PyTorch 1.13
// exports at opsets 13 and 17 (the same for these activations), the forms
// Hugging Face models write by hand, and near misses that must stay unfused.
#include "core/graph/passes/activation_fusion.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/graph/passes/testing/rewrite_check.h"
#include "core/graph/testing/graph_builder.h"

namespace agate {
namespace graph {
namespace {

using testing::Add;
using testing::CountOps;
using testing::Finish;
using testing::OutputDifference;

TensorType F32(Shape shape) { return TensorType{DType::Float(32), std::move(shape)}; }
Tensor Scalar(double v) { return Tensor::Scalar(DType::Float(32), v); }

// One fused node of `op` reading x, the graph's meaning unchanged.
void ExpectFused(const Graph& g, const std::string& op, const std::string& approximate = "") {
  Graph fused = FuseActivations(g);
  ASSERT_EQ(fused.nodes.size(), 1u) << "not fused into one " << op;
  EXPECT_EQ(fused.nodes[0].op, op);
  EXPECT_EQ(fused.nodes[0].inputs, (std::vector<std::string>{"x"}));
  if (!approximate.empty()) {
    EXPECT_EQ(fused.nodes[0].attrs.GetString("approximate"), approximate);
  }
  EXPECT_LT(OutputDifference(g, fused), 1e-6);
}

void ExpectUnfused(const Graph& g, const std::string& what) {
  Graph fused = FuseActivations(g);
  EXPECT_EQ(fused.nodes.size(), g.nodes.size()) << what;
}

// nn.GELU() at opsets 13 and 17: Div(x, 1.4142135), Erf, Add(., 1), Mul(x, .), Mul(., 0.5).
Graph GeluErf(double sqrt2 = std::sqrt(2.0), double half = 0.5) {
  Graph g;
  g.AddInput("x", F32({2, 8}));
  g.AddConstant("sqrt2", Scalar(sqrt2));
  g.AddConstant("one", Scalar(1));
  g.AddConstant("half", Scalar(half));
  Add(&g, "Div", "div", {"x", "sqrt2"}, {"a"});
  Add(&g, "Erf", "erf", {"a"}, {"e"});
  Add(&g, "Add", "add", {"e", "one"}, {"t"});
  Add(&g, "Mul", "mul", {"x", "t"}, {"xt"});
  Add(&g, "Mul", "mul_1", {"xt", "half"}, {"y"});
  return Finish(g, {"y"});
}

TEST(ActivationFusionTest, GeluErfAsExported) { ExpectFused(GeluErf(), "Gelu"); }

// Hugging Face's erf GELU: x * 0.5 * (1.0 + erf(x / sqrt(2))), here with the multiplication by 1/sqrt(2).
TEST(ActivationFusionTest, GeluErfHandWritten) {
  Graph g;
  g.AddInput("x", F32({3, 4}));
  g.AddConstant("inv_sqrt2", Scalar(1 / std::sqrt(2.0)));
  g.AddConstant("one", Scalar(1));
  g.AddConstant("half", Scalar(0.5));
  Add(&g, "Mul", "half_x", {"x", "half"}, {"hx"});
  Add(&g, "Mul", "scale", {"inv_sqrt2", "x"}, {"a"});
  Add(&g, "Erf", "erf", {"a"}, {"e"});
  Add(&g, "Add", "add", {"one", "e"}, {"t"});
  Add(&g, "Mul", "mul", {"hx", "t"}, {"y"});
  ExpectFused(Finish(g, {"y"}), "Gelu");
}

// nn.GELU(approximate="tanh") at opsets 13 and 17: the cube as Mul(x, Mul(x, x)), constants first.
Graph GeluTanh(double kappa = 0.044715) {
  Graph g;
  g.AddInput("x", F32({2, 8}));
  g.AddConstant("kappa", Scalar(kappa));
  g.AddConstant("beta", Scalar(std::sqrt(2 / M_PI)));
  g.AddConstant("one", Scalar(1));
  g.AddConstant("half", Scalar(0.5));
  Add(&g, "Mul", "mul", {"x", "x"}, {"x2"});
  Add(&g, "Mul", "mul_1", {"x", "x2"}, {"x3"});
  Add(&g, "Mul", "mul_2", {"kappa", "x3"}, {"kx3"});
  Add(&g, "Add", "add", {"x", "kx3"}, {"inner"});
  Add(&g, "Mul", "mul_3", {"beta", "inner"}, {"arg"});
  Add(&g, "Tanh", "tanh", {"arg"}, {"th"});
  Add(&g, "Add", "add_1", {"one", "th"}, {"t"});
  Add(&g, "Mul", "mul_4", {"x", "t"}, {"xt"});
  Add(&g, "Mul", "mul_5", {"half", "xt"}, {"y"});
  return Finish(g, {"y"});
}

TEST(ActivationFusionTest, GeluTanhAsExported) { ExpectFused(GeluTanh(), "Gelu", "tanh"); }

// GPT-2's gelu_new as transformers writes it: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * pow(x, 3)))).
TEST(ActivationFusionTest, GeluNewAsExported) {
  Graph g;
  g.AddInput("x", F32({2, 8}));
  g.AddConstant("half", Scalar(0.5));
  g.AddConstant("three", Scalar(3));
  g.AddConstant("kappa", Scalar(0.044715));
  g.AddConstant("beta", Scalar(std::sqrt(2 / M_PI)));
  g.AddConstant("one", Scalar(1));
  Add(&g, "Mul", "mul", {"x", "half"}, {"hx"});
  Add(&g, "Pow", "pow", {"x", "three"}, {"x3"});
  Add(&g, "Mul", "mul_1", {"x3", "kappa"}, {"kx3"});
  Add(&g, "Add", "add", {"x", "kx3"}, {"inner"});
  Add(&g, "Mul", "mul_2", {"inner", "beta"}, {"arg"});
  Add(&g, "Tanh", "tanh", {"arg"}, {"th"});
  Add(&g, "Add", "add_1", {"th", "one"}, {"t"});
  Add(&g, "Mul", "mul_3", {"hx", "t"}, {"y"});
  ExpectFused(Finish(g, {"y"}), "Gelu", "tanh");
}

TEST(ActivationFusionTest, GeluNearMissesStayUnfused) {
  ExpectUnfused(GeluErf(std::sqrt(2.0), 0.4), "0.4 x (1 + erf(x / sqrt 2))");
  ExpectUnfused(GeluErf(1.5), "x / 1.5 inside erf");
  ExpectUnfused(GeluTanh(0.04), "0.04 x^3");
}

// nn.SiLU: Sigmoid, Mul(x, .).
TEST(ActivationFusionTest, SiluAndSwish) {
  Graph g;
  g.AddInput("x", F32({2, 8}));
  Add(&g, "Sigmoid", "sigmoid", {"x"}, {"s"});
  Add(&g, "Mul", "mul", {"x", "s"}, {"y"});
  ExpectFused(Finish(g, {"y"}), "Swish");
  // x * sigmoid(1.702 x) (the "quick GELU" of CLIP) is Swish with alpha 1.702.
  Graph h;
  h.AddInput("x", F32({2, 8}));
  h.AddConstant("alpha", Scalar(1.702));
  Add(&h, "Mul", "scale", {"alpha", "x"}, {"ax"});
  Add(&h, "Sigmoid", "sigmoid", {"ax"}, {"s"});
  Add(&h, "Mul", "mul", {"s", "x"}, {"y"});
  h = Finish(h, {"y"});
  ExpectFused(h, "Swish");
  EXPECT_NEAR(FuseActivations(h).nodes[0].attrs.GetFloat("alpha"), 1.702, 1e-6);
  // x * sigmoid(z): not a Swish of anything.
  Graph k;
  k.AddInput("x", F32({2, 8}));
  k.AddInput("z", F32({2, 8}));
  Add(&k, "Sigmoid", "sigmoid", {"z"}, {"s"});
  Add(&k, "Mul", "mul", {"x", "s"}, {"y"});
  ExpectUnfused(Finish(k, {"y"}), "x * sigmoid(z)");
}

// nn.Hardswish at opset 13: Mul(x, HardSigmoid(x, alpha=1/6)); at 14+ it is HardSwish already.
TEST(ActivationFusionTest, HardSwish) {
  Graph g;
  g.AddInput("x", F32({2, 8}));
  Add(&g, "HardSigmoid", "hs", {"x"}, {"s"}, {{"alpha", 1.0 / 6}});
  Add(&g, "Mul", "mul", {"x", "s"}, {"y"});
  ExpectFused(Finish(g, {"y"}), "HardSwish");
  // Hand-written: x * relu6(x + 3) / 6.
  auto relu6_form = [](double hi) {
    Graph h;
    h.AddInput("x", F32({2, 8}));
    h.AddConstant("three", Scalar(3));
    h.AddConstant("zero", Scalar(0));
    h.AddConstant("hi", Scalar(hi));
    h.AddConstant("six", Scalar(6));
    Add(&h, "Add", "add", {"x", "three"}, {"a"});
    Add(&h, "Clip", "clip", {"a", "zero", "hi"}, {"c"});
    Add(&h, "Mul", "mul", {"x", "c"}, {"xc"});
    Add(&h, "Div", "div", {"xc", "six"}, {"y"});
    return Finish(h, {"y"});
  };
  ExpectFused(relu6_form(6), "HardSwish");
  ExpectUnfused(relu6_form(5), "x * clip(x + 3, 0, 5) / 6");
  // HardSigmoid with its default alpha 0.2 is not HardSwish's.
  Graph k;
  k.AddInput("x", F32({2, 8}));
  Add(&k, "HardSigmoid", "hs", {"x"}, {"s"});
  Add(&k, "Mul", "mul", {"x", "s"}, {"y"});
  ExpectUnfused(Finish(k, {"y"}), "x * HardSigmoid(x, alpha=0.2)");
}

// A constant that broadcasts x to a larger shape changes the result's shape: not an activation of x.
TEST(ActivationFusionTest, BroadcastingConstantStaysUnfused) {
  Graph g;
  g.AddInput("x", F32({8}));
  g.AddConstant("sqrt2", Scalar(std::sqrt(2.0)));
  g.AddConstant("one", Scalar(1));
  g.AddConstant("half", Tensor::FromDoubles(DType::Float(32), {1, 1}, {0.5}));
  Add(&g, "Div", "div", {"x", "sqrt2"}, {"a"});
  Add(&g, "Erf", "erf", {"a"}, {"e"});
  Add(&g, "Add", "add", {"e", "one"}, {"t"});
  Add(&g, "Mul", "mul", {"x", "t"}, {"xt"});
  Add(&g, "Mul", "mul_1", {"xt", "half"}, {"y"});
  ExpectUnfused(Finish(g, {"y"}), "0.5 of shape [1, 1] makes the result [1, 8]");
}

}  // namespace
}  // namespace graph
}  // namespace agate
