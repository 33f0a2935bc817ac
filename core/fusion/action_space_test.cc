#include "core/fusion/action_space.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "core/fusion/adaptive_fusion.h"
#include "core/fusion/conv_chain.h"
#include "core/graph/passes/attention_fusion.h"
#include "core/graph/testing/graph_builder.h"
#include "core/support/error.h"

namespace agate {
namespace fusion {
namespace {

using graph::DType;
using graph::Graph;
using graph::OpKind;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;
using graph::testing::GroupNames;
using graph::testing::RandomTensor;
using Groups = std::vector<std::vector<std::string>>;

// A residual block with a downsample branch, a depthwise-separable pair, a
// reduction tail, an opaque softmax, a transpose into a matmul and an expanding
// broadcast: every legality rule of the walk has something to refuse here.
Graph MixedGraph() {
  Graph g;
  g.AddInput("x", TensorType{DType::Float(32), {1, 8, 6, 6}});
  g.AddInput("wide", TensorType{DType::Float(32), {2, 8, 6, 6}});
  g.AddConstant("w1", RandomTensor({8, 8, 3, 3}, 1, -0.2, 0.2));
  g.AddConstant("w2", RandomTensor({8, 8, 1, 1}, 2, -0.2, 0.2));
  g.AddConstant("wd", RandomTensor({8, 1, 3, 3}, 3, -0.2, 0.2));
  g.AddConstant("wp", RandomTensor({8, 8, 1, 1}, 4, -0.2, 0.2));
  g.AddConstant("m", RandomTensor({6, 6}, 5));
  const std::vector<int64_t> pads = {1, 1, 1, 1};
  Add(&g, "Conv", "conv1", {"x", "w1"}, {"c1"}, {{"pads", pads}});
  Add(&g, "Relu", "relu1", {"c1"}, {"r1"});
  Add(&g, "Conv", "down", {"x", "w2"}, {"d"});
  Add(&g, "Add", "res", {"r1", "d"}, {"s"});
  Add(&g, "Relu", "relu2", {"s"}, {"r2"});
  Add(&g, "Conv", "dw", {"r2", "wd"}, {"c3"}, {{"pads", pads}, {"group", int64_t{8}}});
  Add(&g, "Clip", "relu6", {"c3"}, {"r3"});
  Add(&g, "Conv", "pw", {"r3", "wp"}, {"c4"});
  Add(&g, "Add", "expand", {"c4", "wide"}, {"e"});
  Add(&g, "Sigmoid", "sig", {"e"}, {"sg"});
  Add(&g, "ReduceMean", "mean", {"sg"}, {"mn"}, {{"axes", std::vector<int64_t>{1}}});
  Add(&g, "Softmax", "soft", {"mn"}, {"sm"});
  Add(&g, "Transpose", "tr", {"sm"}, {"t"}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  Add(&g, "MatMul", "mm", {"t", "m"}, {"mo"});
  Add(&g, "Tanh", "tanh", {"mo"}, {"y"});
  return Finish(g, {"y"});
}

bool IsAnchor(OpKind kind) { return kind == OpKind::kReduction || kind == OpKind::kOutEWiseFusable; }

// Every property the walk promises, checked on the final partition.
void ExpectLegal(const Graph& graph, const Partition& partition) {
  std::vector<graph::FusedGroup> groups;
  ASSERT_NO_THROW(groups = MakeGroups(graph, partition));  // covers every node once, convex
  NodeGraph g(graph);
  for (const graph::FusedGroup& group : groups) {
    int anchors = 0;
    for (int v : group.nodes) {
      anchors += IsAnchor(g.kinds[v]) ? 1 : 0;
      if (g.kinds[v] == OpKind::kOpaque) EXPECT_EQ(group.nodes.size(), 1u) << graph.nodes[v].name;
    }
    // Two only as a conv chain (conv_chain.h), whose producer and path precede the scheduled consumer.
    ConvChain chain = FindConvChainIn(graph, group.nodes);
    EXPECT_LE(anchors, chain.found() ? 2 : 1);
    if (group.anchor >= 0 && g.kinds[group.anchor] == OpKind::kOutEWiseFusable) {
      const graph::Shape& shape = graph.TypeOf(graph.nodes[group.anchor].outputs[0]).shape;
      for (int v : group.nodes) {
        if (v == group.anchor || graph.nodes[v].op == "Transpose") continue;
        if (v == chain.producer || std::count(chain.path.begin(), chain.path.end(), v)) continue;
        EXPECT_GT(v, group.anchor) << "a producer inlined into " << graph.nodes[group.anchor].name;
        EXPECT_LE(g.kinds[v], OpKind::kBroadcast) << graph.nodes[v].name;
        EXPECT_EQ(graph.TypeOf(graph.nodes[v].outputs[0]).shape, shape) << graph.nodes[v].name;
      }
    }
  }
}

TEST(ActionSpaceTest, RandomActionSequencesNeverProduceAnIllegalGroup) {
  Graph graph = MixedGraph();
  std::set<Groups> seen;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    Partition partition = PartitionRandom(graph, seed);
    ExpectLegal(graph, partition);
    seen.insert(GroupNames(FuseOperators(graph, [&](const Graph&) { return partition; })));
  }
  EXPECT_GT(seen.size(), 10u);  // the walk really offers choices
}

TEST(ActionSpaceTest, ChainsOfferRuleLikeGroupsAndMaskTheRest) {
  Graph graph = MixedGraph();
  GranularityWalk walk(graph);
  auto names = [&](const std::vector<int>& nodes) {
    std::vector<std::string> out;
    for (int v : nodes) out.push_back(graph.nodes[v].name);
    return out;
  };
  // conv1 may take relu1 and, past the independent downsample conv, the residual add and relu.
  EXPECT_EQ(graph.nodes[walk.Seed()].name, "conv1");
  EXPECT_EQ(names(walk.Chain()), (std::vector<std::string>{"relu1", "res", "relu2"}));
  EXPECT_EQ(names(walk.Apply(1)), (std::vector<std::string>{"conv1", "relu1"}));
  // The downsample conv may take the add only if relu1's group is closed: it is, so res and relu2 join.
  EXPECT_EQ(graph.nodes[walk.Seed()].name, "down");
  EXPECT_EQ(names(walk.Chain()), (std::vector<std::string>{"res", "relu2"}));
  walk.Apply(2);
  // Depthwise into pointwise in NCHW is masked (no conv chain: conv_chain.h); the clip may join.
  EXPECT_EQ(graph.nodes[walk.Seed()].name, "dw");
  EXPECT_EQ(names(walk.Chain()), (std::vector<std::string>{"relu6"}));
  walk.Apply(1);
  // The expanding broadcast would recompute the pointwise conv per copy: masked.
  EXPECT_EQ(graph.nodes[walk.Seed()].name, "pw");
  EXPECT_TRUE(walk.Chain().empty());
  walk.Apply(0);
  // expand + sigmoid may run ahead of the reduction as its inlined producers.
  EXPECT_EQ(names(walk.Chain()), (std::vector<std::string>{"sig", "mean"}));
  walk.Apply(2);
  EXPECT_EQ(graph.nodes[walk.Seed()].name, "soft");  // opaque: never joins
  EXPECT_TRUE(walk.Chain().empty());
  walk.Apply(0);
  EXPECT_EQ(names(walk.Chain()), (std::vector<std::string>{"mm", "tanh"}));  // the transpose into its product
  EXPECT_THROW(walk.Apply(3), Error);
  walk.Apply(2);
  EXPECT_TRUE(walk.Done());
  ExpectLegal(graph, walk.Result());
}

TEST(ActionSpaceTest, APathThroughAnotherGroupIsMasked) {
  // a -> b -> b2 -> d and a -> c -> d: with b, b2 left out, joining d to {a, c} would make a cycle.
  Graph g;
  g.AddInput("x", TensorType{DType::Float(32), {2, 6}});
  Add(&g, "Relu", "a", {"x"}, {"a"});
  Add(&g, "Softmax", "b", {"a"}, {"b"});  // opaque: cannot join, so the path leaves the group
  Add(&g, "Softmax", "b2", {"b"}, {"b2"});
  Add(&g, "Neg", "c", {"a"}, {"c"});
  Add(&g, "Add", "d", {"b2", "c"}, {"y"});
  g = Finish(g, {"y"});
  GranularityWalk walk(g);
  ASSERT_EQ(walk.Chain().size(), 1u);
  EXPECT_EQ(g.nodes[walk.Chain()[0]].name, "c");
}

// One projection to Q, K and V (as vit_b_16 and bert export it), the head splits, the
// attention core fused into an Attention node: three injective chains meet at one opaque node.
// With `split_op`, one Split node makes Q, K and V (as GPT-2 exports it): 7 injective nodes
// before the attention, one more than the walk's chain holds.
Graph FusedSelfAttention(bool split_op = false) {
  using Ints = std::vector<int64_t>;
  const int64_t seq = 6, heads = 2, head = 4, hidden = heads * head;
  Graph g;
  g.AddInput("x", TensorType{DType::Float(32), {1, seq, hidden}});
  g.AddConstant("w", RandomTensor({hidden, 3 * hidden}, 1, -0.3, 0.3));
  g.AddConstant("divisor", graph::Tensor::Scalar(DType::Float(32), 2.0));
  Add(&g, "MatMul", "qkv", {"x", "w"}, {"p"});
  const Ints split = {1, seq, heads, head};
  const char* names[3] = {"q", "k", "v"};
  if (split_op) Add(&g, "Split", "qkv_split", {"p"}, {"q_s", "k_s", "v_s"}, {{"axis", int64_t{2}}});
  for (int i = 0; i < 3; ++i) {
    std::string n = names[i];
    if (!split_op) {
      Add(&g, "Slice", n + "_slice", {"p"}, {n + "_s"},
          {{"starts", Ints{i * hidden}}, {"ends", Ints{(i + 1) * hidden}}, {"axes", Ints{2}}});
    }
    Add(&g, "Reshape", n + "_reshape", {n + "_s"}, {n + "4"}, {{"shape", split}});
    Add(&g, "Transpose", n + "_t", {n + "4"}, {n + "h"}, {{"perm", n == "k" ? Ints{0, 2, 3, 1} : Ints{0, 2, 1, 3}}});
  }
  Add(&g, "MatMul", "scores", {"qh", "kh"}, {"s"});
  Add(&g, "Div", "scale", {"s", "divisor"}, {"logits"});
  Add(&g, "Softmax", "softmax", {"logits"}, {"pr"}, {{"axis", int64_t{-1}}});
  Add(&g, "MatMul", "context", {"pr", "vh"}, {"c"});
  Add(&g, "Transpose", "merge_t", {"c"}, {"ct"}, {{"perm", Ints{0, 2, 1, 3}}});
  Add(&g, "Reshape", "merge", {"ct"}, {"y"}, {{"shape", Ints{1, seq, hidden}}});
  return graph::FuseAttention(Finish(g, {"y"}));
}

class HeadSplitTest : public ::testing::TestWithParam<bool> {};

TEST_P(HeadSplitTest, AnAttentionGroupTakesAllOfItsHeadSplitAsRuleDoes) {
  bool split_op = GetParam();
  Graph g = FusedSelfAttention(split_op);
  int attention = -1;
  for (size_t v = 0; v < g.nodes.size(); ++v)
    if (g.nodes[v].op == "Attention") attention = static_cast<int>(v);
  ASSERT_GE(attention, 0) << "the fixture no longer fuses into an Attention node";
  // Join as far as each chain goes: the group that reaches the Attention node must also hold
  // the other two heads' split, so no copy kernel is left for K or V.
  GranularityWalk walk(g);
  std::vector<int> with_attention;
  while (!walk.Done()) {
    std::vector<int> closed = walk.Apply(static_cast<int>(walk.Chain().size()));
    if (std::count(closed.begin(), closed.end(), attention)) with_attention = closed;
  }
  ASSERT_FALSE(with_attention.empty());
  std::set<std::string> ops;
  for (int v : with_attention) ops.insert(g.nodes[v].name);
  std::vector<std::string> split = split_op ? std::vector<std::string>{"qkv_split"}
                                             : std::vector<std::string>{"q_slice", "k_slice", "v_slice"};
  for (const char* n : {"q_reshape", "k_reshape", "v_reshape", "q_t", "v_t"}) split.push_back(n);
  for (const std::string& n : split) EXPECT_TRUE(ops.count(n)) << n;
  Groups rule = GroupNames(FuseOperators(g, FusionPolicy(FusionPolicy::kRule)));
  Groups walked = GroupNames(FuseOperators(g, [&](const Graph& x) {
    GranularityWalk w(x);
    while (!w.Done()) w.Apply(static_cast<int>(w.Chain().size()));
    return w.Result();
  }));
  EXPECT_EQ(walked, rule);
}

INSTANTIATE_TEST_SUITE_P(SlicesAndSplit, HeadSplitTest, ::testing::Bool());

TEST(GranularityWalkTest, AnInjectiveChainIsNeverSplit) {
  // torch.roll as Swin exports it (Slice, Slice, Concat), then a window Reshape and a Relu: the
  // second Slice reads the input, not the group, so the chain never offers it; at any actions
  // the walk ends with rule's one copy kernel, not three.
  using Ints = std::vector<int64_t>;
  Graph g;
  g.AddInput("x", TensorType{DType::Float(32), {1, 8, 6}});
  Add(&g, "Slice", "tail", {"x"}, {"a"}, {{"starts", Ints{5}}, {"ends", Ints{8}}, {"axes", Ints{1}}});
  Add(&g, "Slice", "head", {"x"}, {"b"}, {{"starts", Ints{0}}, {"ends", Ints{5}}, {"axes", Ints{1}}});
  Add(&g, "Concat", "roll", {"a", "b"}, {"r"}, {{"axis", int64_t{1}}});
  Add(&g, "Reshape", "windows", {"r"}, {"w"}, {{"shape", Ints{1, 2, 4, 6}}});
  Add(&g, "Relu", "relu", {"w"}, {"y"});
  g = Finish(g, {"y"});
  Groups rule = GroupNames(FuseOperators(g, FusionPolicy(FusionPolicy::kRule)));
  ASSERT_EQ(rule.size(), 1u);
  for (int action : {0, 1, GranularityWalk::kMaxJoin}) {
    Groups walked = GroupNames(FuseOperators(g, [&](const Graph& x) {
      GranularityWalk w(x);
      while (!w.Done()) w.Apply(std::min<int>(action, static_cast<int>(w.Chain().size())));
      return w.Result();
    }));
    EXPECT_EQ(walked, rule) << "action " << action;
  }
}

}  // namespace
}  // namespace fusion
}  // namespace agate
