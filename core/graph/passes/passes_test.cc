#include <gtest/gtest.h>

#include "core/graph/op_registry.h"
#include "core/graph/passes/batchnorm_folding.h"
#include "core/graph/passes/constant_folding.h"
#include "core/graph/passes/dead_code_elimination.h"
#include "core/graph/passes/layout_transformation.h"
#include "core/graph/passes/graph_memory_plan.h"
#include "core/graph/passes/pipeline.h"
#include "core/graph/passes/simplification.h"
#include "core/graph/printer.h"
#include "core/graph_eval/interpreter.h"
#include "core/graph/testing/graph_builder.h"

namespace agate {
namespace graph {
namespace {

using testing::Add;
using testing::Finish;
using testing::MaxAbsDiff;
using testing::RandomTensor;

TensorType F32(Shape shape) { return TensorType{DType::Float(32), std::move(shape)}; }

std::vector<std::string> Ops(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op);
  return ops;
}

int Count(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op == op;
  return n;
}

// Runs both graphs on the same inputs and returns the largest output difference.
double Difference(const Graph& a, const Graph& b, const std::map<std::string, Tensor>& inputs) {
  auto ra = graph_eval::Interpret(a, inputs), rb = graph_eval::Interpret(b, inputs);
  double worst = 0;
  for (const std::string& out : a.outputs) worst = std::max(worst, MaxAbsDiff(ra.at(out), rb.at(out)));
  return worst;
}

TEST(ConstantFoldingTest, EvaluatesConstantSubgraphs) {
  Graph g;
  g.AddInput("x", F32({2, 3}));
  g.AddConstant("w", RandomTensor({3, 2}, 1));
  g.AddConstant("one", Tensor::Scalar(DType::Float(32), 1.0));
  Add(&g, "Transpose", "wt", {"w"}, {"w_t"});
  Add(&g, "Add", "w_plus", {"w_t", "one"}, {"w2"});
  Add(&g, "Add", "use", {"x", "w2"}, {"y"});
  g = Finish(g, {"y"});
  Graph folded = FoldConstants(g);
  EXPECT_EQ(Ops(folded), (std::vector<std::string>{"Add"}));
  EXPECT_TRUE(folded.IsConstant("w2"));
  EXPECT_FALSE(folded.IsConstant("w"));  // no longer used
  EXPECT_EQ(Difference(g, folded, {{"x", RandomTensor({2, 3}, 2)}}), 0.0);
}

// The compiler-ABI fuzzer's out-of-memory report: a OneHot of constant operands with depth
// 2^28 was folded into a 2.75 GB constant. Nodes that create far more data than they read stay.
TEST(ConstantFoldingTest, LeavesNodesWhoseOutputsDwarfTheirInputs) {
  Graph g;
  g.AddInput("x", F32({4, 4}));
  Add(&g, "ConstantOfShape", "small", {}, {"s"}, {{"shape", std::vector<int64_t>{4, 4}}});
  Add(&g, "ConstantOfShape", "huge", {}, {"h"}, {{"shape", std::vector<int64_t>{4096, 8192}}});
  Add(&g, "Add", "use_small", {"x", "s"}, {"y"});
  Add(&g, "ReduceMax", "use_huge", {"h"}, {"z"}, {{"keepdims", int64_t{0}}});
  g = Finish(g, {"y", "z"});
  Graph folded = FoldConstants(g);
  EXPECT_TRUE(folded.IsConstant("s"));
  EXPECT_FALSE(folded.IsConstant("h"));
  EXPECT_EQ(Ops(folded), (std::vector<std::string>{"ConstantOfShape", "Add", "ReduceMax"})) << PrintGraph(folded);

  // The bound: no more elements than the largest input, or than 2^24 from small inputs.
  const int64_t bound = graph_eval::kMaxFoldedElementsFromSmallInputs;
  EXPECT_TRUE(graph_eval::FoldingIsBounded(0, {F32({bound})}));
  EXPECT_FALSE(graph_eval::FoldingIsBounded(0, {F32({bound + 1})}));
  EXPECT_FALSE(graph_eval::FoldingIsBounded(16, {F32({4, 4}), F32({2, bound})}));
  // A model's own large weight (a Transpose or Cast of an initializer) still folds.
  EXPECT_TRUE(graph_eval::FoldingIsBounded(4 * bound, {F32({2 * bound, 2})}));
  EXPECT_FALSE(graph_eval::FoldingIsBounded(4 * bound, {F32({4 * bound + 1})}));
}

TEST(SimplificationTest, RemovesIdentityDropoutAndCancellingTransposes) {
  Graph g;
  g.AddInput("x", F32({2, 3, 4}));
  Add(&g, "Identity", "id", {"x"}, {"a"});
  Add(&g, "Dropout", "drop", {"a"}, {"b"});
  Add(&g, "Transpose", "t1", {"b"}, {"c"}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  Add(&g, "Transpose", "t2", {"c"}, {"d"}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  Add(&g, "Relu", "relu", {"d"}, {"y"});
  g = Finish(g, {"y"});
  Graph s = Simplify(g);
  EXPECT_EQ(Ops(s), (std::vector<std::string>{"Relu"})) << PrintGraph(s);
  EXPECT_EQ(s.nodes[0].inputs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(Difference(g, s, {{"x", RandomTensor({2, 3, 4}, 3)}}), 0.0);
}

// Exports name Dropout's mask output even when nothing reads it (Swin's attention), pad by nothing
// and slice everything (Swin's window padding and crop for sizes the window divides): all no-ops.
// A Dropout whose mask is read, a real pad and a reversing slice stay.
TEST(SimplificationTest, RemovesNoOpDropoutPadAndSlice) {
  using Ints = std::vector<int64_t>;
  Graph g;
  g.AddInput("x", F32({1, 4, 6}));
  Add(&g, "Dropout", "drop", {"x"}, {"a", "unused_mask"}, {{"ratio", 0.0}});
  Add(&g, "Pad", "pad", {"a"}, {"b"}, {{"pads", Ints{0, 0, 0, 0, 0, 0}}});
  Add(&g, "Slice", "slice", {"b"}, {"c"}, {{"starts", Ints{0}}, {"ends", Ints{6}}, {"axes", Ints{2}}, {"steps", Ints{1}}});
  Add(&g, "Relu", "relu", {"c"}, {"y"});
  Add(&g, "Dropout", "drop2", {"y"}, {"z", "mask"}, {{"ratio", 0.0}});
  Add(&g, "Slice", "reverse", {"z"}, {"r"}, {{"starts", Ints{-1}}, {"ends", Ints{-7}}, {"axes", Ints{2}}, {"steps", Ints{-1}}});
  Add(&g, "Pad", "real_pad", {"r"}, {"p"}, {{"pads", Ints{0, 0, 1, 0, 0, 1}}});
  g = Finish(g, {"p", "mask"});
  Graph s = Simplify(g);
  EXPECT_EQ(Ops(s), (std::vector<std::string>{"Relu", "Dropout", "Slice", "Pad"})) << PrintGraph(s);
  EXPECT_EQ(s.nodes[0].inputs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(Difference(g, s, {{"x", RandomTensor({1, 4, 6}, 3)}}), 0.0);
}

// PyTorch's QDQ exports put a Cast to uint8 after every QuantizeLinear (whose output is
// uint8 already): gone, as is one to a graph output's own type (its producer writes the
// output); a Cast that changes the type stays.
TEST(SimplificationTest, RemovesCastsToTheSameType) {
  Graph g;
  g.AddInput("x", F32({2, 3}));
  Add(&g, "Cast", "same", {"x"}, {"a"}, {{"to", std::string("float32")}});
  Add(&g, "Relu", "relu", {"a"}, {"b"});
  Add(&g, "Cast", "to_int", {"b"}, {"c"}, {{"to", std::string("int64")}});
  Add(&g, "Cast", "same_int", {"c"}, {"y"}, {{"to", std::string("int64")}});
  g = Finish(g, {"y"});
  Graph s = Simplify(g);
  EXPECT_EQ(Ops(s), (std::vector<std::string>{"Relu", "Cast"})) << PrintGraph(s);
  EXPECT_EQ(s.nodes[0].inputs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(s.nodes[1].outputs, (std::vector<std::string>{"y"}));
  EXPECT_EQ(Difference(g, s, {{"x", RandomTensor({2, 3}, 5)}}), 0.0);
}

// PyTorch exports avg_pool2d(padding=1) as Pad + AveragePool: the zero pad folds
// into the pool (counting the padding) and into a conv; a pad with a non-zero
// value, of the channel axis, or with a second reader stays.
TEST(SimplificationTest, FoldsZeroSpatialPadsIntoPoolsAndConvs) {
  using Ints = std::vector<int64_t>;
  Graph g;
  g.AddInput("x", F32({1, 4, 6, 7}));
  g.AddConstant("w", RandomTensor({4, 4, 3, 3}, 40, -0.3, 0.3));
  Add(&g, "Pad", "pad1", {"x"}, {"p1"}, {{"pads", Ints{0, 0, 1, 1, 0, 0, 1, 2}}});
  Add(&g, "AveragePool", "pool", {"p1"}, {"a"}, {{"kernel_shape", Ints{3, 3}}});
  Add(&g, "Pad", "pad2", {"a"}, {"p2"}, {{"pads", Ints{0, 0, 2, 0, 0, 0, 1, 1}}});
  Add(&g, "Conv", "conv", {"p2", "w"}, {"c"});
  Add(&g, "Pad", "pad3", {"c"}, {"p3"}, {{"pads", Ints{0, 0, 1, 1, 0, 0, 1, 1}}, {"value", 1.5}});
  Add(&g, "AveragePool", "pool3", {"p3"}, {"y"}, {{"kernel_shape", Ints{2, 2}}});
  Add(&g, "Pad", "pad4", {"c"}, {"p4"}, {{"pads", Ints{0, 1, 0, 0, 0, 0, 0, 0}}});
  Add(&g, "Conv", "conv4", {"p4", "w5"}, {"z"});
  g.AddConstant("w5", RandomTensor({2, 5, 1, 1}, 41));
  g = Finish(g, {"y", "z"});
  Graph s = Simplify(g);
  EXPECT_EQ(Count(s, "Pad"), 2) << PrintGraph(s);  // pad3 (value 1.5) and pad4 (channels) stay
  for (const Node& n : s.nodes) {
    if (n.name == "pool") {
      EXPECT_EQ(n.attrs.GetInts("pads"), (Ints{1, 1, 1, 2}));
      EXPECT_EQ(n.attrs.GetInt("count_include_pad"), 1);
    }
    if (n.name == "conv") EXPECT_EQ(n.attrs.GetInts("pads"), (Ints{2, 0, 1, 1}));
  }
  EXPECT_LT(Difference(g, s, {{"x", RandomTensor({1, 4, 6, 7}, 42)}}), 1e-6);
}

TEST(SimplificationTest, ComposesTransposesAndCollapsesReshapeChains) {
  Graph g;
  g.AddInput("x", F32({2, 3, 4}));
  Add(&g, "Transpose", "t1", {"x"}, {"a"}, {{"perm", std::vector<int64_t>{1, 0, 2}}});
  Add(&g, "Transpose", "t2", {"a"}, {"b"}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  Add(&g, "Flatten", "flat", {"b"}, {"c"}, {{"axis", int64_t{1}}});
  Add(&g, "Unsqueeze", "unsq", {"c"}, {"d"}, {{"axes", std::vector<int64_t>{0}}});
  Add(&g, "Reshape", "r", {"d"}, {"e"}, {{"shape", std::vector<int64_t>{4, -1}}});
  Add(&g, "Identity", "out", {"e"}, {"y"});  // feeds the graph output directly
  g = Finish(g, {"y"});
  Graph s = Simplify(g);
  EXPECT_EQ(Ops(s), (std::vector<std::string>{"Transpose", "Reshape"})) << PrintGraph(s);
  EXPECT_EQ(s.nodes[0].attrs.GetInts("perm"), (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ(s.nodes[1].outputs, (std::vector<std::string>{"y"}));
  EXPECT_EQ(Difference(g, s, {{"x", RandomTensor({2, 3, 4}, 4)}}), 0.0);
}

Graph ConvBn(bool with_bias) {
  Graph g;
  g.AddInput("x", F32({1, 3, 6, 6}));
  g.AddConstant("w", RandomTensor({4, 3, 3, 3}, 5));
  g.AddConstant("b", RandomTensor({4}, 6));
  g.AddConstant("gamma", RandomTensor({4}, 7, 0.5, 1.5));
  g.AddConstant("beta", RandomTensor({4}, 8));
  g.AddConstant("mean", RandomTensor({4}, 9));
  g.AddConstant("var", RandomTensor({4}, 10, 0.5, 2));
  std::vector<std::string> conv_inputs{"x", "w"};
  if (with_bias) conv_inputs.push_back("b");
  Add(&g, "Conv", "conv", conv_inputs, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  Add(&g, "BatchNormalization", "bn", {"c", "gamma", "beta", "mean", "var"}, {"y"}, {{"epsilon", 1e-3}});
  return Finish(g, {"y"});
}

TEST(BatchNormFoldingTest, FoldsIntoConvWeightsAndBias) {
  for (bool with_bias : {false, true}) {
    Graph g = ConvBn(with_bias);
    Graph folded = FoldBatchNorm(g);
    EXPECT_EQ(Ops(folded), (std::vector<std::string>{"Conv"}));
    EXPECT_EQ(folded.nodes[0].outputs, (std::vector<std::string>{"y"}));
    EXPECT_LT(Difference(g, folded, {{"x", RandomTensor({1, 3, 6, 6}, 11)}}), 1e-5);
  }
}

TEST(BatchNormFoldingTest, FoldsIntoDenseLayers) {
  Graph g;
  g.AddInput("x", F32({2, 5}));
  g.AddConstant("w", RandomTensor({3, 5}, 12));
  g.AddConstant("c", RandomTensor({3}, 13));
  g.AddConstant("gamma", RandomTensor({3}, 14, 0.5, 1.5));
  g.AddConstant("beta", RandomTensor({3}, 15));
  g.AddConstant("mean", RandomTensor({3}, 16));
  g.AddConstant("var", RandomTensor({3}, 17, 0.5, 2));
  Add(&g, "Gemm", "fc", {"x", "w", "c"}, {"f"}, {{"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}});
  Add(&g, "BatchNormalization", "bn", {"f", "gamma", "beta", "mean", "var"}, {"y"});
  g = Finish(g, {"y"});
  Graph folded = FoldBatchNorm(g);
  EXPECT_EQ(Ops(folded), (std::vector<std::string>{"Gemm"}));
  EXPECT_LT(Difference(g, folded, {{"x", RandomTensor({2, 5}, 18)}}), 1e-5);
}

TEST(BatchNormFoldingTest, LeavesSharedProducersAlone) {
  Graph g = ConvBn(true);
  g.outputs.push_back("c");  // the conv's raw output is also a result
  Graph folded = FoldBatchNorm(g);
  EXPECT_EQ(Ops(folded), (std::vector<std::string>{"Conv", "BatchNormalization"}));
}

// conv -> relu -> conv -> add(residual) -> relu -> global average pool -> flatten -> gemm.
Graph ResidualNet() {
  Graph g;
  g.AddInput("x", F32({1, 8, 5, 5}));
  g.AddConstant("w1", RandomTensor({8, 8, 3, 3}, 20, -0.2, 0.2));
  g.AddConstant("w2", RandomTensor({8, 8, 3, 3}, 21, -0.2, 0.2));
  g.AddConstant("b2", RandomTensor({8}, 22));
  g.AddConstant("fc", RandomTensor({8, 3}, 23));
  std::vector<std::pair<std::string, Attribute>> pads{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  Add(&g, "Conv", "conv1", {"x", "w1"}, {"c1"}, pads);
  Add(&g, "Relu", "relu1", {"c1"}, {"r1"});
  Add(&g, "Conv", "conv2", {"r1", "w2", "b2"}, {"c2"}, pads);
  Add(&g, "Add", "residual", {"c2", "r1"}, {"s"});
  Add(&g, "Relu", "relu2", {"s"}, {"r2"});
  Add(&g, "GlobalAveragePool", "gap", {"r2"}, {"p"});
  Add(&g, "Flatten", "flat", {"p"}, {"f"});
  Add(&g, "Gemm", "dense", {"f", "fc"}, {"y"});
  return Finish(g, {"y"});
}

TEST(LayoutTransformationTest, BlocksTheConvRegionWithTransformsOnlyAtItsBoundaries) {
  Graph g = ResidualNet();
  Graph blocked = TransformLayout(g, 4);
  EXPECT_EQ(Count(blocked, "LayoutTransform"), 2) << PrintGraph(blocked);
  for (const Node& n : blocked.nodes) {
    if (n.op == "Conv" || n.op == "GlobalAveragePool") {
      EXPECT_EQ(n.attrs.GetString("data_layout"), "NCHW4c");
    }
  }
  EXPECT_EQ(blocked.TypeOf("r1_NCHW4c").shape, (Shape{1, 2, 5, 5, 4}));
  EXPECT_LT(Difference(g, blocked, {{"x", RandomTensor({1, 8, 5, 5}, 24)}}), 1e-5);
  // Channels that are not a multiple of the block keep NCHW.
  EXPECT_EQ(Count(TransformLayout(g, 3), "LayoutTransform"), 0);
}

// A ConvNeXt block as torchvision 0.14 exports it, after norm and activation fusion: depthwise
// 7x7 conv, Transpose to channels-last, LayerNorm over the channels, Linear (MatMul + Add),
// GELU, Linear, Transpose back, layer scale [C, 1, 1] and the residual Add.
Graph ConvNextBlock(int64_t c, int64_t hw) {
  Graph g;
  g.AddInput("x", F32({1, c, hw, hw}));
  g.AddConstant("stem_w", RandomTensor({c, c, 1, 1}, 50, -0.3, 0.3));
  g.AddConstant("dw_w", RandomTensor({c, 1, 7, 7}, 51, -0.2, 0.2));
  g.AddConstant("dw_b", RandomTensor({c}, 52));
  g.AddConstant("ln_w", RandomTensor({c}, 53, 0.5, 1.5));
  g.AddConstant("ln_b", RandomTensor({c}, 54));
  g.AddConstant("fc1_w", RandomTensor({c, 4 * c}, 55, -0.2, 0.2));
  g.AddConstant("fc1_b", RandomTensor({4 * c}, 56));
  g.AddConstant("fc2_w", RandomTensor({4 * c, c}, 57, -0.2, 0.2));
  g.AddConstant("fc2_b", RandomTensor({c}, 58));
  g.AddConstant("gamma", RandomTensor({c, 1, 1}, 59));
  Add(&g, "Conv", "stem", {"x", "stem_w"}, {"s"});
  Add(&g, "Conv", "dw", {"s", "dw_w", "dw_b"}, {"d"},
      {{"group", c}, {"pads", std::vector<int64_t>{3, 3, 3, 3}}, {"kernel_shape", std::vector<int64_t>{7, 7}}});
  Add(&g, "Transpose", "to_nhwc", {"d"}, {"t"}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
  Add(&g, "LayerNormalization", "ln", {"t", "ln_w", "ln_b"}, {"n"}, {{"axis", int64_t{-1}}, {"epsilon", 1e-6}});
  Add(&g, "MatMul", "fc1", {"n", "fc1_w"}, {"h"});
  Add(&g, "Add", "fc1_bias", {"h", "fc1_b"}, {"hb"});
  Add(&g, "Gelu", "gelu", {"hb"}, {"a"});
  Add(&g, "MatMul", "fc2", {"a", "fc2_w"}, {"o"});
  Add(&g, "Add", "fc2_bias", {"fc2_b", "o"}, {"ob"});
  Add(&g, "Transpose", "to_nchw", {"ob"}, {"back"}, {{"perm", std::vector<int64_t>{0, 3, 1, 2}}});
  Add(&g, "Mul", "layer_scale", {"gamma", "back"}, {"scaled"});
  Add(&g, "Add", "residual", {"scaled", "s"}, {"r"});
  Add(&g, "Relu", "next", {"r"}, {"y"});
  return Finish(g, {"y"});
}

// The channels-last block runs in the convolutions' blocked layout: no Transpose, no layout
// transform inside, the layer norm per pixel over the channels, the Linears as 1x1 convs.
TEST(LayoutTransformationTest, ChannelsLastBlockRunsInTheConvolutionsLayout) {
  Graph g = ConvNextBlock(16, 9);
  Graph blocked = TransformLayout(g, 8);
  EXPECT_EQ(Count(blocked, "Transpose"), 0) << PrintGraph(blocked);
  EXPECT_EQ(Count(blocked, "MatMul"), 0);
  EXPECT_EQ(Count(blocked, "Conv"), 4);
  EXPECT_EQ(Count(blocked, "LayoutTransform"), 2);  // the region's entry and exit only
  for (const Node& n : blocked.nodes) {
    if (n.op == "LayerNormalization") EXPECT_EQ(n.attrs.GetString("data_layout"), "NCHW8c");
    if (n.op == "Conv") EXPECT_EQ(n.attrs.GetString("data_layout"), "NCHW8c");
  }
  EXPECT_LT(Difference(g, blocked, {{"x", RandomTensor({1, 16, 9, 9}, 60)}}), 1e-4);
}

// Without a blocked producer (channels no block divides) the block stays channels-last as written.
TEST(LayoutTransformationTest, ChannelsLastBlockWithoutABlockedProducerStays) {
  Graph g = ConvNextBlock(6, 5);
  Graph out = TransformLayout(g, 8);
  EXPECT_EQ(Count(out, "Transpose"), 2);
  EXPECT_EQ(Count(out, "MatMul"), 2);
  EXPECT_LT(Difference(g, out, {{"x", RandomTensor({1, 6, 5, 5}, 61)}}), 1e-5);
}

// A squeeze-and-excitation block (MobileNetV3, EfficientNet): the [1, C, 1, 1] scale computed
// from the pooled activation multiplies the blocked activation in the blocked layout.
TEST(LayoutTransformationTest, SqueezeExcitationScaleStaysBlocked) {
  Graph g;
  g.AddInput("x", F32({1, 16, 6, 6}));
  g.AddConstant("w", RandomTensor({16, 16, 3, 3}, 70, -0.3, 0.3));
  g.AddConstant("fc1", RandomTensor({8, 16, 1, 1}, 71, -0.3, 0.3));
  g.AddConstant("fc2", RandomTensor({16, 8, 1, 1}, 72, -0.3, 0.3));
  g.AddConstant("proj", RandomTensor({16, 16, 1, 1}, 73, -0.3, 0.3));
  Add(&g, "Conv", "conv", {"x", "w"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  Add(&g, "GlobalAveragePool", "pool", {"c"}, {"p"});
  Add(&g, "Conv", "squeeze", {"p", "fc1"}, {"s1"});
  Add(&g, "Relu", "relu", {"s1"}, {"s2"});
  Add(&g, "Conv", "excite", {"s2", "fc2"}, {"s3"});
  Add(&g, "HardSigmoid", "gate", {"s3"}, {"scale"}, {{"alpha", 1.0 / 6}});
  Add(&g, "Mul", "apply", {"c", "scale"}, {"scaled"});
  Add(&g, "Conv", "project", {"scaled", "proj"}, {"y"});
  g = Finish(g, {"y"});
  Graph blocked = TransformLayout(g, 8);
  EXPECT_EQ(Count(blocked, "LayoutTransform"), 2) << PrintGraph(blocked);  // entry and exit only
  EXPECT_LT(Difference(g, blocked, {{"x", RandomTensor({1, 16, 6, 6}, 74)}}), 1e-5);
}

TEST(LayoutTransformationTest, PerChannelConstantsStayInsideTheRegion) {
  Graph g;
  g.AddInput("x", F32({1, 8, 4, 4}));
  g.AddConstant("w", RandomTensor({8, 8, 1, 1}, 27));
  g.AddConstant("scale", RandomTensor({8, 1, 1}, 28));
  g.AddConstant("shift", RandomTensor({1, 8, 1, 1}, 29));
  Add(&g, "Conv", "conv", {"x", "w"}, {"c"});
  Add(&g, "Mul", "scale_mul", {"c", "scale"}, {"m"});
  Add(&g, "Add", "shift_add", {"m", "shift"}, {"a"});
  Add(&g, "Relu", "relu", {"a"}, {"y"});
  g = Finish(g, {"y"});
  Graph blocked = TransformLayout(g, 4);
  EXPECT_EQ(Count(blocked, "LayoutTransform"), 2) << PrintGraph(blocked);
  EXPECT_EQ(blocked.TypeOf("scale_NCHW4c").shape, (Shape{1, 2, 1, 1, 4}));
  EXPECT_LT(Difference(g, blocked, {{"x", RandomTensor({1, 8, 4, 4}, 30)}}), 1e-6);
}

// An inverted-residual chain with 24 channels between 32-channel layers, as in
// MobileNetV2: with a preferred block of 16 the 24-channel values run in 8-channel
// blocks, so the whole chain is one region with transforms only at its ends, and
// the 3-channel input is read NCHW by the first conv (no transform at all).
TEST(LayoutTransformationTest, NarrowerBlocksKeepChannelsThePreferredBlockDoesNotDivide) {
  Graph g;
  g.AddInput("x", F32({1, 3, 8, 8}));
  g.AddConstant("w0", RandomTensor({32, 3, 3, 3}, 31, -0.2, 0.2));
  g.AddConstant("w1", RandomTensor({24, 32, 1, 1}, 32, -0.2, 0.2));
  g.AddConstant("w2", RandomTensor({24, 24, 1, 1}, 33, -0.2, 0.2));
  g.AddConstant("w3", RandomTensor({32, 24, 1, 1}, 34, -0.2, 0.2));
  g.AddConstant("dw", RandomTensor({32, 1, 3, 3}, 35, -0.2, 0.2));
  std::vector<std::pair<std::string, Attribute>> pads{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  Add(&g, "Conv", "stem", {"x", "w0"}, {"s"}, pads);
  Add(&g, "Conv", "project", {"s", "w1"}, {"p"});
  Add(&g, "Conv", "mix", {"p", "w2"}, {"m"});
  Add(&g, "Add", "residual", {"m", "p"}, {"r"});
  Add(&g, "Conv", "expand", {"r", "w3"}, {"e"});
  Add(&g, "Conv", "depthwise", {"e", "dw"}, {"y"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"group", int64_t{32}}});
  g = Finish(g, {"y"});
  Graph blocked = TransformLayout(g, 16);
  EXPECT_EQ(Count(blocked, "LayoutTransform"), 1) << PrintGraph(blocked);  // only the exit to NCHW
  EXPECT_EQ(blocked.TypeOf("p_NCHW8c").shape, (Shape{1, 3, 8, 8, 8}));
  EXPECT_EQ(blocked.TypeOf("r_NCHW8c").shape, (Shape{1, 3, 8, 8, 8}));
  EXPECT_EQ(blocked.TypeOf("y_NCHW16c").shape, (Shape{1, 2, 8, 8, 16}));
  EXPECT_LT(Difference(g, blocked, {{"x", RandomTensor({1, 3, 8, 8}, 36)}}), 1e-5);
}

// Inception's branch concat: blocked inputs in one block concatenate along the
// channel-chunk axis inside the region (also with a negative axis); inputs in
// different blocks leave the region.
TEST(LayoutTransformationTest, ChannelConcatsOfBlockedBranchesStayBlocked) {
  for (int64_t axis : {1, -3}) {
    Graph g;
    g.AddInput("x", F32({1, 16, 5, 5}));
    g.AddConstant("wa", RandomTensor({16, 16, 1, 1}, 43, -0.3, 0.3));
    g.AddConstant("wb", RandomTensor({32, 16, 3, 3}, 44, -0.3, 0.3));
    g.AddConstant("wc", RandomTensor({16, 48, 1, 1}, 45, -0.3, 0.3));
    Add(&g, "Conv", "a", {"x", "wa"}, {"ya"});
    Add(&g, "Conv", "b", {"x", "wb"}, {"yb"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    Add(&g, "Concat", "cat", {"ya", "yb"}, {"cat"}, {{"axis", axis}});
    Add(&g, "Conv", "c", {"cat", "wc"}, {"y"});
    g = Finish(g, {"y"});
    Graph blocked = TransformLayout(g, 16);
    EXPECT_EQ(Count(blocked, "LayoutTransform"), 2) << PrintGraph(blocked);  // x in, y out
    EXPECT_EQ(blocked.TypeOf("cat_NCHW16c").shape, (Shape{1, 3, 5, 5, 16}));
    EXPECT_LT(Difference(g, blocked, {{"x", RandomTensor({1, 16, 5, 5}, 46)}}), 1e-5);
  }
}

TEST(DeadCodeEliminationTest, RemovesUnusedNodesAndConstants) {
  Graph g;
  g.AddInput("x", F32({3}));
  g.AddConstant("unused", RandomTensor({3}, 25));
  Add(&g, "Exp", "dead", {"x"}, {"d"});
  Add(&g, "Add", "dead2", {"d", "unused"}, {"e"});
  Add(&g, "Relu", "live", {"x"}, {"y"});
  g = Finish(g, {"y"});
  Graph clean = EliminateDeadCode(g);
  EXPECT_EQ(Ops(clean), (std::vector<std::string>{"Relu"}));
  EXPECT_FALSE(clean.HasValue("unused"));
}

TEST(GraphMemoryPlanTest, ReusesBuffersWhoseLifetimesDoNotOverlap) {
  Graph g;
  g.AddInput("x", F32({1, 1024}));
  Add(&g, "Relu", "n0", {"x"}, {"a"});
  Add(&g, "Exp", "n1", {"a"}, {"b"});
  Add(&g, "Neg", "n2", {"b"}, {"c"});
  Add(&g, "Tanh", "n3", {"c"}, {"y"});
  g = Finish(g, {"y"});
  Graph planned = PlanGraphMemory(g);
  const MemoryPlan& plan = planned.memory_plan;
  ASSERT_EQ(plan.buffers.size(), 3u);  // a, b, c; y is a graph output
  EXPECT_EQ(plan.total_intermediate_bytes, 3 * 4096);
  EXPECT_EQ(plan.arena_bytes, 2 * 4096);  // a and c share
  EXPECT_EQ(plan.buffers[0].offset, plan.buffers[2].offset);
}

// A chain of equal-sized tensors named so that largest-first placement in name order takes a
// third slot (a, b are placed first, apart in time, in one slot; c overlaps a, d overlaps c and
// b); min-peak tries placements in order of first use too and needs the two any chain needs.
TEST(GraphMemoryPlanTest, MinPeakPlacesAChainInTwoSlots) {
  Graph g;
  g.AddInput("x", F32({1, 1024}));
  Add(&g, "Relu", "n0", {"x"}, {"a"});
  Add(&g, "Neg", "n1", {"a"}, {"c"});
  Add(&g, "Tanh", "n2", {"c"}, {"d"});
  Add(&g, "Relu", "n3", {"d"}, {"b"});
  Add(&g, "Neg", "n4", {"b"}, {"y"});
  g = Finish(g, {"y"});
  Graph greedy = PlanGraphMemory(g);
  Graph min_peak = PlanGraphMemory(g, MemoryPlanPolicy::kMinPeak);
  EXPECT_EQ(greedy.memory_plan.arena_bytes, 3 * 4096);
  EXPECT_EQ(min_peak.memory_plan.arena_bytes, 2 * 4096);
  EXPECT_EQ(ArenaLowerBound(min_peak.memory_plan), 2 * 4096);
  EXPECT_EQ(min_peak.memory_plan.total_intermediate_bytes, 4 * 4096);
  const auto& buffers = min_peak.memory_plan.buffers;
  for (size_t i = 0; i < buffers.size(); ++i) {
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      const BufferAssignment &p = buffers[i], &q = buffers[j];
      bool live_together = p.first_step <= q.last_step && q.first_step <= p.last_step;
      EXPECT_FALSE(live_together && p.offset == q.offset) << p.value << " and " << q.value;
    }
  }
}

TEST(GraphMemoryPlanTest, LiveBuffersNeverOverlapAndFusedValuesNeedNoMemory) {
  PipelineOptions options;
  options.fusion = fusion::FusionPolicy::kNone;
  Graph unfused = BuildPipeline(options).Run(ResidualNet());
  options.fusion = fusion::FusionPolicy::kRule;
  Graph fused = BuildPipeline(options).Run(ResidualNet());
  for (const Graph* g : {&unfused, &fused}) {
    const auto& buffers = g->memory_plan.buffers;
    for (size_t i = 0; i < buffers.size(); ++i) {
      for (size_t j = i + 1; j < buffers.size(); ++j) {
        const BufferAssignment &a = buffers[i], &b = buffers[j];
        bool live_together = a.first_step <= b.last_step && b.first_step <= a.last_step;
        bool share_bytes = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
        EXPECT_FALSE(live_together && share_bytes) << a.value << " and " << b.value;
      }
    }
    EXPECT_LE(g->memory_plan.arena_bytes, g->memory_plan.total_intermediate_bytes);
  }
  EXPECT_LT(fused.memory_plan.buffers.size(), unfused.memory_plan.buffers.size());
}

TEST(PipelineTest, EveryConfigurationComputesTheSameResult) {
  Graph g = ResidualNet();
  std::map<std::string, Tensor> inputs{{"x", RandomTensor({1, 8, 5, 5}, 26)}};
  for (int64_t block : {0, 4}) {
    for (auto policy : {fusion::FusionPolicy::kRule, fusion::FusionPolicy::kNone, fusion::FusionPolicy::kAll}) {
      PipelineOptions options;
      options.fusion = policy;
      options.layout_block = block;
      PassManager pm = BuildPipeline(options);
      Graph compiled = pm.Run(g);
      EXPECT_FALSE(compiled.groups.empty());
      EXPECT_TRUE(compiled.memory_plan.planned);
      EXPECT_LT(Difference(g, compiled, inputs), 1e-5) << "block " << block;
      EXPECT_EQ(pm.timings().size(), pm.passes().size());
    }
  }
}

}  // namespace
}  // namespace graph
}  // namespace agate
