// Which conv pairs may share a kernel (conv_chain.h) and how the policies use it:
// `all` and the adaptive walk fuse a blocked depthwise conv into its 1x1 consumer,
// `rule` never does, and nothing else gets a second anchor.
#include "core/fusion/conv_chain.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/fusion/action_space.h"
#include "core/fusion/fusion.h"
#include "core/fusion/group_terms.h"
#include "core/graph/testing/graph_builder.h"

namespace agate {
namespace fusion {
namespace {

using graph::Attribute;
using graph::DType;
using graph::Graph;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;
using graph::testing::GroupNames;
using graph::testing::RandomTensor;
using Groups = std::vector<std::vector<std::string>>;
using Ints = std::vector<int64_t>;

struct BlockOptions {
  std::string layout = "NCHW16c";  // empty: plain NCHW (the layout pass did not block)
  int64_t pw_stride = 1, pw_kernel = 1;
  bool export_clip = false;          // the depthwise epilogue's value is also a graph output
  bool runtime_dw_weights = false;
};

// An inverted-residual block in NCHW16c: x -> expand 1x1 -> clip -> depthwise 3x3 -> clip -> project -> + x.
Graph Block(const BlockOptions& o = {}) {
  Graph g;
  const DType f32 = DType::Float(32);
  bool blocked = !o.layout.empty();
  graph::Shape x = blocked ? graph::Shape{1, 1, 6, 6, 16} : graph::Shape{1, 16, 6, 6};
  g.AddInput("x", TensorType{f32, x});
  g.AddConstant("we", RandomTensor({32, 16, 1, 1}, 1));
  if (o.runtime_dw_weights) {
    g.AddInput("wd", TensorType{f32, {32, 1, 3, 3}});
  } else {
    g.AddConstant("wd", RandomTensor({32, 1, 3, 3}, 2));
  }
  g.AddConstant("wp", RandomTensor({16, 32, o.pw_kernel, o.pw_kernel}, 3));
  g.AddConstant("lo", graph::Tensor::Scalar(f32, 0));
  g.AddConstant("hi", graph::Tensor::Scalar(f32, 6));
  std::vector<std::pair<std::string, Attribute>> layout;
  if (blocked) layout.push_back({"data_layout", Attribute(o.layout)});
  auto with = [&](std::vector<std::pair<std::string, Attribute>> attrs) {
    attrs.insert(attrs.end(), layout.begin(), layout.end());
    return attrs;
  };
  Add(&g, "Conv", "expand", {"x", "we"}, {"e"}, with({}));
  Add(&g, "Clip", "clip1", {"e", "lo", "hi"}, {"e6"});
  Add(&g, "Conv", "dw", {"e6", "wd"}, {"d"}, with({{"group", Attribute(int64_t{32})}, {"pads", Attribute(Ints{1, 1, 1, 1})}}));
  Add(&g, "Clip", "clip2", {"d", "lo", "hi"}, {"d6"});
  int64_t p = o.pw_kernel / 2;
  Add(&g, "Conv", "project", {"d6", "wp"}, {"p"},
      with({{"strides", Attribute(Ints{o.pw_stride, o.pw_stride})}, {"pads", Attribute(Ints{p, p, p, p})}}));
  if (o.pw_stride == 1) {
    Add(&g, "Add", "residual", {"p", "x"}, {"y"});
  } else {
    Add(&g, "Relu", "relu", {"p"}, {"y"});
  }
  std::vector<std::string> outputs{"y"};
  if (o.export_clip) outputs.push_back("d6");
  return Finish(g, outputs);
}

int NodeIndex(const Graph& g, const std::string& name) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].name == name) return static_cast<int>(i);
  ADD_FAILURE() << "no node " << name;
  return -1;
}

TEST(ConvChainTest, FindsTheDepthwiseIntoPointwiseForm) {
  Graph g = Block();
  ConvChain chain = FindConvChain(g, NodeIndex(g, "dw"), NodeIndex(g, "project"));
  ASSERT_TRUE(chain.found());
  ASSERT_EQ(chain.path.size(), 1u);
  EXPECT_EQ(g.nodes[chain.path[0]].name, "clip2");
  // Not the other half (pointwise into depthwise), not the reverse order.
  EXPECT_FALSE(FindConvChain(g, NodeIndex(g, "expand"), NodeIndex(g, "dw")).found());
  EXPECT_FALSE(FindConvChain(g, NodeIndex(g, "project"), NodeIndex(g, "dw")).found());
  // In a group only with its path.
  EXPECT_TRUE(FindConvChainIn(g, {NodeIndex(g, "dw"), NodeIndex(g, "clip2"), NodeIndex(g, "project")}).found());
  EXPECT_FALSE(FindConvChainIn(g, {NodeIndex(g, "dw"), NodeIndex(g, "project")}).found());
}

TEST(ConvChainTest, RefusesWhatTheLoweringDoesNotDoWell) {
  BlockOptions nchw;
  nchw.layout = "";
  BlockOptions exported;
  exported.export_clip = true;
  BlockOptions strided;
  strided.pw_stride = 2;
  BlockOptions wide;
  wide.pw_kernel = 3;
  BlockOptions runtime;
  runtime.runtime_dw_weights = true;
  for (const auto& [what, options] : std::vector<std::pair<std::string, BlockOptions>>{
           {"NCHW", nchw}, {"exported intermediate", exported}, {"strided 1x1", strided},
           {"3x3 consumer", wide}, {"run-time depthwise weights", runtime}}) {
    Graph g = Block(options);
    EXPECT_FALSE(FindConvChain(g, NodeIndex(g, "dw"), NodeIndex(g, "project")).found()) << what;
    // ... and `all` keeps one anchor per group there.
    for (const graph::FusedGroup& group : FuseOperators(g, FusionPolicy::kAll).groups) {
      int convs = 0;
      for (int v : group.nodes) convs += g.nodes[v].op == "Conv" ? 1 : 0;
      EXPECT_LE(convs, 1) << what;
    }
  }
}

TEST(ConvChainTest, AllFusesTheChainAndRuleDoesNot) {
  Graph g = Block();
  EXPECT_EQ(GroupNames(FuseOperators(g, FusionPolicy::kAll)),
            (Groups{{"expand", "clip1"}, {"dw", "clip2", "project", "residual"}}));
  EXPECT_EQ(GroupNames(FuseOperators(g, FusionPolicy::kRule)),
            (Groups{{"expand", "clip1"}, {"dw", "clip2"}, {"project", "residual"}}));
  // The chain's kernel is scheduled around the 1x1 conv.
  Graph fused = FuseOperators(g, FusionPolicy::kAll);
  EXPECT_EQ(fused.nodes[fused.groups[1].anchor].name, "project");
}

TEST(ConvChainTest, TheWalkOffersTheConsumerAfterThePath) {
  Graph g = Block();
  GranularityWalk walk(g);
  auto names = [&](const std::vector<int>& nodes) {
    std::vector<std::string> out;
    for (int v : nodes) out.push_back(g.nodes[v].name);
    return out;
  };
  EXPECT_EQ(names(walk.Chain()), (std::vector<std::string>{"clip1"}));  // expand never takes the depthwise conv
  walk.Apply(1);
  EXPECT_EQ(g.nodes[walk.Seed()].name, "dw");
  EXPECT_EQ(names(walk.Chain()), (std::vector<std::string>{"clip2", "project", "residual"}));
  EXPECT_EQ(names(walk.Apply(3)), (std::vector<std::string>{"dw", "clip2", "project", "residual"}));
  EXPECT_TRUE(walk.Done());
}

// The cost model's terms tell a chain from a one-anchor group: two anchors, and the intermediate
// (depthwise output and its clip) as bytes kept inside.
TEST(ConvChainTest, GroupTermsCountTheChainsAnchors) {
  Graph g = Block();
  NodeGraph ng(g);
  std::vector<std::string> names = GroupTermNames();
  auto term = [&](const std::vector<float>& terms, const std::string& name) {
    return terms[std::find(names.begin(), names.end(), name) - names.begin()];
  };
  target::Target host = target::Target::Host();
  std::vector<float> chain = GroupTerms(g, ng, {NodeIndex(g, "dw"), NodeIndex(g, "clip2"), NodeIndex(g, "project")}, host);
  std::vector<float> alone = GroupTerms(g, ng, {NodeIndex(g, "project")}, host);
  EXPECT_EQ(term(chain, "anchors"), 2.0f);
  EXPECT_EQ(term(alone, "anchors"), 1.0f);
  double inner = static_cast<double>(g.TypeOf("d").bytes() + g.TypeOf("d6").bytes());
  EXPECT_FLOAT_EQ(term(chain, "inner_log2_bytes"), static_cast<float>(std::log2(1.0 + inner)));
  EXPECT_EQ(term(alone, "inner_log2_bytes"), 0.0f);
}

}  // namespace
}  // namespace fusion
}  // namespace agate
