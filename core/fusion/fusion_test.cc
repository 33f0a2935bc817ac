#include "core/fusion/fusion.h"

#include <gtest/gtest.h>

#include "core/graph/passes/batchnorm_folding.h"
#include "core/graph_eval/interpreter.h"
#include "core/graph/testing/graph_builder.h"
#include "core/support/error.h"

namespace agate {
namespace fusion {
namespace {

using graph::Attribute;
using graph::DType;
using graph::Graph;
using graph::OpKind;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;
using graph::testing::GroupNames;
using graph::testing::RandomTensor;
using Groups = std::vector<std::vector<std::string>>;

// x -> conv -> bn -> relu -> add(., x) -> relu: a ResNet basic block's tail.
Graph ConvBnReluAddRelu() {
  Graph g;
  g.AddInput("x", TensorType{DType::Float(32), {1, 8, 6, 6}});
  g.AddConstant("w", RandomTensor({8, 8, 3, 3}, 1, -0.2, 0.2));
  g.AddConstant("gamma", RandomTensor({8}, 2, 0.5, 1.5));
  g.AddConstant("beta", RandomTensor({8}, 3));
  g.AddConstant("mean", RandomTensor({8}, 4));
  g.AddConstant("var", RandomTensor({8}, 5, 0.5, 2.0));
  Add(&g, "Conv", "conv", {"x", "w"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  Add(&g, "BatchNormalization", "bn", {"c", "gamma", "beta", "mean", "var"}, {"b"});
  Add(&g, "Relu", "relu1", {"b"}, {"r"});
  Add(&g, "Add", "add", {"r", "x"}, {"s"});
  Add(&g, "Relu", "relu2", {"s"}, {"y"});
  return Finish(g, {"y"});
}

TEST(FusionTest, RuleFusesTheConvWithItsElementwiseTail) {
  Graph fused = FuseOperators(ConvBnReluAddRelu(), FusionPolicy::kRule);
  EXPECT_EQ(GroupNames(fused), (Groups{{"conv", "bn", "relu1", "add", "relu2"}}));
  ASSERT_EQ(fused.groups.size(), 1u);
  const graph::FusedGroup& group = fused.groups[0];
  EXPECT_EQ(fused.nodes[group.anchor].name, "conv");
  EXPECT_EQ(group.kind, OpKind::kOutEWiseFusable);
  EXPECT_EQ(group.inputs, (std::vector<std::string>{"x", "w", "gamma", "beta", "mean", "var"}));
  EXPECT_EQ(group.outputs, (std::vector<std::string>{"y"}));
}

TEST(FusionTest, NoneMakesOneKernelPerOperator) {
  Graph fused = FuseOperators(ConvBnReluAddRelu(), FusionPolicy::kNone);
  EXPECT_EQ(GroupNames(fused), (Groups{{"conv"}, {"bn"}, {"relu1"}, {"add"}, {"relu2"}}));
  EXPECT_EQ(fused.nodes[fused.groups[0].anchor].name, "conv");
  EXPECT_EQ(fused.groups[1].anchor, -1);  // an elementwise kernel has no anchor
  EXPECT_EQ(fused.groups[2].inputs, (std::vector<std::string>{"b"}));
  EXPECT_EQ(fused.groups[2].outputs, (std::vector<std::string>{"r"}));
}

TEST(FusionTest, AllFusesTheWholeBlock) {
  Graph fused = FuseOperators(ConvBnReluAddRelu(), FusionPolicy::kAll);
  EXPECT_EQ(GroupNames(fused), (Groups{{"conv", "bn", "relu1", "add", "relu2"}}));
}

TEST(FusionTest, AfterBatchNormFoldingTheBlockIsStillOneKernel) {
  Graph folded = graph::FoldBatchNorm(ConvBnReluAddRelu());
  Graph fused = FuseOperators(folded, FusionPolicy::kRule);
  EXPECT_EQ(GroupNames(fused), (Groups{{"conv", "relu1", "add", "relu2"}}));
}

// conv -> relu -> ReduceMean -> Add: the rule policy never fuses a reduction's consumers; `all` does.
TEST(FusionTest, AllFusesPastAReductionWhereRuleStops) {
  Graph g;
  g.AddInput("x", TensorType{DType::Float(32), {1, 4, 5, 5}});
  g.AddConstant("w", RandomTensor({4, 4, 1, 1}, 7));
  g.AddConstant("k", RandomTensor({1, 4, 1, 1}, 8));
  Add(&g, "Conv", "conv", {"x", "w"}, {"c"});
  Add(&g, "Relu", "relu", {"c"}, {"r"});
  Add(&g, "ReduceMean", "mean", {"r"}, {"m"}, {{"axes", std::vector<int64_t>{2, 3}}});
  Add(&g, "Add", "shift", {"m", "k"}, {"y"});
  g = Finish(g, {"y"});
  EXPECT_EQ(GroupNames(FuseOperators(g, FusionPolicy::kRule)), (Groups{{"conv", "relu"}, {"mean"}, {"shift"}}));
  EXPECT_EQ(GroupNames(FuseOperators(g, FusionPolicy::kAll)), (Groups{{"conv", "relu"}, {"mean", "shift"}}));
  Graph all = FuseOperators(g, FusionPolicy::kAll);
  EXPECT_EQ(all.nodes[all.groups[1].anchor].name, "mean");
}

// A value that is both a graph output and read again: rule stops there (no post-dominator), all goes on.
TEST(FusionTest, AllFusesAcrossAnOutputWithMoreConsumers) {
  Graph g;
  g.AddInput("x", TensorType{DType::Float(32), {1, 4, 3, 3}});
  g.AddConstant("w", RandomTensor({4, 4, 1, 1}, 9));
  Add(&g, "Conv", "conv", {"x", "w"}, {"c"});
  Add(&g, "Relu", "relu", {"c"}, {"r"});
  Add(&g, "Sigmoid", "sig", {"r"}, {"s"});
  g = Finish(g, {"r", "s"});
  EXPECT_EQ(GroupNames(FuseOperators(g, FusionPolicy::kRule)), (Groups{{"conv", "relu"}, {"sig"}}));
  Graph all = FuseOperators(g, FusionPolicy::kAll);
  EXPECT_EQ(GroupNames(all), (Groups{{"conv", "relu", "sig"}}));
  EXPECT_EQ(all.groups[0].outputs, (std::vector<std::string>{"r", "s"}));
}

// Elementwise diamond: every branch post-dominated by the join fuses; an opaque op never does.
TEST(FusionTest, RuleFusesDiamondsButNotOpaqueOps) {
  Graph g;
  g.AddInput("x", TensorType{DType::Float(32), {2, 6}});
  Add(&g, "Relu", "a", {"x"}, {"a"});
  Add(&g, "Exp", "b", {"a"}, {"b"});
  Add(&g, "Neg", "c", {"a"}, {"c"});
  Add(&g, "Add", "d", {"b", "c"}, {"d"});
  Add(&g, "Softmax", "soft", {"d"}, {"e"});
  Add(&g, "Tanh", "t", {"e"}, {"y"});
  g = Finish(g, {"y"});
  EXPECT_EQ(GroupNames(FuseOperators(g, FusionPolicy::kRule)), (Groups{{"a", "b", "c", "d"}, {"soft"}, {"t"}}));
  EXPECT_EQ(GroupNames(FuseOperators(g, FusionPolicy::kAll)), (Groups{{"a", "b", "c", "d"}, {"soft"}, {"t"}}));
}

// A broadcast that expands the conv's output would recompute the conv per copy: not fused.
TEST(FusionTest, RuleDoesNotFuseAnExpandingBroadcastIntoAConv) {
  Graph g;
  g.AddInput("x", TensorType{DType::Float(32), {1, 4, 3, 3}});
  g.AddInput("big", TensorType{DType::Float(32), {1, 4, 5, 5}});
  g.AddConstant("w", RandomTensor({4, 4, 3, 3}, 12));
  Add(&g, "Conv", "conv", {"x", "w"}, {"c"});  // [1,4,1,1]
  Add(&g, "Add", "expand_add", {"c", "big"}, {"y"});
  g = Finish(g, {"y"});
  EXPECT_EQ(GroupNames(FuseOperators(g, FusionPolicy::kRule)), (Groups{{"conv"}, {"expand_add"}}));
}

// conv -> QuantizeLinear -> DequantizeLinear -> AveragePool (an int8 network's last block and
// its pooling): the widening DequantizeLinear joins the pool, so the kernel boundary carries
// the uint8 tensor, not the float32 one; a same-width Relu before a pool stays the conv's epilogue.
TEST(FusionTest, RuleFusesAWideningDequantizeIntoThePoolItFeeds) {
  Graph g;
  g.AddInput("x", TensorType{DType::Float(32), {1, 4, 6, 6}});
  g.AddConstant("w", RandomTensor({4, 4, 3, 3}, 12));
  g.AddConstant("s", graph::Tensor::FromDoubles(DType::Float(32), {}, {0.05}));
  g.AddConstant("z", graph::Tensor::FromInts(DType::UInt(8), {}, {3}));
  Add(&g, "Conv", "conv", {"x", "w"}, {"c"});
  Add(&g, "QuantizeLinear", "quantize", {"c", "s", "z"}, {"q"});
  Add(&g, "DequantizeLinear", "dequantize", {"q", "s", "z"}, {"d"});
  Add(&g, "AveragePool", "pool", {"d"}, {"y"}, {{"kernel_shape", std::vector<int64_t>{4, 4}}});
  Graph graph = Finish(g, {"y"});
  Graph fused = FuseOperators(graph, FusionPolicy::kRule);
  EXPECT_EQ(GroupNames(fused), (Groups{{"conv", "quantize"}, {"dequantize", "pool"}}));
  EXPECT_EQ(fused.groups[0].outputs, (std::vector<std::string>{"q"}));

  Graph same_width;
  same_width.AddInput("x", TensorType{DType::Float(32), {1, 4, 6, 6}});
  same_width.AddConstant("w", RandomTensor({4, 4, 3, 3}, 12));
  Add(&same_width, "Conv", "conv", {"x", "w"}, {"c"});
  Add(&same_width, "Relu", "relu", {"c"}, {"r"});
  Add(&same_width, "AveragePool", "pool", {"r"}, {"y"}, {{"kernel_shape", std::vector<int64_t>{4, 4}}});
  EXPECT_EQ(GroupNames(FuseOperators(Finish(same_width, {"y"}), FusionPolicy::kRule)),
            (Groups{{"conv", "relu"}, {"pool"}}));
}

// A ResNet int8 downsampling block's join: two convs, each quantized and dequantized, meet in an
// Add. The Add joins one conv's group; the other conv's DequantizeLinear (uint8 -> float32) moves
// to that group too, so its conv stores uint8 (not float32) and the Add's group widens it as it
// reads. A same-width tail (Relu) stays with its conv, and so does a widening node the consuming
// group also feeds (moving it would make the groups depend on each other).
TEST(FusionTest, RuleMovesAWideningTailToTheGroupThatReadsIt) {
  auto block = [](bool widen, bool cyclic) {
    Graph g;
    g.AddInput("x", TensorType{DType::Float(32), {1, 4, 6, 6}});
    g.AddConstant("w1", RandomTensor({4, 4, 3, 3}, 21));
    g.AddConstant("w2", RandomTensor({4, 4, 1, 1}, 22));
    g.AddConstant("s", graph::Tensor::FromDoubles(DType::Float(32), {}, {0.05}));
    g.AddConstant("z", graph::Tensor::FromInts(DType::UInt(8), {}, {3}));
    Add(&g, "Conv", "shortcut", {"x", "w2"}, {"c2"});
    Add(&g, "QuantizeLinear", "q2", {"c2", "s", "z"}, {"q2o"});
    Add(&g, "DequantizeLinear", "d2", {"q2o", "s", "z"}, {"d2o"});
    Add(&g, "Conv", "main", {cyclic ? "d2o" : "x", "w1"}, {"c1"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    if (widen) {
      Add(&g, "QuantizeLinear", "q1", {"c1", "s", "z"}, {"q1o"});
      Add(&g, "DequantizeLinear", "d1", {"q1o", "s", "z"}, {"d1o"});
    } else {
      Add(&g, "Relu", "d1", {"c1"}, {"d1o"});
    }
    Add(&g, "Add", "add", {"d1o", "d2o"}, {"y"});
    return Finish(g, {"y"});
  };
  Graph graph = block(true, false);
  Graph fused = FuseOperators(graph, FusionPolicy::kRule);
  EXPECT_EQ(GroupNames(fused), (Groups{{"main", "q1"}, {"shortcut", "q2", "d2", "d1", "add"}}));
  EXPECT_EQ(fused.groups[0].outputs, (std::vector<std::string>{"q1o"}));
  std::map<std::string, graph::Tensor> inputs{{"x", RandomTensor({1, 4, 6, 6}, 23)}};
  auto plain = graph_eval::Interpret(graph, inputs), grouped = graph_eval::Interpret(fused, inputs);
  EXPECT_EQ(graph::testing::MaxAbsDiff(plain.at("y"), grouped.at("y")), 0.0);
  EXPECT_EQ(GroupNames(FuseOperators(block(false, false), FusionPolicy::kRule)),
            (Groups{{"main", "d1"}, {"shortcut", "q2", "d2", "add"}}));
  // The shortcut's group feeds the main conv (through d2), so d1 stays: it would need the main conv's
  // output inside a group the main conv reads from.
  Graph cyclic = FuseOperators(block(true, true), FusionPolicy::kRule);
  for (const auto& names : GroupNames(cyclic)) {
    if (std::find(names.begin(), names.end(), "main") != names.end()) {
      EXPECT_NE(std::find(names.begin(), names.end(), "d1"), names.end());
    }
  }
}

// Two plain convolutions never share a kernel, even under `all` (only a blocked depthwise conv into a
// 1x1 conv may: conv_chain_test.cc).
TEST(FusionTest, AllKeepsOneAnchorPerGroup) {
  Graph g;
  g.AddInput("x", TensorType{DType::Float(32), {1, 4, 3, 3}});
  g.AddConstant("w", RandomTensor({4, 4, 1, 1}, 11));
  Add(&g, "Conv", "conv1", {"x", "w"}, {"c1"});
  Add(&g, "Relu", "relu1", {"c1"}, {"r1"});
  Add(&g, "Conv", "conv2", {"r1", "w"}, {"c2"});
  Add(&g, "Relu", "relu2", {"c2"}, {"y"});
  g = Finish(g, {"y"});
  EXPECT_EQ(GroupNames(FuseOperators(g, FusionPolicy::kAll)), (Groups{{"conv1", "relu1"}, {"conv2", "relu2"}}));
  EXPECT_EQ(GroupNames(FuseOperators(g, FusionPolicy::kRule)), (Groups{{"conv1", "relu1"}, {"conv2", "relu2"}}));
}

TEST(FusionTest, MakeGroupsRejectsNonConvexPartitions) {
  Graph g;
  g.AddInput("x", TensorType{DType::Float(32), {4}});
  Add(&g, "Relu", "a", {"x"}, {"a"});
  Add(&g, "Exp", "b", {"a"}, {"b"});
  Add(&g, "Neg", "c", {"b"}, {"y"});
  g = Finish(g, {"y"});
  // {a, c} with b outside: a -> b -> c leaves and re-enters the group.
  EXPECT_THROW(MakeGroups(g, {{0, 2}, {1}}), Error);
  EXPECT_THROW(MakeGroups(g, {{0, 1}}), Error);  // c is left out
  EXPECT_NO_THROW(MakeGroups(g, {{0, 1}, {2}}));
}

TEST(FusionTest, FusionDoesNotChangeResults) {
  Graph g = ConvBnReluAddRelu();
  std::map<std::string, graph::Tensor> inputs{{"x", RandomTensor({1, 8, 6, 6}, 99)}};
  graph::Tensor expected = graph_eval::Interpret(g, inputs).at("y");
  for (FusionPolicy policy : {FusionPolicy::kRule, FusionPolicy::kNone, FusionPolicy::kAll}) {
    EXPECT_EQ(graph::testing::MaxAbsDiff(graph_eval::Interpret(FuseOperators(g, policy), inputs).at("y"),
                                         expected),
              0.0);
  }
}

// Transformer feed-forward: MatMul -> bias Add -> the GELU pattern exporters emit,
// x * 0.5 * (1 + erf(x / sqrt(2))). The rule policy makes it one kernel anchored on the MatMul.
TEST(FusionTest, RuleFusesMatMulBiasAndGeluPattern) {
  Graph g;
  g.AddInput("x", TensorType{DType::Float(32), {2, 4, 8}});
  g.AddConstant("w", RandomTensor({8, 16}, 30));
  g.AddConstant("bias", RandomTensor({16}, 31));
  g.AddConstant("sqrt2", graph::Tensor::Scalar(DType::Float(32), 1.4142135623730951));
  g.AddConstant("one", graph::Tensor::Scalar(DType::Float(32), 1.0));
  g.AddConstant("half", graph::Tensor::Scalar(DType::Float(32), 0.5));
  Add(&g, "MatMul", "mm", {"x", "w"}, {"m"});
  Add(&g, "Add", "bias_add", {"m", "bias"}, {"h"});
  Add(&g, "Div", "div", {"h", "sqrt2"}, {"d"});
  Add(&g, "Erf", "erf", {"d"}, {"e"});
  Add(&g, "Add", "plus1", {"e", "one"}, {"p"});
  Add(&g, "Mul", "times_x", {"h", "p"}, {"q"});
  Add(&g, "Mul", "halve", {"q", "half"}, {"y"});
  g = Finish(g, {"y"});
  Graph fused = FuseOperators(g, FusionPolicy::kRule);
  EXPECT_EQ(GroupNames(fused), (Groups{{"mm", "bias_add", "div", "erf", "plus1", "times_x", "halve"}}));
  EXPECT_EQ(fused.nodes[fused.groups[0].anchor].name, "mm");
}

// Attention scores, q x k^T with the head split's transposes: the Transposes that
// feed only an operand of a product with several rows join the product's group
// (the GEMM packs B and reads A in place); a transpose with another consumer,
// and one in front of a one-row product, stay kernels of their own.
TEST(FusionTest, RuleFusesOperandTransposesIntoProducts) {
  Graph g;
  g.AddInput("q", TensorType{DType::Float(32), {1, 5, 2, 4}});  // [batch, tokens, heads, dim]
  g.AddInput("k", TensorType{DType::Float(32), {1, 5, 2, 4}});
  g.AddInput("v", TensorType{DType::Float(32), {1, 2, 1, 4}});
  Add(&g, "Transpose", "q_heads", {"q"}, {"qh"}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  Add(&g, "Transpose", "k_t", {"k"}, {"kt"}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
  Add(&g, "MatMul", "scores", {"qh", "kt"}, {"s"});
  Add(&g, "Relu", "relu", {"s"}, {"y"});
  Add(&g, "Transpose", "k_t2", {"k"}, {"kt2"}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
  Add(&g, "MatMul", "one_row", {"v", "kt2"}, {"z"});  // [1, 2, 1, 4] x [1, 2, 4, 5]: one row per head
  Add(&g, "Transpose", "shared", {"k"}, {"ks"}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  Add(&g, "Transpose", "k_t3", {"k"}, {"kt3"}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
  Add(&g, "MatMul", "shared_mm", {"ks", "kt3"}, {"w"});
  g = Finish(g, {"y", "z", "w", "ks"});
  Graph fused = FuseOperators(g, FusionPolicy::kRule);
  Groups groups = GroupNames(fused);
  auto group_of = [&](const std::string& node) {
    for (const auto& names : groups)
      if (std::find(names.begin(), names.end(), node) != names.end()) return names;
    return std::vector<std::string>{};
  };
  EXPECT_EQ(group_of("scores"), (std::vector<std::string>{"q_heads", "k_t", "scores", "relu"})) << ::testing::PrintToString(groups);
  EXPECT_EQ(group_of("k_t2"), (std::vector<std::string>{"k_t2"}));
  EXPECT_EQ(group_of("shared"), (std::vector<std::string>{"shared"}));  // also a graph output
  EXPECT_EQ(group_of("shared_mm"), (std::vector<std::string>{"k_t3", "shared_mm"}));
  std::map<std::string, graph::Tensor> inputs{{"q", RandomTensor({1, 5, 2, 4}, 1)}, {"k", RandomTensor({1, 5, 2, 4}, 2)},
                                              {"v", RandomTensor({1, 2, 1, 4}, 3)}};
  for (const std::string& out : g.outputs) {
    EXPECT_EQ(graph::testing::MaxAbsDiff(graph_eval::Interpret(fused, inputs).at(out),
                                         graph_eval::Interpret(g, inputs).at(out)),
              0.0);
  }
}

// LayerNorm as opset < 17 exporters write it: mean, subtract, square, mean, add eps, sqrt, divide.
// Reductions end kernels under `rule`: elementwise ops fuse into the reduction after them, the
// centred value (read by the square and by the final division) stays its own kernel.
TEST(FusionTest, DecomposedLayerNormSplitsAtReductions) {
  Graph g;
  g.AddInput("x", TensorType{DType::Float(32), {2, 8}});
  g.AddConstant("two", graph::Tensor::Scalar(DType::Float(32), 2.0));
  g.AddConstant("eps", graph::Tensor::Scalar(DType::Float(32), 1e-5));
  std::vector<std::pair<std::string, Attribute>> last_axis{{"axes", std::vector<int64_t>{-1}}};
  Add(&g, "ReduceMean", "mean", {"x"}, {"mu"}, last_axis);
  Add(&g, "Sub", "center", {"x", "mu"}, {"c"});
  Add(&g, "Pow", "square", {"c", "two"}, {"sq"});
  Add(&g, "ReduceMean", "variance", {"sq"}, {"var"}, last_axis);
  Add(&g, "Add", "add_eps", {"var", "eps"}, {"ve"});
  Add(&g, "Sqrt", "std", {"ve"}, {"sd"});
  Add(&g, "Div", "normalize", {"c", "sd"}, {"y"});
  g = Finish(g, {"y"});
  EXPECT_EQ(GroupNames(FuseOperators(g, FusionPolicy::kRule)),
            (Groups{{"mean"}, {"center"}, {"square", "variance"}, {"add_eps", "std", "normalize"}}));
  EXPECT_EQ(GroupNames(FuseOperators(g, FusionPolicy::kNone)).size(), 7u);
  // `all` merges across the first reduction as far as one anchor per group allows.
  EXPECT_EQ(GroupNames(FuseOperators(g, FusionPolicy::kAll)),
            (Groups{{"mean", "center", "square"}, {"variance", "add_eps", "std", "normalize"}}));
  for (const graph::FusedGroup& group : FuseOperators(g, FusionPolicy::kAll).groups) {
    int reductions = 0;
    for (int n : group.nodes) reductions += g.nodes[n].op == "ReduceMean";
    EXPECT_LE(reductions, 1);
  }
}

// A custom policy (what an adaptive one would be) plugs in as a partition function.
TEST(FusionTest, AcceptsACustomPartitionFunction) {
  Graph g = ConvBnReluAddRelu();
  PartitionFn pairs = [](const Graph& graph) {
    Partition p;
    for (size_t i = 0; i < graph.nodes.size(); i += 2) {
      p.push_back({static_cast<int>(i)});
      if (i + 1 < graph.nodes.size()) p.back().push_back(static_cast<int>(i + 1));
    }
    return p;
  };
  EXPECT_EQ(GroupNames(FuseOperators(g, pairs)), (Groups{{"conv", "bn"}, {"relu1", "add"}, {"relu2"}}));
}

TEST(FusionTest, ParsesPolicyNames) {
  EXPECT_EQ(ParseFusionPolicy("rule"), FusionPolicy::kRule);
  EXPECT_EQ(ParseFusionPolicy("none"), FusionPolicy::kNone);
  EXPECT_EQ(ParseFusionPolicy("all"), FusionPolicy::kAll);
  EXPECT_THROW(ParseFusionPolicy("greedy"), Error);
}

}  // namespace
}  // namespace fusion
}  // namespace agate
