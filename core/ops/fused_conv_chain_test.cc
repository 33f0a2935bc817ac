// A blocked depthwise conv (+ epilogue) fused into the 1x1 conv that reads it,
// lowered as one kernel (fused_conv_chain.h), against the reference interpreter
// on the loop-IR interpreter and LLVM: strides, kernels, paddings, dilations,
// ragged column tiles, re-blocked outputs, 8-channel blocks, batches, with and
// without the epilogues, and two threads.
#include "core/ops/fused_conv_chain.h"

#include <gtest/gtest.h>

#include "core/fusion/conv_chain.h"
#include "core/fusion/fusion.h"
#include "core/graph/testing/graph_builder.h"
#include "core/ir/printer.h"
#include "core/ops/lower_group.h"
#include "core/ops/schedule_common.h"
#include "core/ops/testing/reference_check.h"

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
using Ints = std::vector<int64_t>;

const ir::DType kF32 = ir::DType::Float(32);

struct ChainCase {
  int64_t c = 32, h = 8, w = 9;  // depthwise input (logical NCHW)
  int64_t k = 3, stride = 1, dilation = 1;
  Ints pads = {1, 1, 1, 1};
  int64_t oc = 16;
  int64_t block = 16, out_block = 16;  // the depthwise conv's block and the 1x1 conv's output block
  int64_t batch = 1;
  bool dw_bias = true, clip = true, pw_bias = true, residual = false;
};

// x [N, C/b, H, W, b] -> depthwise kxk (bias) -> Clip(0, 6) -> 1x1 conv (bias) -> (+ residual) -> y.
Graph ChainGraph(const ChainCase& c) {
  Graph g;
  std::string layout = "NCHW" + std::to_string(c.block) + "c";
  std::string out_layout = "NCHW" + std::to_string(c.out_block) + "c";
  g.AddInput("x", TensorType{kF32, {c.batch, c.c / c.block, c.h, c.w, c.block}});
  g.AddConstant("wd", RandomTensor({c.c, 1, c.k, c.k}, 3, -0.5, 0.5));
  g.AddConstant("wp", RandomTensor({c.oc, c.c, 1, 1}, 4, -0.3, 0.3));
  g.AddConstant("lo", graph::Tensor::Scalar(kF32, 0));
  g.AddConstant("hi", graph::Tensor::Scalar(kF32, 0.6));  // clips some of the values, as ReLU6 does
  std::vector<std::string> dw_in{"x", "wd"}, pw_in{c.clip ? "r" : "d", "wp"};
  if (c.dw_bias) {
    g.AddConstant("bd", RandomTensor({c.c}, 5));
    dw_in.push_back("bd");
  }
  if (c.pw_bias) {
    g.AddConstant("bp", RandomTensor({c.oc}, 6));
    pw_in.push_back("bp");
  }
  Add(&g, "Conv", "dw", dw_in, {"d"},
      {{"group", Attribute(c.c)}, {"data_layout", Attribute(layout)}, {"strides", Attribute(Ints{c.stride, c.stride})},
       {"dilations", Attribute(Ints{c.dilation, c.dilation})}, {"pads", Attribute(c.pads)}});
  if (c.clip) Add(&g, "Clip", "relu6", {"d", "lo", "hi"}, {"r"});
  std::vector<std::pair<std::string, Attribute>> pw_attrs{{"data_layout", Attribute(layout)}};
  if (c.out_block != c.block) pw_attrs.push_back({"out_layout", Attribute(out_layout)});
  Add(&g, "Conv", "pw", pw_in, {c.residual ? "p" : "y"}, pw_attrs);
  if (c.residual) {
    int64_t oh = (c.h + c.pads[0] + c.pads[2] - c.dilation * (c.k - 1) - 1) / c.stride + 1;
    int64_t ow = (c.w + c.pads[1] + c.pads[3] - c.dilation * (c.k - 1) - 1) / c.stride + 1;
    g.AddInput("res", TensorType{kF32, {c.batch, c.oc / c.out_block, oh, ow, c.out_block}});
    Add(&g, "Add", "add", {"p", "res"}, {"y"});
  }
  return Finish(g, {"y"});
}

// The graph as one group (what `all` fusion makes of it) and its kernel.
GroupKernel LowerChain(const Graph& graph, const LowerGroupOptions& options = {}) {
  Graph fused = testing::Fuse(graph, true);
  EXPECT_EQ(fused.groups.size(), 1u);
  return LowerGroup(fused, fused.groups[0], target::Target::Host(), "chain", options);
}

TEST(FusedConvChainTest, MatchesTheReference) {
  std::vector<ChainCase> cases(12);
  cases[1].stride = 2;                                   // stride 2, OW 5 (ragged column tile)
  cases[1].w = 10;
  cases[2].k = 5, cases[2].stride = 2, cases[2].pads = {2, 2, 2, 2}, cases[2].h = 11, cases[2].w = 11;  // MobileNetV3's 5x5
  cases[3].dw_bias = cases[3].clip = cases[3].pw_bias = false;  // no epilogue on either side
  cases[4].residual = true;                              // the block's residual add at the register tile
  cases[5].oc = 24, cases[5].out_block = 8;              // re-blocked output (24 = 3 x 8)
  cases[6].c = 24, cases[6].block = 8, cases[6].out_block = 8, cases[6].oc = 40;  // 8-channel blocks
  cases[7].pads = {0, 1, 2, 1}, cases[7].dilation = 2;   // asymmetric padding, dilation
  cases[8].batch = 2, cases[8].stride = 2, cases[8].residual = true;
  cases[9].pads = {0, 0, 0, 0}, cases[9].w = 19;         // unpadded (no pad stage), OW 17 (prime)
  cases[10].clip = false, cases[10].oc = 64;             // bias only; two channel blocks per tile, two tiles
  cases[11].h = 1, cases[11].w = 1, cases[11].k = 3;     // a 1x1 map (MobileNet's last blocks are 7x7)
  for (size_t i = 0; i < cases.size(); ++i) {
    Graph g = ChainGraph(cases[i]);
    CheckOptions o;
    o.one_group = true;
    EXPECT_TRUE(CheckAgainstReference(g, o)) << "case " << i;
    GroupKernel k = LowerChain(g);
    EXPECT_NE(k.schedule_summary.find("conv_chain: depthwise_nchwc"), std::string::npos)
        << "case " << i << ": " << k.schedule_summary;
  }
}

TEST(FusedConvChainTest, TwoThreads) {
  ChainCase c;
  c.h = 13, c.stride = 2, c.residual = true;
  CheckOptions o;
  o.one_group = true;
  o.eval = false;
  o.threads = 2;
  EXPECT_TRUE(CheckAgainstReference(ChainGraph(c), o));
}

// The intermediate never goes to memory: the kernel's only parameters are the input, the packed
// weights and biases and the output, the depthwise row is computed inside the 1x1 conv's row
// loop, and both convs' inner loops are vectorized (no serial loop nest of the producer).
TEST(FusedConvChainTest, ProducerIsAVectorizedRowInsideTheConsumer) {
  ChainCase c;
  c.c = 64, c.h = 14, c.w = 14, c.oc = 32;
  Graph g = ChainGraph(c);
  GroupKernel k = LowerChain(g);
  int values = 0;
  for (const KernelParam& p : k.params) values += p.kind == KernelParam::Kind::kValue && !g.IsConstant(p.value) ? 1 : 0;
  EXPECT_EQ(values, 2) << "only x and y are activations: the depthwise output is not a kernel argument";
  std::string ir_text = ir::ToString(k.func);
  if (getenv("AGATE_SHOW_IR")) std::cerr << k.schedule_summary << "\n" << ir_text;
  EXPECT_NE(k.schedule_summary.find("depthwise_nchwc 3x3 ow_block=7"), std::string::npos) << k.schedule_summary;
  EXPECT_NE(k.schedule_summary.find("epilogue at the register tile"), std::string::npos) << k.schedule_summary;
  // One parallel loop (the rows); the producer's buffer is allocated inside it, holding one row.
  size_t parallel = ir_text.find("parallel");
  ASSERT_NE(parallel, std::string::npos) << ir_text;
  EXPECT_EQ(ir_text.find("parallel", parallel + 1), std::string::npos) << ir_text;
  size_t alloc = ir_text.find("allocate r");
  ASSERT_NE(alloc, std::string::npos) << ir_text;
  EXPECT_GT(alloc, parallel) << ir_text;
  if (VectorLanes(target::Target::Host(), kF32) >= 16) {
    EXPECT_NE(ir_text.find("allocate r[float32 * 896]"), std::string::npos)
        << "one row: 64 channels x 14 columns\n" << ir_text;
  }
}

}  // namespace
}  // namespace ops
}  // namespace agate
