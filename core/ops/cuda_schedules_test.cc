// Every operator family's CUDA schedule against the reference interpreter, on
// the evaluator with GPU semantics (every barrier, shuffle and shared buffer
// checked for races), on small shapes that divide the tiles and shapes that do
// not; where NVRTC is installed each group's CUDA source is compiled too. The
// schedule summaries say which template ran, so a fallback cannot pass for the
// specialised schedule.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>

#include "core/codegen/cuda/build_cuda.h"
#include "core/codegen/cuda/nvrtc.h"
#include "core/graph/testing/graph_builder.h"
#include "core/ops/lower_group.h"
#include "core/ops/testing/reference_check.h"
#include "core/support/error.h"

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
using Attrs = std::vector<std::pair<std::string, Attribute>>;

const ir::DType kF32 = ir::DType::Float(32);

CheckOptions Cuda() {
  CheckOptions o;
  o.eval = false;
  o.llvm = false;
  o.cuda_target = "cuda -arch=sm_80";
  return o;
}

// The schedule summaries of a graph's groups on the cuda target.
std::string Summaries(const Graph& g) {
  Graph fused = testing::Fuse(g);
  target::Target t = target::Target::Parse("cuda -arch=sm_80");
  std::string out;
  for (size_t i = 0; i < fused.groups.size(); ++i) {
    out += LowerGroup(fused, fused.groups[i], t, "k" + std::to_string(i)).schedule_summary + "\n";
  }
  return out;
}

bool Has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

Graph OneOp(const std::string& op, const graph::Shape& shape, const Attrs& attrs = {}) {
  Graph g;
  g.AddInput("x", TensorType{kF32, shape});
  Add(&g, op, "op", {"x"}, {"y"}, attrs);
  return Finish(g, {"y"});
}

TEST(CudaScheduleTest, ElementwiseBroadcastAndLayout) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {2, 3, 5, 7}});
  g.AddConstant("b", RandomTensor({3, 1, 1}, 2));
  Add(&g, "Add", "add", {"x", "b"}, {"a"});
  Add(&g, "Relu", "relu", {"a"}, {"r"});
  Add(&g, "Transpose", "t", {"r"}, {"y"}, {{"perm", Attribute(Ints{0, 3, 1, 2})}});
  Graph done = Finish(g, {"y"});
  EXPECT_TRUE(CheckAgainstReference(done, Cuda()));
  EXPECT_TRUE(Has(Summaries(done), "injective (cuda)")) << Summaries(done);

  Graph c;
  c.AddInput("a", TensorType{kF32, {2, 3, 8}});
  c.AddInput("b", TensorType{kF32, {2, 5, 8}});
  Add(&c, "Concat", "cat", {"a", "b"}, {"y"}, {{"axis", Attribute(int64_t{1})}});
  EXPECT_TRUE(CheckAgainstReference(Finish(c, {"y"}), Cuda()));

  EXPECT_TRUE(CheckAgainstReference(
      OneOp("Resize", {1, 2, 5, 6}, {{"mode", Attribute("linear")}, {"scales", Attribute(std::vector<double>{1, 1, 2, 1.5})}}),
      Cuda()));
}

TEST(CudaScheduleTest, WideAccessesForAlignedElementwise) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {4, 64}});
  Add(&g, "Sigmoid", "s", {"x"}, {"y"});
  EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}), Cuda()));
}

TEST(CudaScheduleTest, ReductionsAcrossThreadsAndPerThread) {
  // 1000 elements per output: split across threads; 4 per output: a thread each.
  EXPECT_TRUE(CheckAgainstReference(OneOp("ReduceSum", {3, 1000}, {{"axes", Attribute(Ints{1})}}), Cuda()));
  EXPECT_TRUE(Has(Summaries(OneOp("ReduceMean", {3, 1000}, {{"axes", Attribute(Ints{1})}})), "across the threads"));
  EXPECT_TRUE(CheckAgainstReference(OneOp("ReduceMean", {3, 1000}, {{"axes", Attribute(Ints{1})}}), Cuda()));
  EXPECT_TRUE(CheckAgainstReference(OneOp("ReduceMax", {50, 4, 3}, {{"axes", Attribute(Ints{1})}}), Cuda()));
  EXPECT_TRUE(CheckAgainstReference(OneOp("ReduceSum", {5, 7, 9}, {{"keepdims", Attribute(int64_t{0})}}), Cuda()));
  EXPECT_TRUE(CheckAgainstReference(OneOp("ReduceLogSumExp", {4, 300}, {{"axes", Attribute(Ints{-1})}}), Cuda()));
  EXPECT_TRUE(CheckAgainstReference(OneOp("ArgMax", {3, 200}, {{"axis", Attribute(int64_t{1})}}), Cuda()));
  EXPECT_TRUE(CheckAgainstReference(OneOp("ArgMin", {6, 5}, {{"axis", Attribute(int64_t{0})}}), Cuda()));
}

TEST(CudaScheduleTest, SoftmaxAndNorms) {
  for (const graph::Shape& shape : {graph::Shape{4, 100}, graph::Shape{2, 3, 37}, graph::Shape{3, 512}}) {
    Graph g = OneOp("Softmax", shape, {{"axis", Attribute(int64_t{-1})}});
    EXPECT_TRUE(CheckAgainstReference(g, Cuda())) << graph::ShapeToString(shape);
    EXPECT_TRUE(Has(Summaries(g), "threads per row")) << Summaries(g);
  }
  EXPECT_TRUE(CheckAgainstReference(OneOp("LogSoftmax", {3, 70}, {{"axis", Attribute(int64_t{1})}}), Cuda()));
  EXPECT_TRUE(CheckAgainstReference(OneOp("Softmax", {5, 6, 3}, {{"axis", Attribute(int64_t{1})}}), Cuda()));
  EXPECT_TRUE(CheckAgainstReference(OneOp("Hardmax", {4, 33}, {{"axis", Attribute(int64_t{-1})}}), Cuda()));

  Graph ln;
  ln.AddInput("x", TensorType{kF32, {2, 5, 48}});
  ln.AddConstant("s", RandomTensor({48}, 3));
  ln.AddConstant("b", RandomTensor({48}, 4));
  Add(&ln, "LayerNormalization", "ln", {"x", "s", "b"}, {"y"}, {{"axis", Attribute(int64_t{-1})}});
  Graph lnf = Finish(ln, {"y"});
  EXPECT_TRUE(CheckAgainstReference(lnf, Cuda()));
  EXPECT_TRUE(Has(Summaries(lnf), "layer_norm (cuda): a block of 64 threads per row")) << Summaries(lnf);

  // RMSNormalization (what the pattern fusion makes of LLaMA-style norms) takes the same row schedule.
  Graph rms;
  rms.AddInput("x", TensorType{kF32, {3, 7, 40}});
  rms.AddConstant("s", RandomTensor({40}, 7));
  Add(&rms, "RMSNormalization", "rms", {"x", "s"}, {"y"}, {{"axis", Attribute(int64_t{-1})}});
  Graph rmsf = Finish(rms, {"y"});
  EXPECT_TRUE(CheckAgainstReference(rmsf, Cuda()));
  EXPECT_TRUE(Has(Summaries(rmsf), "rms_norm (cuda)")) << Summaries(rmsf);

  Graph in;
  in.AddInput("x", TensorType{kF32, {2, 3, 9, 11}});
  in.AddConstant("s", RandomTensor({3}, 5));
  in.AddConstant("b", RandomTensor({3}, 6));
  Add(&in, "InstanceNormalization", "in", {"x", "s", "b"}, {"y"}, {{"epsilon", Attribute(1e-3)}});
  EXPECT_TRUE(CheckAgainstReference(Finish(in, {"y"}), Cuda()));
}

TEST(CudaScheduleTest, Pooling) {
  EXPECT_TRUE(CheckAgainstReference(
      OneOp("MaxPool", {1, 3, 9, 11},
            {{"kernel_shape", Attribute(Ints{3, 3})}, {"strides", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{1, 1, 1, 1})}}),
      Cuda()));
  EXPECT_TRUE(CheckAgainstReference(
      OneOp("AveragePool", {2, 2, 7, 6}, {{"kernel_shape", Attribute(Ints{3, 2})}, {"pads", Attribute(Ints{1, 0, 2, 1})}}),
      Cuda()));
  EXPECT_TRUE(CheckAgainstReference(OneOp("GlobalAveragePool", {2, 5, 7, 7}), Cuda()));
  EXPECT_TRUE(CheckAgainstReference(OneOp("GlobalMaxPool", {1, 3, 16, 16}), Cuda()));
}

Graph MatMulGraph(const graph::Shape& a, const graph::Shape& b, bool bias_relu) {
  Graph g;
  g.AddInput("a", TensorType{kF32, a});
  g.AddConstant("b", RandomTensor(b, 7));
  Add(&g, "MatMul", "mm", {"a", "b"}, {bias_relu ? "m" : "y"});
  if (bias_relu) {
    g.AddConstant("bias", RandomTensor({b.back()}, 8));
    Add(&g, "Add", "add", {"m", "bias"}, {"s"});
    Add(&g, "Relu", "relu", {"s"}, {"y"});
  }
  return Finish(g, {"y"});
}

TEST(CudaScheduleTest, MatrixProducts) {
  // Tiled (shared memory, 4x4 per thread), ragged in every dimension, with and without an epilogue.
  for (bool epilogue : {false, true}) {
    Graph g = MatMulGraph({45, 37}, {37, 70}, epilogue);
    EXPECT_TRUE(CheckAgainstReference(g, Cuda())) << epilogue;
    EXPECT_TRUE(Has(Summaries(g), "staged in shared memory (2 operands)")) << Summaries(g);
  }
  EXPECT_TRUE(CheckAgainstReference(MatMulGraph({64, 32}, {32, 64}, true), Cuda()));
  // Batch-1 fully connected: a thread per output.
  Graph fc = MatMulGraph({1, 50}, {50, 33}, true);
  EXPECT_TRUE(CheckAgainstReference(fc, Cuda()));
  EXPECT_TRUE(Has(Summaries(fc), "a thread per output")) << Summaries(fc);
  // Batched, broadcast batch.
  Graph bm;
  bm.AddInput("a", TensorType{kF32, {3, 40, 20}});
  bm.AddInput("b", TensorType{kF32, {1, 20, 36}});
  Add(&bm, "MatMul", "mm", {"a", "b"}, {"y"});
  EXPECT_TRUE(CheckAgainstReference(Finish(bm, {"y"}), Cuda()));
  // Gemm with transB and C.
  Graph gm;
  gm.AddInput("a", TensorType{kF32, {33, 24}});
  gm.AddConstant("w", RandomTensor({40, 24}, 9));
  gm.AddConstant("c", RandomTensor({40}, 10));
  Add(&gm, "Gemm", "gemm", {"a", "w", "c"}, {"y"}, {{"transB", Attribute(int64_t{1})}, {"alpha", Attribute(0.5)}});
  EXPECT_TRUE(CheckAgainstReference(Finish(gm, {"y"}), Cuda()));
}

Graph ConvGraph(const graph::Shape& x, const graph::Shape& w, const Attrs& attrs) {
  Graph g;
  g.AddInput("x", TensorType{kF32, x});
  g.AddConstant("w", RandomTensor(w, 11));
  g.AddConstant("b", RandomTensor({w[0]}, 12));
  Add(&g, "Conv", "conv", {"x", "w", "b"}, {"c"}, attrs);
  return Finish(g, {"c"});
}

TEST(CudaScheduleTest, ConvolutionsAsImplicitGemm) {
  // conv + bias + add + relu in one kernel (the residual block's tail).
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, 16, 9, 11}});
  g.AddInput("skip", TensorType{kF32, {1, 20, 9, 11}});
  g.AddConstant("w", RandomTensor({20, 16, 3, 3}, 13));
  g.AddConstant("b", RandomTensor({20}, 14));
  Add(&g, "Conv", "conv", {"x", "w", "b"}, {"c"}, {{"pads", Attribute(Ints{1, 1, 1, 1})}});
  Add(&g, "Add", "add", {"c", "skip"}, {"s"});
  Add(&g, "Relu", "relu", {"s"}, {"y"});
  Graph fused = Finish(g, {"y"});
  EXPECT_TRUE(CheckAgainstReference(fused, Cuda()));
  std::string summaries = Summaries(fused);
  EXPECT_TRUE(Has(summaries, "implicit GEMM") && Has(summaries, "epilogue fused") && Has(summaries, "[Conv+Add+Relu]"))
      << summaries;
  EXPECT_EQ(std::count(summaries.begin(), summaries.end(), '\n'), 1) << summaries;

  Attrs strided{{"strides", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{1, 1, 1, 1})}};
  EXPECT_TRUE(CheckAgainstReference(ConvGraph({2, 8, 13, 10}, {70, 8, 3, 3}, strided), Cuda()));
  EXPECT_TRUE(CheckAgainstReference(ConvGraph({1, 24, 6, 20}, {16, 24, 1, 1}, {}), Cuda()));
  EXPECT_TRUE(CheckAgainstReference(
      ConvGraph({1, 3, 12, 12}, {8, 3, 5, 5}, {{"pads", Attribute(Ints{2, 2, 2, 2})}, {"dilations", Attribute(Ints{1, 1})}}),
      Cuda()));
  // The tile follows the grid: a large output keeps 4x4 outputs per thread, a small one (few blocks
  // even with 16-channel blocks) takes 2x2 per thread on 2-row pixel tiles.
  Graph large = ConvGraph({1, 2, 64, 64}, {64, 2, 3, 3}, {{"pads", Attribute(Ints{1, 1, 1, 1})}});
  EXPECT_TRUE(CheckAgainstReference(large, Cuda()));
  EXPECT_TRUE(Has(Summaries(large), "16 channels x 4x16 pixels per block, 4x4 per thread")) << Summaries(large);
  Graph small = ConvGraph({1, 24, 7, 7}, {40, 24, 3, 3}, {{"pads", Attribute(Ints{1, 1, 1, 1})}});
  EXPECT_TRUE(CheckAgainstReference(small, Cuda()));
  EXPECT_TRUE(Has(Summaries(small), "16 channels x 2x8 pixels per block, 2x2 per thread")) << Summaries(small);
  // Depthwise and grouped: a thread per output.
  EXPECT_TRUE(CheckAgainstReference(
      ConvGraph({1, 6, 9, 9}, {6, 1, 3, 3}, {{"group", Attribute(int64_t{6})}, {"pads", Attribute(Ints{1, 1, 1, 1})}}),
      Cuda()));
  EXPECT_TRUE(CheckAgainstReference(ConvGraph({1, 8, 7, 7}, {6, 4, 3, 3}, {{"group", Attribute(int64_t{2})}}), Cuda()));
}

// A conv (3x3 pad 1 unless `attrs` say otherwise) with a bias and a relu fused: one kernel.
Graph ConvReluGraph(const graph::Shape& x, const graph::Shape& w,
                    const Attrs& attrs = {{"pads", Attribute(Ints{1, 1, 1, 1})}}) {
  Graph g;
  g.AddInput("x", TensorType{kF32, x});
  g.AddConstant("w", RandomTensor(w, 15));
  g.AddConstant("b", RandomTensor({w[0]}, 16));
  Add(&g, "Conv", "conv", {"x", "w", "b"}, {"c"}, attrs);
  Add(&g, "Relu", "relu", {"c"}, {"y"});
  return Finish(g, {"y"});
}

// A conv without bias or epilogue: the schedule's own register cache (cache_write).
Graph BareConvGraph(const graph::Shape& x, const graph::Shape& w) {
  Graph g;
  g.AddInput("x", TensorType{kF32, x});
  g.AddConstant("w", RandomTensor(w, 17));
  Add(&g, "Conv", "conv", {"x", "w"}, {"y"}, {{"pads", Attribute(Ints{1, 1, 1, 1})}});
  return Finish(g, {"y"});
}

CheckOptions CudaWithSplit(int split) {
  CheckOptions o = Cuda();
  o.lower.cuda_k_split = split;
  return o;
}

std::string Summaries(const Graph& g, const LowerGroupOptions& options) {
  Graph fused = testing::Fuse(g);
  target::Target t = target::Target::Parse("cuda -arch=sm_80");
  std::string out;
  for (size_t i = 0; i < fused.groups.size(); ++i) {
    out += LowerGroup(fused, fused.groups[i], t, "k" + std::to_string(i), options).schedule_summary + "\n";
  }
  return out;
}

// Split-K inside a block: a small grid (7x7 pixels, few output channels) over a deep
// reduction (input channels x taps >= 1024) takes input-channel slices on threadIdx.z whose
// partial tiles are summed in shared memory; the evaluator checks the barriers between
// the slices' stores and the epilogue's reads (a missing one is a race).
TEST(CudaScheduleTest, DeepConvsOnSmallGridsSplitTheirInputChannels) {
  // ResNet-50's last stage has 512 input channels at 7x7 (here 32 of its 512 filters, which
  // keeps the evaluator quick and the grid as small): 4 slices of 128 channels.
  Graph deep = ConvReluGraph({1, 512, 7, 7}, {32, 512, 3, 3});
  EXPECT_TRUE(CheckAgainstReference(deep, Cuda()));
  EXPECT_TRUE(Has(Summaries(deep), "2x2 per thread, 32 input channels per shared-memory step (2 operands), split-K: "
                                   "input channels in 4 slices over threadIdx.z (8 each per step, 256 threads per "
                                   "block, partial tiles summed in shared memory), epilogue fused"))
      << Summaries(deep);
  // Ragged everywhere: 40 output channels (2.5 blocks of 16), 200 input channels (6.25 steps of
  // 32), 7 rows and columns on 2x8 pixel tiles.
  Graph ragged = ConvReluGraph({1, 200, 7, 7}, {40, 200, 3, 3});
  EXPECT_TRUE(CheckAgainstReference(ragged, Cuda()));
  EXPECT_TRUE(Has(Summaries(ragged), "split-K: input channels in 4 slices")) << Summaries(ragged);
  // Input channels that the slices do not divide (130 = 4 x 32 + 2): the last channels' slices
  // are guarded.
  Graph uneven = ConvReluGraph({1, 130, 7, 7}, {20, 130, 3, 3});
  EXPECT_TRUE(CheckAgainstReference(uneven, Cuda()));
  EXPECT_TRUE(Has(Summaries(uneven), "split-K: input channels in 4 slices")) << Summaries(uneven);
  // The other deep convs of ResNet-50's last stages: stride 2 into 7x7 (layer4.0's 3x3, a wider
  // staged window) and 1x1 over 1024 channels (the bottlenecks' first conv at 14x14).
  Graph strided = ConvReluGraph({1, 256, 14, 14}, {16, 256, 3, 3},
                                {{"strides", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{1, 1, 1, 1})}});
  EXPECT_TRUE(CheckAgainstReference(strided, Cuda()));
  EXPECT_TRUE(Has(Summaries(strided), "split-K: input channels in 4 slices")) << Summaries(strided);
  Graph pointwise = ConvReluGraph({1, 1024, 7, 7}, {16, 1024, 1, 1}, {});
  EXPECT_TRUE(CheckAgainstReference(pointwise, Cuda()));
  EXPECT_TRUE(Has(Summaries(pointwise), "split-K: input channels in 4 slices")) << Summaries(pointwise);
}

TEST(CudaScheduleTest, SplitKLeavesLargeGridsAndShallowReductionsAlone) {
  // ResNet-50's 3x3 convs at 28x28 (128 channels): 448 blocks, no split.
  Graph wide = ConvReluGraph({1, 128, 28, 28}, {128, 128, 3, 3});
  EXPECT_EQ(Summaries(wide),
            "conv2d (cuda): implicit GEMM, 16 channels x 2x8 pixels per block, 2x2 per thread, 8 input channels per "
            "shared-memory step (2 operands), epilogue fused [Conv+Relu]\n");
  // A small grid over a shallow reduction (24 x 9 = 216 products per output): no split.
  Graph shallow = ConvReluGraph({1, 24, 7, 7}, {40, 24, 3, 3});
  EXPECT_FALSE(Has(Summaries(shallow), "split-K")) << Summaries(shallow);
}

TEST(CudaScheduleTest, TheSplitKKnobForcesTheSplitOnAndOff) {
  LowerGroupOptions off, two, eight;
  off.cuda_k_split = 1;
  two.cuda_k_split = 2;
  eight.cuda_k_split = 8;
  Graph deep = ConvReluGraph({1, 512, 7, 7}, {32, 512, 3, 3});
  EXPECT_EQ(Summaries(deep, off),
            "conv2d (cuda): implicit GEMM, 16 channels x 2x8 pixels per block, 2x2 per thread, 8 input channels per "
            "shared-memory step (2 operands), epilogue fused [Conv+Relu]\n");
  EXPECT_TRUE(Has(Summaries(deep, eight), "in 8 slices over threadIdx.z (8 each per step, 512 threads per block"))
      << Summaries(deep, eight);
  // Forced on a conv the rule leaves alone (864 products per output), with no epilogue (the
  // schedule's own register cache is the one split) and on a large grid of 4x4 tiles.
  Graph bare = BareConvGraph({1, 96, 7, 7}, {16, 96, 3, 3});
  EXPECT_FALSE(Has(Summaries(bare), "split-K")) << Summaries(bare);
  EXPECT_TRUE(CheckAgainstReference(bare, CudaWithSplit(2)));
  EXPECT_TRUE(Has(Summaries(bare, two), "split-K: input channels in 2 slices")) << Summaries(bare, two);
  // The residual block's tail (conv + bias + add + relu): every slice's threads read the skip
  // input, the first slice stores.
  Graph residual;
  residual.AddInput("x", TensorType{kF32, {1, 16, 9, 11}});
  residual.AddInput("skip", TensorType{kF32, {1, 20, 9, 11}});
  residual.AddConstant("w", RandomTensor({20, 16, 3, 3}, 13));
  residual.AddConstant("b", RandomTensor({20}, 14));
  Add(&residual, "Conv", "conv", {"x", "w", "b"}, {"c"}, {{"pads", Attribute(Ints{1, 1, 1, 1})}});
  Add(&residual, "Add", "add", {"c", "skip"}, {"s"});
  Add(&residual, "Relu", "relu", {"s"}, {"y"});
  Graph tail = Finish(residual, {"y"});
  EXPECT_TRUE(CheckAgainstReference(tail, CudaWithSplit(2)));
  EXPECT_TRUE(Has(Summaries(tail, two), "split-K: input channels in 2 slices") &&
              Has(Summaries(tail, two), "epilogue fused [Conv+Add+Relu]"))
      << Summaries(tail, two);
  // 4x4 outputs per thread (kept by a set cuda_tile), ragged along the columns.
  CheckOptions tiles = CudaWithSplit(2);
  tiles.lower.cuda_tile = 16;
  Graph large = ConvReluGraph({1, 20, 8, 20}, {16, 20, 3, 3});
  EXPECT_TRUE(CheckAgainstReference(large, tiles));
  EXPECT_TRUE(Has(Summaries(large, tiles.lower), "4x4 per thread, 16 input channels per shared-memory step (2 operands), "
                                                 "split-K: input channels in 2 slices"))
      << Summaries(large, tiles.lower);
  for (int64_t bad : {3, 16}) {
    LowerGroupOptions o;
    EXPECT_THROW(SetScheduleKnob(&o, "cuda_k_split", bad), Error) << bad;
  }
  LowerGroupOptions set;
  SetScheduleKnob(&set, "cuda_k_split", 4);
  EXPECT_EQ(set.cuda_k_split, 4);
}

// The split schedule's CUDA source compiles for the oldest and newest architectures agate
// targets, 4 and 8 slices (sm_70's 96 KiB of shared memory per block, sm_90's 227 KiB). Every
// architecture's lowering passes its launch checks; NVRTC compiles those it supports (CUDA 13
// dropped sm_70: that one is reported, as codegen_cuda_test does).
TEST(CudaScheduleTest, SplitKConvsCompileWithNvrtcForEveryArchitecture) {
  if (!codegen::NvrtcAvailable()) GTEST_SKIP() << "NVRTC is not installed; the cuda target is unavailable on this machine";
  Graph fused = testing::Fuse(ConvReluGraph({1, 512, 7, 7}, {512, 512, 3, 3}));
  ASSERT_EQ(fused.groups.size(), 1u);
  std::vector<int> supported = codegen::NvrtcSupportedArchs();
  int compiled = 0;
  for (int sm : {70, 80, 90}) {
    target::Target t = target::Target::Parse("cuda -arch=sm_" + std::to_string(sm));
    for (int split : {0, 8}) {
      LowerGroupOptions o;
      o.cuda_k_split = split;
      GroupKernel k = LowerGroup(fused, fused.groups[0], t, "conv", o);
      EXPECT_TRUE(Has(k.schedule_summary, split ? "in 8 slices" : "in 4 slices")) << k.schedule_summary;
      if (std::find(supported.begin(), supported.end(), sm) == supported.end()) {
        std::cout << "sm_" << sm << ": lowered; not compiled, " << codegen::NvrtcDescription()
                  << " does not compile for it\n";
        continue;
      }
      codegen::CudaBuild b = codegen::BuildCuda({k.func}, t, "split_k");
      ++compiled;
      ASSERT_EQ(b.kernels.size(), 1u) << sm;
      EXPECT_EQ(b.kernels[0].source.launch.block[2], split ? 8 : 4) << sm;
      EXPECT_EQ(b.kernels[0].local_bytes, 0) << "sm_" << sm << ": the register tiles spilled\n" << b.log;
      EXPECT_FALSE(b.cubin.empty()) << sm;
      EXPECT_TRUE(Has(b.ptx, ".target sm_" + std::to_string(sm))) << sm;
    }
  }
  EXPECT_GE(compiled, 4);
}

TEST(CudaScheduleTest, GenericAnchorsTakeTheDefaultGpuSchedule) {
  Graph t;
  t.AddInput("x", TensorType{kF32, {3, 9}});
  Add(&t, "TopK", "k", {"x"}, {"values", "indices"}, {{"k", Attribute(Ints{4})}, {"axis", Attribute(int64_t{1})}});
  EXPECT_TRUE(CheckAgainstReference(Finish(t, {"values", "indices"}), Cuda()));
  EXPECT_TRUE(CheckAgainstReference(
      OneOp("CumSum", {4, 6}, {{"axis", Attribute(Ints{1})}, {"exclusive", Attribute(int64_t{1})}}), Cuda()));
}

}  // namespace
}  // namespace ops
}  // namespace agate
