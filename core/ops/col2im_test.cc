// Col2Im and AffineGrid through LowerGroup (loop-IR interpreter and LLVM) against
// the reference interpreter, and their shape checks.
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
using testing::CheckAgainstReference;
using Ints = std::vector<int64_t>;

const ir::DType kF32 = ir::DType::Float(32);

Graph Col2ImGraph(graph::Shape x, Ints image, Ints block, Ints dilations, Ints pads, Ints strides) {
  Graph g;
  g.AddInput("x", TensorType{kF32, x});
  Add(&g, "Col2Im", "fold", {"x"}, {"y"},
      {{"image_shape", Attribute(image)}, {"block_shape", Attribute(block)}, {"dilations", Attribute(dilations)},
       {"pads", Attribute(pads)}, {"strides", Attribute(strides)}});
  return Finish(g, {"y"});
}

TEST(Col2ImTest, MatchesReference) {
  // 5x6 image, 2x3 blocks, stride 1: 4x4 blocks.
  EXPECT_TRUE(CheckAgainstReference(Col2ImGraph({2, 3 * 6, 16}, {5, 6}, {2, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1})));
  // Padding, dilation and stride: 9x8 image, 3x2 blocks, dilation (2, 1), pads (1, 2, 1, 2), strides (2, 3): 4x4.
  EXPECT_TRUE(CheckAgainstReference(Col2ImGraph({1, 2 * 6, 16}, {9, 8}, {3, 2}, {2, 1}, {1, 2, 1, 2}, {2, 3})));
  // One spatial axis and three.
  EXPECT_TRUE(CheckAgainstReference(Col2ImGraph({1, 2 * 3, 6}, {8}, {3}, {1}, {0, 0}, {1})));
  EXPECT_TRUE(CheckAgainstReference(Col2ImGraph({1, 8, 2 * 3 * 2}, {3, 4, 3}, {2, 2, 2}, {1, 1, 1}, {0, 0, 0, 0, 0, 0},
                                                {1, 1, 1})));
}

std::string Col2ImError(graph::Shape x, Ints image, Ints block) {
  try {
    Col2ImGraph(x, image, block, Ints(image.size(), 1), Ints(2 * image.size(), 0), Ints(image.size(), 1));
  } catch (const Error& e) {
    return e.message();
  }
  return "accepted";
}

TEST(Col2ImTest, BadShapesAreRefused) {
  std::string m = Col2ImError({1, 7, 16}, {5, 6}, {2, 3});
  EXPECT_NE(m.find("'fold'"), std::string::npos) << m;
  EXPECT_NE(m.find("7 channels, not a multiple of prod(block_shape [2,3]) = 6"), std::string::npos) << m;
  m = Col2ImError({1, 6, 15}, {5, 6}, {2, 3});
  EXPECT_NE(m.find("has 15 blocks but image_shape [5,6] with block_shape [2,3] gives 16"), std::string::npos) << m;
  m = Col2ImError({1, 6, 16}, {5}, {2, 3});
  EXPECT_NE(m.find("must list the same number"), std::string::npos) << m;
  m = Col2ImError({1, 6, 1}, {2, 2}, {3, 2});
  EXPECT_NE(m.find("exceeds the padded image extent 2 on axis 0"), std::string::npos) << m;
}

// The cuda target: the kernels' loop IR on the evaluator with GPU semantics (and NVRTC when installed).
TEST(Col2ImTest, Cuda) {
  testing::CheckOptions options;
  options.eval = false;
  options.llvm = false;
  options.cuda_target = "cuda -arch=sm_80";
  EXPECT_TRUE(CheckAgainstReference(Col2ImGraph({1, 2 * 6, 16}, {9, 8}, {3, 2}, {2, 1}, {1, 2, 1, 2}, {2, 3}), options));
}

Graph AffineGridGraph(graph::Shape theta, Ints size, int64_t align) {
  Graph g;
  g.AddInput("theta", TensorType{kF32, theta});
  Add(&g, "AffineGrid", "affine", {"theta"}, {"grid"}, {{"size", Attribute(size)}, {"align_corners", Attribute(align)}});
  return Finish(g, {"grid"});
}

TEST(AffineGridTest, MatchesReference) {
  for (int64_t align : {0, 1}) {
    EXPECT_TRUE(CheckAgainstReference(AffineGridGraph({2, 2, 3}, {2, 3, 5, 17}, align)));
    EXPECT_TRUE(CheckAgainstReference(AffineGridGraph({1, 3, 4}, {1, 1, 3, 1, 6}, align)));
  }
}

TEST(AffineGridTest, Cuda) {
  testing::CheckOptions options;
  options.eval = false;
  options.llvm = false;
  options.cuda_target = "cuda -arch=sm_80";
  EXPECT_TRUE(CheckAgainstReference(AffineGridGraph({2, 2, 3}, {2, 3, 5, 17}, 1), options));
}

TEST(AffineGridTest, BadShapesAreRefused) {
  try {
    AffineGridGraph({2, 2, 3}, {2, 3, 4, 5, 6}, 0);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    std::string m = e.message();
    EXPECT_NE(m.find("'affine'"), std::string::npos) << m;
    EXPECT_NE(m.find("theta must be [N, 3, 4] = [2, 3, 4] for size [2,3,4,5,6], got theta float32[2,2,3]"),
              std::string::npos)
        << m;
  }
}

}  // namespace
}  // namespace ops
}  // namespace agate
