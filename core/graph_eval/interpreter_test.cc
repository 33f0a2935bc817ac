#include "core/graph_eval/interpreter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/graph/op_registry.h"
#include "core/graph/testing/graph_builder.h"
#include "core/support/error.h"

namespace agate {
namespace graph_eval {
namespace {

using namespace graph;  // NOLINT: the graph IR's vocabulary
using graph::testing::Add;
using graph::testing::Finish;

Tensor F32(Shape shape, std::vector<double> values) { return Tensor::FromDoubles(DType::Float(32), shape, values); }

std::vector<double> RunNode(const Node& node, const std::vector<Tensor>& inputs, int output = 0) {
  std::vector<const Tensor*> args;
  for (const Tensor& t : inputs) args.push_back(&t);
  return EvaluateNode(node, args)[output].ToDoubles();
}

Node MakeNode(const std::string& op, int inputs, const std::vector<std::pair<std::string, Attribute>>& attrs = {},
              int outputs = 1) {
  Node node;
  node.op = op;
  node.name = op + "_test";
  for (int i = 0; i < inputs; ++i) node.inputs.push_back("in" + std::to_string(i));
  for (int i = 0; i < outputs; ++i) node.outputs.push_back("out" + std::to_string(i));
  for (const auto& [k, v] : attrs) node.attrs.Set(k, v);
  return node;
}

TEST(ReferenceTest, ConvWithPaddingByHand) {
  // 1x1x3x3 input of ones, 1x1x2x2 kernel of ones, pads 1 on top/left only: corner windows see 1 element.
  Tensor x = F32({1, 1, 3, 3}, std::vector<double>(9, 1.0));
  Tensor w = F32({1, 1, 2, 2}, {1, 1, 1, 1});
  Tensor b = F32({1}, {0.5});
  Node conv = MakeNode("Conv", 3, {{"pads", std::vector<int64_t>{1, 1, 0, 0}}});
  EXPECT_EQ(RunNode(conv, {x, w, b}), (std::vector<double>{1.5, 2.5, 2.5, 2.5, 4.5, 4.5, 2.5, 4.5, 4.5}));
}

TEST(ReferenceTest, GroupedConvMatchesSplitConvs) {
  Tensor x = testing::RandomTensor({1, 4, 5, 5}, 3);
  Tensor w = testing::RandomTensor({6, 2, 3, 3}, 4);
  std::vector<double> grouped = RunNode(MakeNode("Conv", 2, {{"group", int64_t{2}}}), {x, w});
  // Group 1 by hand: channels 2..3 of x with filters 3..5.
  Tensor x1(DType::Float(32), {1, 2, 5, 5}), w1(DType::Float(32), {3, 2, 3, 3});
  for (int64_t i = 0; i < 50; ++i) x1.SetDouble(i, x.GetDouble(50 + i));
  for (int64_t i = 0; i < 54; ++i) w1.SetDouble(i, w.GetDouble(54 + i));
  std::vector<double> second = RunNode(MakeNode("Conv", 2), {x1, w1});
  for (size_t i = 0; i < second.size(); ++i) EXPECT_NEAR(grouped[second.size() + i], second[i], 1e-5);
}

// The 2-D fast path and the general N-d loop agree (a 2-D conv is a 3-D conv with a depth of 1).
TEST(ReferenceTest, Conv2DFastPathMatchesTheGeneralLoop) {
  Tensor x = testing::RandomTensor({2, 4, 7, 6}, 11);
  Tensor w = testing::RandomTensor({6, 2, 3, 2}, 12);
  Tensor b = testing::RandomTensor({6}, 13);
  std::vector<double> fast = RunNode(
      MakeNode("Conv", 3, {{"group", int64_t{2}}, {"strides", std::vector<int64_t>{2, 1}},
                           {"dilations", std::vector<int64_t>{1, 2}}, {"pads", std::vector<int64_t>{1, 0, 2, 1}}}),
      {x, w, b});
  std::vector<double> general = RunNode(
      MakeNode("Conv", 3, {{"group", int64_t{2}}, {"strides", std::vector<int64_t>{1, 2, 1}},
                           {"dilations", std::vector<int64_t>{1, 1, 2}}, {"pads", std::vector<int64_t>{0, 1, 0, 0, 2, 1}}}),
      {x.Reshaped({2, 4, 1, 7, 6}), w.Reshaped({6, 2, 1, 3, 2}), b});
  ASSERT_EQ(fast.size(), general.size());
  for (size_t i = 0; i < fast.size(); ++i) EXPECT_NEAR(fast[i], general[i], 1e-5) << i;
}

TEST(ReferenceTest, BatchedBroadcastingMatMul) {
  Tensor a = F32({2, 1, 2}, {1, 2, 3, 4});
  Tensor b = F32({2, 1}, {10, 100});
  EXPECT_EQ(RunNode(MakeNode("MatMul", 2), {a, b}), (std::vector<double>{210, 430}));
}

TEST(ReferenceTest, SoftmaxAndLayerNorm) {
  std::vector<double> s = RunNode(MakeNode("Softmax", 1), {F32({1, 3}, {0, std::log(2.0), std::log(5.0)})});
  EXPECT_NEAR(s[0], 1.0 / 8, 1e-6);
  EXPECT_NEAR(s[2], 5.0 / 8, 1e-6);
  std::vector<double> ln = RunNode(MakeNode("LayerNormalization", 3, {{"epsilon", 0.0}}),
                               {F32({1, 2}, {1, 3}), F32({2}, {1, 2}), F32({2}, {0, 1})});
  EXPECT_NEAR(ln[0], -1.0, 1e-6);
  EXPECT_NEAR(ln[1], 3.0, 1e-6);
}

TEST(ReferenceTest, ResizeNearestAndLinear) {
  Tensor x = F32({1, 1, 1, 2}, {1, 3});
  std::vector<double> nearest = RunNode(MakeNode("Resize", 1, {{"scales", std::vector<double>{1, 1, 1, 2}},
                                                          {"mode", "nearest"},
                                                          {"coordinate_transformation_mode", "asymmetric"},
                                                          {"nearest_mode", "floor"}}),
                                    {x});
  EXPECT_EQ(nearest, (std::vector<double>{1, 1, 3, 3}));
  std::vector<double> linear = RunNode(
      MakeNode("Resize", 1, {{"sizes", std::vector<int64_t>{1, 1, 1, 3}}, {"mode", "linear"},
                             {"coordinate_transformation_mode", "align_corners"}}),
      {x});
  EXPECT_EQ(linear, (std::vector<double>{1, 2, 3}));
}

TEST(ReferenceTest, LayoutTransformRoundTrips) {
  Tensor x = testing::RandomTensor({1, 8, 2, 3}, 5);
  Node to = MakeNode("LayoutTransform", 1, {{"src_layout", "NCHW"}, {"dst_layout", "NCHW4c"}});
  std::vector<const Tensor*> args{&x};
  Tensor blocked = EvaluateNode(to, args)[0];
  EXPECT_EQ(blocked.shape(), (Shape{1, 2, 2, 3, 4}));
  EXPECT_EQ(blocked.GetDouble(1), x.GetDouble(6));  // [0,0,0,0,1] = channel 1 at (0,0)
  Node back = MakeNode("LayoutTransform", 1, {{"src_layout", "NCHW4c"}, {"dst_layout", "NCHW"}});
  std::vector<const Tensor*> args2{&blocked};
  EXPECT_TRUE(BitwiseEqual(EvaluateNode(back, args2)[0], x));
  // NCHW4c -> NCHW2c -> NCHW is the identity too.
  Node reblock = MakeNode("LayoutTransform", 1, {{"src_layout", "NCHW4c"}, {"dst_layout", "NCHW2c"}});
  Tensor two = EvaluateNode(reblock, args2)[0];
  EXPECT_EQ(two.shape(), (Shape{1, 4, 2, 3, 2}));
  Node unblock2 = MakeNode("LayoutTransform", 1, {{"src_layout", "NCHW2c"}, {"dst_layout", "NCHW"}});
  std::vector<const Tensor*> args3{&two};
  EXPECT_TRUE(BitwiseEqual(EvaluateNode(unblock2, args3)[0], x));
}

TEST(ReferenceTest, IntegerArithmeticStaysExact) {
  Tensor a = Tensor::FromInts(DType::Int(64), {2}, {int64_t{1} << 60, -7});
  Tensor b = Tensor::FromInts(DType::Int(64), {2}, {1, 2});
  std::vector<const Tensor*> args{&a, &b};
  Tensor sum = EvaluateNode(MakeNode("Add", 2), args)[0];
  EXPECT_EQ(sum.GetInt(0), (int64_t{1} << 60) + 1);
  Tensor mod = EvaluateNode(MakeNode("Mod", 2), args)[0];
  EXPECT_EQ(mod.GetInt(1), 1);  // Python-style: -7 mod 2 = 1
}

// Float32 -> bfloat16 rounds to nearest even, NaN stays NaN: the compiled kernels' rounding
// (core/ops/elementwise_test.cc), so constant folding (which runs this kernel) agrees with them.
TEST(ReferenceTest, CastFloatToBFloat16RoundsToNearestEven) {
  struct Case {
    uint32_t in;
    uint16_t want;
  };
  const Case cases[] = {
      {0x3EF5EEB0u, 0x3EF6u},  // 0.48033667 (ONNX's test_cast_FLOAT_to_BFLOAT16): truncation would give 0x3EF5
      {0x3F808000u, 0x3F80u},  // exactly halfway, even mantissa: stays
      {0x3F818000u, 0x3F82u},  // exactly halfway, odd mantissa: up to even
      {0x3F80C000u, 0x3F81u},  // above halfway: up
      {0x3F807FFFu, 0x3F80u},  // below halfway: down
      {0xBF818000u, 0xBF82u},  // negative halfway, odd: away from zero to even
      {0x7F800000u, 0x7F80u},  // +inf
      {0xFF800000u, 0xFF80u},  // -inf
      {0x7F7FFFFFu, 0x7F80u},  // the largest float rounds up to +inf
      {0x00000001u, 0x0000u},  // the smallest subnormal rounds to zero
      {0x7FC00000u, 0x7FC0u},  // quiet NaN
      {0x7F800001u, 0x7FC0u},  // signalling NaN, payload only in the low bits: still NaN (rounding would give inf)
      {0x7FFFFFFFu, 0x7FFFu},  // NaN with every payload bit: rounding would carry into the sign
      {0xFFC00001u, 0xFFC0u},  // negative NaN
  };
  const int n = static_cast<int>(sizeof(cases) / sizeof(cases[0]));
  Graph g;
  g.AddInput("x", TensorType{DType::Float(32), {n}});
  Add(&g, "Cast", "to_bf16", {"x"}, {"y"}, {{"to", Attribute("bfloat16")}});
  g = Finish(g, {"y"});
  Tensor x(DType::Float(32), {n});
  for (int i = 0; i < n; ++i) std::memcpy(static_cast<uint32_t*>(x.mutable_raw_data()) + i, &cases[i].in, 4);
  Tensor y = Interpret(g, {{"x", x}}).at("y");
  ASSERT_EQ(y.dtype(), DType::BFloat16());
  for (int i = 0; i < n; ++i) {
    uint16_t got = static_cast<const uint16_t*>(y.raw_data())[i];
    EXPECT_EQ(got, cases[i].want) << "case " << i << std::hex << ": 0x" << cases[i].in;
  }
}

TEST(ReferenceTest, InterpretRunsAGraphAndChecksInputs) {
  Graph g;
  g.AddInput("x", TensorType{DType::Float(32), {2, 2}});
  Add(&g, "Transpose", "t", {"x"}, {"xt"});
  Add(&g, "MatMul", "mm", {"x", "xt"}, {"y"});
  g = Finish(g, {"y"});
  auto out = Interpret(g, {{"x", F32({2, 2}, {1, 2, 3, 4})}});
  EXPECT_EQ(out.at("y").ToDoubles(), (std::vector<double>{5, 11, 11, 25}));
  EXPECT_THROW(Interpret(g, {{"x", F32({4}, {1, 2, 3, 4})}}), Error);
  EXPECT_THROW(Interpret(g, {}), Error);
}

TEST(ReferenceTest, GeluAndSwishByHand) {
  Tensor x = F32({3}, {-1.0, 0.5, 2.0});
  std::vector<double> erf = RunNode(MakeNode("Gelu", 1), {x});
  std::vector<double> tanh = RunNode(MakeNode("Gelu", 1, {{"approximate", std::string("tanh")}}), {x});
  // torch.nn.functional.gelu at these points (approximate="none" and "tanh").
  std::vector<double> want_erf = {-0.15865525, 0.34573123, 1.95449974}, want_tanh = {-0.15880801, 0.34571401, 1.95459769};
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(erf[i], want_erf[i], 1e-6);
    EXPECT_NEAR(tanh[i], want_tanh[i], 1e-6);
  }
  std::vector<double> silu = RunNode(MakeNode("Swish", 1), {x});
  std::vector<double> swish2 = RunNode(MakeNode("Swish", 1, {{"alpha", 2.0}}), {x});
  for (int i = 0; i < 3; ++i) {
    double v = x.GetDouble(i);
    EXPECT_NEAR(silu[i], v / (1 + std::exp(-v)), 1e-6);
    EXPECT_NEAR(swish2[i], v / (1 + std::exp(-2 * v)), 1e-6);
  }
}

TEST(ReferenceTest, RmsNormByHand) {
  // Rows (3, 4) and (1, -1): rms 3.5355 and 1; scale (1, 2).
  Tensor x = F32({2, 2}, {3, 4, 1, -1}), scale = F32({2}, {1, 2});
  std::vector<double> y = RunNode(MakeNode("RMSNormalization", 2, {{"epsilon", 0.0}}), {x, scale});
  double r = std::sqrt(12.5);
  std::vector<double> want = {3 / r, 8 / r, 1, -2};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i], want[i], 1e-6);
}

TEST(ReferenceTest, AttentionByHand) {
  // One head, two queries and keys of size 1: scores q*k*scale; the second query is causal-masked from key 1.
  Tensor q = F32({1, 1, 2, 1}, {1, 2}), k = F32({1, 1, 2, 1}, {1, -1}), v = F32({1, 1, 2, 2}, {10, 0, 0, 10});
  std::vector<double> y = RunNode(MakeNode("Attention", 3, {{"scale", 0.5}}), {q, k, v});
  // Query 0: scores (0.5, -0.5); query 1: (1, -1).
  double p0 = 1 / (1 + std::exp(-1.0)), p1 = 1 / (1 + std::exp(-2.0));
  std::vector<double> want = {10 * p0, 10 * (1 - p0), 10 * p1, 10 * (1 - p1)};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i], want[i], 1e-5);
  std::vector<double> causal = RunNode(MakeNode("Attention", 3, {{"scale", 0.5}, {"is_causal", int64_t{1}}}), {q, k, v});
  EXPECT_NEAR(causal[0], 10, 1e-5);
  EXPECT_NEAR(causal[1], 0, 1e-5);
  EXPECT_NEAR(causal[2], want[2], 1e-5);
  // An additive mask of -inf on key 0 and a bool mask allowing only key 0.
  Tensor additive = F32({1, 1, 1, 2}, {-INFINITY, 0});
  std::vector<double> masked = RunNode(MakeNode("Attention", 4, {{"scale", 0.5}}), {q, k, v, additive});
  EXPECT_NEAR(masked[0], 0, 1e-5);
  EXPECT_NEAR(masked[1], 10, 1e-5);
  Tensor allow = Tensor::FromInts(DType::Bool(), {2, 2}, {1, 0, 1, 0});
  std::vector<double> bools = RunNode(MakeNode("Attention", 4, {{"scale", 0.5}}), {q, k, v, allow});
  EXPECT_NEAR(bools[0], 10, 1e-5);
  EXPECT_NEAR(bools[3], 0, 1e-5);
  // Grouped-query attention: two query heads share one key/value head; the default scale is 1/sqrt(1).
  Tensor q2 = F32({1, 2, 1, 1}, {1, 2});
  std::vector<double> gqa = RunNode(MakeNode("Attention", 3), {q2, F32({1, 1, 1, 1}, {3}), F32({1, 1, 1, 1}, {7})});
  EXPECT_EQ(gqa, (std::vector<double>{7, 7}));
}

TEST(ReferenceTest, EveryRegisteredOperatorHasAKernel) {
  for (const std::string& op : OpRegistry::Global().Ops()) EXPECT_TRUE(HasKernel(op)) << op;
}

}  // namespace
}  // namespace graph_eval
}  // namespace agate
