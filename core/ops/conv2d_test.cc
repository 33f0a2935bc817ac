// Convolutions (NCHW direct, grouped, depthwise, dilated, strided, asymmetric
// padding, 1-D, blocked NCHW<c>c from the layout pass) and fused conv groups,
// against the reference interpreter on the loop-IR interpreter and LLVM.
#include <gtest/gtest.h>

#include "core/graph/passes/layout_transformation.h"
#include "core/graph/printer.h"
#include "core/graph/shape_rules.h"
#include "core/graph/testing/graph_builder.h"
#include "core/ir/printer.h"
#include "core/ops/conv2d.h"
#include "core/ops/lower_group.h"
#include "core/ops/testing/reference_check.h"
#include "core/ops/schedule_common.h"

namespace agate {
namespace ops {
namespace {

using graph::Attribute;
using graph::Graph;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;
using graph::testing::RandomTensor;
using testing::CheckAgainstReference;
using testing::CheckOptions;

const ir::DType kF32 = ir::DType::Float(32);

struct ConvCase {
  graph::Shape x;
  graph::Shape w;
  std::vector<int64_t> strides, dilations, pads;
  int64_t group = 1;
  bool bias = true;
  bool relu = true;
};

Graph ConvGraph(const ConvCase& c, uint32_t seed = 5) {
  Graph g;
  g.AddInput("x", TensorType{kF32, c.x});
  g.AddConstant("w", RandomTensor(c.w, seed));
  std::vector<std::string> inputs{"x", "w"};
  if (c.bias) {
    g.AddConstant("b", RandomTensor({c.w[0]}, seed + 1));
    inputs.push_back("b");
  }
  std::vector<std::pair<std::string, Attribute>> attrs{{"group", Attribute(c.group)}};
  if (!c.strides.empty()) attrs.push_back({"strides", Attribute(c.strides)});
  if (!c.dilations.empty()) attrs.push_back({"dilations", Attribute(c.dilations)});
  if (!c.pads.empty()) attrs.push_back({"pads", Attribute(c.pads)});
  Add(&g, "Conv", "conv", inputs, {c.relu ? "c" : "y"}, attrs);
  if (c.relu) Add(&g, "Relu", "relu", {"c"}, {"y"});
  return Finish(g, {"y"});
}

TEST(Conv2dTest, DirectNCHWVariants) {
  std::vector<ConvCase> cases = {
      {{1, 3, 9, 11}, {8, 3, 3, 3}, {}, {}, {1, 1, 1, 1}},                     // padded 3x3
      {{1, 4, 10, 16}, {6, 4, 3, 3}, {2, 2}, {}, {1, 1, 1, 1}},                // strided, OW=8
      {{1, 4, 12, 12}, {4, 4, 3, 3}, {}, {2, 2}, {2, 2, 2, 2}, 1, false},      // dilated, no bias
      {{2, 3, 7, 9}, {5, 3, 2, 3}, {1, 2}, {}, {0, 1, 2, 0}},                  // asymmetric padding
      {{1, 4, 8, 8}, {6, 2, 3, 3}, {}, {}, {1, 1, 1, 1}, 2},                   // grouped
      {{1, 8, 9, 16}, {8, 1, 3, 3}, {}, {}, {1, 1, 1, 1}, 8},                  // depthwise
      {{1, 4, 9, 9}, {8, 1, 3, 3}, {2, 2}, {}, {1, 1, 1, 1}, 4, true, false},  // depthwise x2 multiplier
      {{1, 16, 7, 7}, {32, 16, 1, 1}, {}, {}, {}},                             // 1x1
      {{1, 16, 20, 20}, {16, 1, 3, 3}, {2, 2}, {}, {1, 1, 1, 1}, 16},          // depthwise s2, over-computed row
      {{1, 16, 13, 30}, {16, 1, 3, 3}, {}, {}, {1, 1, 1, 1}, 16},              // depthwise, over-computed row
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_TRUE(CheckAgainstReference(ConvGraph(cases[i]))) << "case " << i;
  }
}

TEST(Conv2dTest, OneDimensionalConv) {
  ConvCase c{{1, 3, 20}, {4, 3, 5}, {2}, {}, {2, 1}};
  EXPECT_TRUE(CheckAgainstReference(ConvGraph(c)));
}

TEST(Conv2dTest, RuntimeWeights) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, 3, 6, 6}});
  g.AddInput("w", TensorType{kF32, {4, 3, 3, 3}});
  Add(&g, "Conv", "conv", {"x", "w"}, {"y"}, {{"pads", Attribute(std::vector<int64_t>{1, 1, 1, 1})}});
  EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"})));
}

TEST(Conv2dTest, BlockedLayoutConvs) {
  std::vector<ConvCase> cases = {
      {{1, 16, 9, 9}, {16, 16, 3, 3}, {}, {}, {1, 1, 1, 1}},
      {{1, 16, 10, 10}, {32, 16, 1, 1}, {2, 2}, {}, {}},
      {{1, 32, 8, 13}, {16, 32, 3, 3}, {1, 2}, {}, {0, 1, 2, 1}, 1, false},
      {{1, 16, 9, 9}, {16, 16, 3, 3}, {}, {2, 2}, {2, 2, 2, 2}},
  };
  for (int64_t block : {8, 16}) {
    for (size_t i = 0; i < cases.size(); ++i) {
      Graph g = graph::TransformLayout(ConvGraph(cases[i]), block);
      bool blocked = false;
      for (const graph::Node& n : g.nodes) blocked |= n.op == "Conv" && n.attrs.Has("data_layout");
      ASSERT_TRUE(blocked) << "the layout pass did not block case " << i;
      EXPECT_TRUE(CheckAgainstReference(g)) << "case " << i << " block " << block;
    }
  }
}

// The layout pass re-blocks between convs whose channels the preferred block
// does not divide (24 = 3 x 8 with a preferred 16) and lets a 3-channel first
// layer read NCHW and write blocked: both kernels must match the reference.
TEST(Conv2dTest, MixedBlocksAndNCHWInput) {
  std::vector<ConvCase> cases = {
      {{1, 32, 6, 7}, {24, 32, 1, 1}, {}, {}, {}},                    // 16c in, 8c out
      {{1, 24, 6, 7}, {32, 24, 3, 3}, {}, {}, {1, 1, 1, 1}},          // 8c in, 16c out
      {{1, 3, 15, 17}, {32, 3, 3, 3}, {2, 2}, {}, {1, 1, 1, 1}},      // NCHW in, 16c out
      {{1, 3, 12, 12}, {16, 3, 7, 7}, {2, 2}, {}, {3, 3, 3, 3}, 1, false},  // 7x7/s2 stem
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Graph g = graph::TransformLayout(ConvGraph(cases[i]), 16);
    const graph::Node* conv = nullptr;
    for (const graph::Node& n : g.nodes)
      if (n.op == "Conv") conv = &n;
    ASSERT_NE(conv, nullptr);
    EXPECT_NE(graph::InputLayoutBlock(*conv), graph::OutputLayoutBlock(*conv)) << graph::PrintGraph(g);
    EXPECT_TRUE(CheckAgainstReference(g)) << "case " << i;
  }
}

// conv + bias + relu + residual add + relu: one kernel, checked in both layouts.
Graph ResidualBlock() {
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, 16, 8, 10}});
  g.AddConstant("w1", RandomTensor({16, 16, 3, 3}, 11));
  g.AddConstant("b1", RandomTensor({16}, 12));
  g.AddConstant("b2", RandomTensor({16}, 14));
  std::vector<std::pair<std::string, Attribute>> pad1{{"pads", Attribute(std::vector<int64_t>{1, 1, 1, 1})}};
  Add(&g, "Conv", "conv1", {"x", "w1", "b1"}, {"c1"}, pad1);
  Add(&g, "Relu", "relu1", {"c1"}, {"r1"});
  Add(&g, "Conv", "conv2", {"r1", "w2", "b2"}, {"c2"}, pad1);
  g.AddConstant("w2", RandomTensor({16, 16, 3, 3}, 13));
  Add(&g, "Add", "add", {"c2", "x"}, {"s"});
  Add(&g, "Relu", "relu2", {"s"}, {"y"});
  return Finish(g, {"y"});
}

TEST(Conv2dTest, FusedConvBiasReluAddRelu) {
  Graph plain = ResidualBlock();
  Graph fused = testing::Fuse(plain);
  ASSERT_EQ(fused.groups.size(), 2u);
  EXPECT_TRUE(CheckAgainstReference(plain));
  Graph blocked = graph::TransformLayout(plain, 16);
  EXPECT_TRUE(CheckAgainstReference(blocked));
  // The blocked conv+bias+add+relu group is one kernel with the epilogue at the register tile.
  Graph bf = testing::Fuse(blocked);
  bool found = false;
  for (size_t i = 0; i < bf.groups.size(); ++i) {
    const graph::FusedGroup& group = bf.groups[i];
    if (group.anchor < 0 || bf.nodes[group.anchor].name != "conv2") continue;
    LowerGroupOptions direct;
    direct.conv_winograd = 0;  // the direct template (Winograd: winograd_test.cc)
    GroupKernel k = LowerGroup(bf, group, target::Target::Host(), "conv2", direct);
    if (getenv("AGATE_SHOW_IR")) std::cerr << ir::ToString(k.func);
    EXPECT_NE(k.schedule_summary.find("conv2d_nchwc 3x3"), std::string::npos) << k.schedule_summary;
    EXPECT_NE(k.schedule_summary.find("epilogue at the register tile"), std::string::npos) << k.schedule_summary;
    bool packed = false;
    for (const KernelParam& p : k.params) packed |= p.kind == KernelParam::Kind::kConstant;
    EXPECT_TRUE(packed) << "weights were not pre-packed";
    found = true;
  }
  EXPECT_TRUE(found);
}

TEST(Conv2dTest, TwoThreads) {
  CheckOptions o;
  o.eval = false;
  o.threads = 2;
  EXPECT_TRUE(CheckAgainstReference(graph::TransformLayout(ResidualBlock(), 16), o));
}

}  // namespace
}  // namespace ops
}  // namespace agate

namespace agate {
namespace ops {
namespace {

TEST(ConvTransposeTest, Variants) {
  struct Case {
    graph::Shape x, w;
    std::vector<std::pair<std::string, Attribute>> attrs;
  };
  using Ints = std::vector<int64_t>;
  std::vector<Case> cases = {
      {{1, 4, 5, 6}, {4, 3, 3, 3}, {{"strides", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{1, 1, 1, 1})}}},
      {{1, 4, 5, 5}, {4, 2, 3, 2}, {{"group", Attribute(int64_t{2})}, {"output_padding", Attribute(Ints{1, 0})},
                                    {"strides", Attribute(Ints{2, 1})}}},
      {{2, 3, 4, 4}, {3, 2, 2, 2}, {{"dilations", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{0, 1, 1, 0})}}},
      {{1, 2, 7}, {2, 3, 4}, {{"strides", Attribute(Ints{3})}}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Graph g;
    g.AddInput("x", TensorType{kF32, cases[i].x});
    g.AddConstant("w", RandomTensor(cases[i].w, 3));
    int64_t groups = 1;
    for (const auto& [key, value] : cases[i].attrs)
      if (key == "group") groups = value.i();
    g.AddConstant("b", RandomTensor({cases[i].w[1] * groups}, 4));
    Add(&g, "ConvTranspose", "deconv", {"x", "w", "b"}, {"y"}, cases[i].attrs);
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}))) << "case " << i;
  }
}

}  // namespace
}  // namespace ops
}  // namespace agate

namespace agate {
namespace ops {
namespace {

// Depthwise convs in NCHW<c>c, the graph built by hand (every stride).
TEST(Conv2dTest, BlockedDepthwise) {
  using Ints = std::vector<int64_t>;
  for (int64_t stride : {1, 2, 3}) {
    Graph g;
    g.AddInput("x", TensorType{kF32, {1, 32, 9, stride == 3 ? 16 : 11}});
    g.AddConstant("w", RandomTensor({32, 1, 3, 3}, 5));
    g.AddConstant("b", RandomTensor({32}, 6));
    Add(&g, "LayoutTransform", "to", {"x"}, {"xb"}, {{"src_layout", Attribute("NCHW")}, {"dst_layout", Attribute("NCHW16c")}});
    Add(&g, "Conv", "dw", {"xb", "w", "b"}, {"c"},
        {{"group", Attribute(int64_t{32})}, {"data_layout", Attribute("NCHW16c")}, {"strides", Attribute(Ints{stride == 3 ? 1 : stride, stride == 3 ? 1 : stride})},
         {"pads", Attribute(Ints{1, 1, 1, 1})}});
    Add(&g, "Relu", "relu", {"c"}, {"r"});
    Add(&g, "LayoutTransform", "from", {"r"}, {"y"}, {{"src_layout", Attribute("NCHW16c")}, {"dst_layout", Attribute("NCHW")}});
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}))) << "stride " << stride;
  }
}

// Large-kernel depthwise convs in NCHW<c>c (ConvNeXt's 7x7, MobileNetV3's 5x5): small maps pad a
// channel block's whole plane once per task, large ones the rows of one output row.
TEST(Conv2dTest, BlockedLargeKernelDepthwise) {
  using Ints = std::vector<int64_t>;
  struct Case {
    int64_t c, h, w, k, stride;
    const char* padding;
  };
  for (const Case& c : std::vector<Case>{{32, 7, 7, 7, 1, "plane"}, {32, 14, 11, 5, 2, "plane"},
                                         {16, 40, 33, 7, 1, "row"}, {48, 9, 9, 5, 1, "plane"}}) {
    Graph g;
    g.AddInput("x", TensorType{kF32, {1, c.c, c.h, c.w}});
    g.AddConstant("w", RandomTensor({c.c, 1, c.k, c.k}, 15));
    g.AddConstant("b", RandomTensor({c.c}, 16));
    int64_t p = c.k / 2;
    Add(&g, "LayoutTransform", "to", {"x"}, {"xb"}, {{"src_layout", Attribute("NCHW")}, {"dst_layout", Attribute("NCHW16c")}});
    Add(&g, "Conv", "dw", {"xb", "w", "b"}, {"y"},
        {{"group", Attribute(c.c)}, {"data_layout", Attribute("NCHW16c")}, {"strides", Attribute(Ints{c.stride, c.stride})},
         {"pads", Attribute(Ints{p, p, p, p})}});
    Graph finished = Finish(g, {"y"});
    EXPECT_TRUE(CheckAgainstReference(finished)) << c.k << "x" << c.k << " on " << c.h << "x" << c.w;
    Graph fused = testing::Fuse(finished);
    GroupKernel k = LowerGroup(fused, fused.groups.back(), target::Target::Host(), "dw");
    EXPECT_NE(k.schedule_summary.find(std::string("padding per ") + (c.padding == std::string("row") ? "row" : "channel plane")),
              std::string::npos)
        << k.schedule_summary;
  }
}

// The parallel loop of a blocked conv computes as many output-channel tiles per
// row as half the L2 holds the weights of (all of them: rows lead; one: channel
// tiles lead); every order, forced by the knob, computes the same result on two
// threads.
TEST(Conv2dTest, ParallelLoopOrderFollowsTheWeightSize) {
  for (int order : {0, 1}) {  // the automatic order is one of the two here
    CheckOptions o;
    o.eval = false;
    o.threads = 2;
    o.lower.conv_winograd = 0;
    o.lower.conv_parallel_rows = order;
    EXPECT_TRUE(CheckAgainstReference(graph::TransformLayout(ResidualBlock(), 16), o)) << "order " << order;
  }
  // 64 output channels: two 32-channel tiles of 32 x 64 x 3 x 3 weights (72 KiB each).
  using Ints = std::vector<int64_t>;
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, 4, 6, 8, 16}});
  g.AddConstant("w", RandomTensor({64, 64, 3, 3}, 5));
  Add(&g, "Conv", "conv", {"x", "w"}, {"y"}, {{"data_layout", Attribute("NCHW16c")}, {"pads", Attribute(Ints{1, 1, 1, 1})}});
  Graph fused = testing::Fuse(Finish(g, {"y"}));
  auto summary = [&](const std::string& target_text, int order) {
    LowerGroupOptions o;
    o.conv_winograd = 0;
    o.conv_oc_block = 32;
    o.conv_parallel_rows = order;
    return LowerGroup(fused, fused.groups[0], target::Target::Parse(target_text), "conv", o).schedule_summary;
  };
  // Half of a 1 MiB L2 holds both tiles' weights: rows lead.
  EXPECT_NE(summary("llvm -cache-kb=48,1024,32768", -1).find("tiles_per_row=2/2"), std::string::npos);
  // Half of a 160 KiB L2 holds one: channel tiles lead.
  EXPECT_NE(summary("llvm -cache-kb=48,160,32768", -1).find("tiles_per_row=1/2"), std::string::npos);
  // The knob overrides the L2.
  EXPECT_NE(summary("llvm -cache-kb=48,1024,32768", 0).find("tiles_per_row=1/2"), std::string::npos);
  EXPECT_NE(summary("llvm -cache-kb=48,160,32768", 1).find("tiles_per_row=2/2"), std::string::npos);
}

// Inception's 17x17 stage: 17 columns (prime) get 6-column tiles (6+6+5, the
// last guarded) instead of 8 (8+8+1 with 7 wasted columns), and stay correct.
TEST(Conv2dTest, PrimeWidthsGetTheLeastWastefulTile) {
  using Ints = std::vector<int64_t>;
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, 2, 5, 17, 16}});
  g.AddConstant("w", RandomTensor({32, 32, 1, 7}, 9));
  Add(&g, "Conv", "conv", {"x", "w"}, {"c"}, {{"data_layout", Attribute("NCHW16c")}, {"pads", Attribute(Ints{0, 3, 0, 3})}});
  Add(&g, "Relu", "relu", {"c"}, {"y"});
  Graph finished = Finish(g, {"y"});
  EXPECT_TRUE(CheckAgainstReference(finished));
  Graph fused = testing::Fuse(finished);
  GroupKernel k = LowerGroup(fused, fused.groups[0], target::Target::Host(), "conv_1x7");
  if (VectorLanes(target::Target::Host(), kF32) >= 16) {
    EXPECT_NE(k.schedule_summary.find("ow_block=6"), std::string::npos) << k.schedule_summary;
  }
}

// A group that ends in a shape-changing op and also exports a value from inside
// (what `all` fusion builds): the conv is tiled into its last blocked stage
// and both outputs are computed from that buffer, not by recomputing the conv
// per output element.
// The default register tile per instruction set: AVX-512 two 16-channel blocks by 8 columns
// (16 of 32 registers), AVX2 two 8-channel blocks by at most 6 (12 of 16: each broadcast
// pixel feeds two FMAs; 5 when a guarded tail is needed), 32-register NEON one block by 8; an odd number of blocks stays at
// one; the knobs override.
TEST(Conv2dTest, RegisterTilePerInstructionSet) {
  LowerGroupOptions none;
  auto tile = [&](const graph::Shape& out, int lanes, int registers, const LowerGroupOptions& o) {
    NCHWcTile t = ChooseNCHWcTile(out, lanes, registers, o);
    return std::to_string(t.oc_blocks) + "x" + std::to_string(t.ow_block);
  };
  EXPECT_EQ(tile({1, 8, 56, 56, 16}, 16, 32, none), "2x8");
  EXPECT_EQ(tile({1, 16, 56, 56, 8}, 8, 16, none), "2x4");  // 56's largest divisor <= 6
  EXPECT_EQ(tile({1, 64, 7, 7, 8}, 8, 16, none), "2x4");    // 7 columns: 4 + a guarded 3 (least waste)
  EXPECT_EQ(tile({1, 32, 28, 30, 8}, 8, 16, none), "2x6");
  EXPECT_EQ(tile({1, 48, 17, 17, 8}, 8, 16, none), "2x5");  // 17 columns: a guarded tail of at most 5
  EXPECT_EQ(tile({1, 8, 17, 17, 16}, 16, 32, none), "2x6");  // (AVX-512: 17's least-waste tile up to 8)
  EXPECT_EQ(tile({1, 3, 28, 28, 8}, 8, 16, none), "1x7");   // an odd number of blocks
  EXPECT_EQ(tile({1, 16, 56, 56, 4}, 4, 32, none), "1x8");  // NEON unchanged
  LowerGroupOptions knobs;
  knobs.conv_oc_block = 8;
  knobs.conv_ow_block = 8;
  EXPECT_EQ(tile({1, 16, 56, 56, 8}, 8, 16, knobs), "1x8");
  // The target's registers reach the template: an AVX2 conv's summary shows 16 channels.
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, 2, 6, 12, 8}});
  g.AddConstant("w", RandomTensor({16, 16, 3, 3}, 4));
  Add(&g, "Conv", "conv", {"x", "w"}, {"y"},
      {{"data_layout", Attribute("NCHW8c")}, {"pads", Attribute(std::vector<int64_t>{1, 1, 1, 1})}});
  Graph finished = Finish(g, {"y"});
  CheckOptions avx2;
  avx2.cpu_target = "llvm -mcpu=haswell";
  avx2.lower.conv_winograd = 0;
  EXPECT_TRUE(CheckAgainstReference(finished, avx2));
  Graph fused = testing::Fuse(finished);
  GroupKernel k = LowerGroup(fused, fused.groups[0], target::Target::Parse("llvm -mcpu=haswell"), "conv", avx2.lower);
  EXPECT_NE(k.schedule_summary.find("oc_tile=16 ow_block=6"), std::string::npos) << k.schedule_summary;
}

TEST(Conv2dTest, GroupEndingInALayoutTransformIsTiled) {
  using Ints = std::vector<int64_t>;
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, 2, 6, 9, 16}});
  g.AddConstant("w", RandomTensor({32, 32, 3, 3}, 7));
  g.AddConstant("b", RandomTensor({32}, 8));
  Add(&g, "Conv", "conv", {"x", "w", "b"}, {"c"}, {{"data_layout", Attribute("NCHW16c")}, {"pads", Attribute(Ints{1, 1, 1, 1})}});
  Add(&g, "Relu", "relu", {"c"}, {"r"});
  Add(&g, "LayoutTransform", "from", {"r"}, {"y"}, {{"src_layout", Attribute("NCHW16c")}, {"dst_layout", Attribute("NCHW")}});
  Graph finished = Finish(g, {"y", "r"});
  CheckOptions one;
  one.one_group = true;
  EXPECT_TRUE(CheckAgainstReference(finished, one));
  Graph fused = testing::Fuse(finished, true);
  ASSERT_EQ(fused.groups.size(), 1u);
  GroupKernel k = LowerGroup(fused, fused.groups[0], target::Target::Host(), "conv_relu_from");
  EXPECT_NE(k.schedule_summary.find("conv2d_nchwc 3x3"), std::string::npos) << k.schedule_summary;
  EXPECT_NE(k.schedule_summary.find("computed from its buffer"), std::string::npos) << k.schedule_summary;
}

}  // namespace
}  // namespace ops
}  // namespace agate
