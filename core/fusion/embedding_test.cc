#include "core/fusion/embedding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/graph/testing/graph_builder.h"
#include "core/support/error.h"

namespace agate {
namespace fusion {
namespace {

using graph::DType;
using graph::Graph;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;
using graph::testing::RandomTensor;

// Features by name, so the test reads like the hand computation.
std::map<std::string, float> Named(const std::vector<float>& f) {
  std::vector<std::string> names = OperatorFeatureNames();
  EXPECT_EQ(names.size(), f.size());
  std::map<std::string, float> out;
  for (size_t i = 0; i < names.size() && i < f.size(); ++i) out[names[i]] = f[i];
  return out;
}

// x [1,16,28,28] -> depthwise 3x3 stride 2 conv (group 16) -> Relu -> MatMul by w [14,10] -> y
Graph ConvThenMatMul() {
  Graph g;
  g.AddInput("x", TensorType{DType::Float(32), {1, 16, 28, 28}});
  g.AddConstant("wc", RandomTensor({16, 1, 3, 3}, 1));
  g.AddConstant("wm", RandomTensor({14, 10}, 2));
  Add(&g, "Conv", "conv", {"x", "wc"}, {"c"},
      {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}, {"group", int64_t{16}}});
  Add(&g, "Relu", "relu", {"c"}, {"r"});
  Add(&g, "MatMul", "mm", {"r", "wm"}, {"y"});
  return Finish(g, {"y"});
}

TEST(EmbeddingTest, ConvFeaturesByHand) {
  Graph g = ConvThenMatMul();
  NodeGraph nodes(g);
  std::map<std::string, float> f = Named(OperatorFeatures(g, nodes, 0));
  EXPECT_EQ(f["op=Conv"], 1);
  EXPECT_EQ(f["op=MatMul"], 0);
  EXPECT_EQ(f["op=other"], 0);
  EXPECT_EQ(f["kind=out-elemwise-fusable"], 1);
  EXPECT_EQ(f["kind=elemwise"], 0);
  // Output [1,16,14,14]: rank 4, right-aligned in five slots as log2(1+d)-1.
  EXPECT_EQ(f["out_rank"], 4);
  EXPECT_EQ(f["out_log2_d0"], 0);  // no fifth dimension
  EXPECT_FLOAT_EQ(f["out_log2_d1"], std::log2(2.0f) - 1);
  EXPECT_FLOAT_EQ(f["out_log2_d2"], std::log2(17.0f) - 1);
  EXPECT_FLOAT_EQ(f["out_log2_d3"], std::log2(15.0f) - 1);
  EXPECT_FLOAT_EQ(f["out_log2_d4"], std::log2(15.0f) - 1);
  EXPECT_FLOAT_EQ(f["out_log2_numel"], std::log2(1.0f + 16 * 14 * 14));
  EXPECT_FLOAT_EQ(f["in0_log2_numel"], std::log2(1.0f + 16 * 28 * 28));
  EXPECT_FLOAT_EQ(f["in_log2_total_numel"], std::log2(1.0f + 16 * 28 * 28 + 16 * 9));
  EXPECT_EQ(f["inputs"], 2);
  EXPECT_EQ(f["float32"], 1);
  EXPECT_FLOAT_EQ(f["window_log2"], std::log2(10.0f));  // 3x3 from the weights
  EXPECT_EQ(f["stride"], 2);
  EXPECT_EQ(f["grouped"], 1);
  EXPECT_EQ(f["depthwise"], 1);
  EXPECT_EQ(f["producers"], 0);  // graph inputs and constants are not edges
  EXPECT_EQ(f["consumers"], 1);
  EXPECT_FLOAT_EQ(f["consumer_kind_max"], 0);  // the Relu: elementwise
  EXPECT_EQ(f["feeds_output"], 0);
}

TEST(EmbeddingTest, MatMulFeaturesByHand) {
  Graph g = ConvThenMatMul();
  NodeGraph nodes(g);
  std::map<std::string, float> f = Named(OperatorFeatures(g, nodes, 2));
  EXPECT_EQ(f["op=MatMul"], 1);
  EXPECT_EQ(f["op=Conv"], 0);
  // Output [1,16,14,10].
  EXPECT_FLOAT_EQ(f["out_log2_d4"], std::log2(11.0f) - 1);
  EXPECT_FLOAT_EQ(f["out_log2_numel"], std::log2(1.0f + 16 * 14 * 10));
  EXPECT_FLOAT_EQ(f["in_log2_total_numel"], std::log2(1.0f + 16 * 14 * 14 + 140));
  EXPECT_EQ(f["window_log2"], 1);  // no window: log2(1 + 1)
  EXPECT_EQ(f["stride"], 1);
  EXPECT_EQ(f["grouped"], 0);
  EXPECT_EQ(f["depthwise"], 0);
  EXPECT_EQ(f["producers"], 1);
  EXPECT_EQ(f["consumers"], 0);
  EXPECT_FLOAT_EQ(f["producer_kind_max"], 0);
  EXPECT_EQ(f["feeds_output"], 1);
}

TEST(EmbeddingTest, DenseNetEvaluatesLayersAndChecksItsInput) {
  DenseNet net;
  DenseLayer a;
  a.in = 2;
  a.out = 2;
  a.weights = {1, -1, 2, 0.5f};
  a.bias = {0, -4};
  a.activation = DenseLayer::Activation::kRelu;
  DenseLayer b;
  b.in = 2;
  b.out = 1;
  b.weights = {1, 1};
  b.bias = {0.5f};
  b.activation = DenseLayer::Activation::kTanh;
  net.layers = {a, b};
  // relu([3-1, 6+0.5-4]) = [2, 2.5]; tanh(2 + 2.5 + 0.5) = tanh(5)
  std::vector<float> y = net.Evaluate({3, 1});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_FLOAT_EQ(y[0], std::tanh(5.0f));
  EXPECT_THROW(net.Evaluate({1, 2, 3}), Error);
}

}  // namespace
}  // namespace fusion
}  // namespace agate
