// DeformConv through LowerGroup (loop-IR interpreter and LLVM) against the
// reference interpreter, with offsets that push taps outside the image, and its
// shape checks.
#include <gtest/gtest.h>

#include "core/graph/testing/graph_builder.h"
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

const ir::DType kF32 = ir::DType::Float(32);

struct Case {
  graph::Shape x, w, offset;
  int64_t group = 1, offset_group = 1;
  Ints strides{1, 1}, pads{0, 0, 0, 0}, dilations{1, 1};
  bool bias = false, mask = false;
};

Graph DeformConvGraph(const Case& c) {
  Graph g;
  g.AddInput("x", TensorType{kF32, c.x});
  g.AddInput("w", TensorType{kF32, c.w});
  g.AddInput("offset", TensorType{kF32, c.offset});
  std::vector<std::string> inputs{"x", "w", "offset"};
  if (c.bias || c.mask) {
    g.AddInput("b", TensorType{kF32, {c.w[0]}});
    inputs.push_back("b");
  }
  if (c.mask) {
    graph::Shape mask = c.offset;
    mask[1] /= 2;
    g.AddInput("mask", TensorType{kF32, mask});
    inputs.push_back("mask");
  }
  Add(&g, "DeformConv", "deform", inputs, {"y"},
      {{"group", Attribute(c.group)}, {"offset_group", Attribute(c.offset_group)}, {"strides", Attribute(c.strides)},
       {"pads", Attribute(c.pads)}, {"dilations", Attribute(c.dilations)}});
  return Finish(g, {"y"});
}

// Offsets of up to 3 pixels either way: many taps fall partly or wholly outside.
CheckOptions Offsets(const Case& c, uint32_t seed, bool eval) {
  CheckOptions options;
  options.eval = eval;
  options.seed = seed;
  options.inputs = {{"offset", RandomTensor(c.offset, seed, -3, 3)}};
  return options;
}

TEST(DeformConvTest, Plain3x3) {
  Case c;
  c.x = {1, 2, 5, 6};
  c.w = {3, 2, 3, 3};
  c.offset = {1, 18, 5, 6};
  c.pads = {1, 1, 1, 1};
  EXPECT_TRUE(CheckAgainstReference(DeformConvGraph(c), Offsets(c, 3, true)));
}

TEST(DeformConvTest, GroupsOffsetGroupsMaskBiasStridesDilations) {
  Case c;
  c.x = {2, 4, 7, 9};
  c.w = {6, 2, 3, 2};
  c.group = 2;
  c.offset_group = 2;
  c.strides = {2, 1};
  c.pads = {1, 0, 1, 0};
  c.dilations = {1, 2};
  // oH = (7 + 2 - 3) / 2 + 1 = 4, oW = (9 - 3) + 1 = 7.
  c.offset = {2, 2 * 2 * 6, 4, 7};
  c.bias = true;
  c.mask = true;
  EXPECT_TRUE(CheckAgainstReference(DeformConvGraph(c), Offsets(c, 5, false)));
  c.mask = false;  // bias alone
  EXPECT_TRUE(CheckAgainstReference(DeformConvGraph(c), Offsets(c, 6, false)));
}

// The cuda target: the kernels' loop IR on the evaluator with GPU semantics (and NVRTC when installed).
TEST(DeformConvTest, Cuda) {
  Case c;
  c.x = {1, 4, 3, 4};
  c.w = {2, 2, 2, 2};
  c.offset = {1, 2 * 2 * 4, 4, 5};  // oH = 3 + 2 - 2 + 1, oW = 4 + 2 - 2 + 1
  c.group = 2;
  c.offset_group = 2;
  c.pads = {1, 1, 1, 1};
  c.bias = true;
  c.mask = true;
  CheckOptions options = Offsets(c, 8, false);
  options.llvm = false;
  options.cuda_target = "cuda -arch=sm_80";
  EXPECT_TRUE(CheckAgainstReference(DeformConvGraph(c), options));
}

std::string DeformError(const Case& c) {
  try {
    DeformConvGraph(c);
  } catch (const Error& e) {
    return e.message();
  }
  return "accepted";
}

TEST(DeformConvTest, BadShapesNameNodeOperandAndShape) {
  Case c;
  c.x = {1, 2, 5, 6};
  c.w = {3, 2, 3, 3};
  c.offset = {1, 16, 3, 4};  // 18 channels expected
  std::string m = DeformError(c);
  EXPECT_NE(m.find("'deform'"), std::string::npos) << m;
  EXPECT_NE(m.find("offset must be [1,18,3,4]"), std::string::npos) << m;
  EXPECT_NE(m.find("float32[1,16,3,4]"), std::string::npos) << m;
  c.offset = {1, 18, 3, 4};
  c.offset_group = 3;
  m = DeformError(c);
  EXPECT_NE(m.find("offset_group=3 does not divide X's 2 channels"), std::string::npos) << m;
  c.offset_group = 1;
  c.w = {3, 3, 3, 3};
  m = DeformError(c);
  EXPECT_NE(m.find("has 2 channels but W float32[3,3,3,3] with group=1 expects 3"), std::string::npos) << m;
}

}  // namespace
}  // namespace ops
}  // namespace agate
