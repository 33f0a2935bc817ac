// GridSample through LowerGroup (loop-IR interpreter and LLVM) against the
// reference interpreter: every mode, padding and align_corners, 1-D to 3-D
// sampling, grids that reach well outside [-1, 1], and the shape checks.
#include <gtest/gtest.h>

#include "core/graph/testing/graph_builder.h"
#include "core/ir/printer.h"
#include "core/ops/lower_group.h"
#include "core/ops/schedule_common.h"
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

const ir::DType kF32 = ir::DType::Float(32);

Graph GridSampleGraph(graph::Shape x, graph::Shape grid, const std::string& mode, const std::string& padding,
                      int64_t align) {
  Graph g;
  g.AddInput("x", TensorType{kF32, x});
  g.AddInput("grid", TensorType{kF32, grid});
  Add(&g, "GridSample", "sample", {"x", "grid"}, {"y"},
      {{"mode", Attribute(mode)}, {"padding_mode", Attribute(padding)}, {"align_corners", Attribute(align)}});
  return Finish(g, {"y"});
}

// Grid values in [-1.6, 1.6): a fifth of the points fall outside the image.
CheckOptions Inputs(const graph::Shape& x, const graph::Shape& grid, uint32_t seed, bool eval) {
  CheckOptions options;
  options.eval = eval;
  options.inputs = {{"x", RandomTensor(x, seed)}, {"grid", RandomTensor(grid, seed + 1, -1.6, 1.6)}};
  return options;
}

TEST(GridSampleTest, EveryMode2D) {
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    for (const char* padding : {"zeros", "border", "reflection"}) {
      for (int64_t align : {0, 1}) {
        // 9 output columns: a vector body and a tail; the LLVM run takes the vectorized path (the
        // slow loop-IR interpreter runs one padding per mode).
        EXPECT_TRUE(CheckAgainstReference(GridSampleGraph({2, 3, 5, 7}, {2, 4, 9, 2}, mode, padding, align),
                                          Inputs({2, 3, 5, 7}, {2, 4, 9, 2}, 3, align == 0 && padding[0] == 'r')))
            << mode << " " << padding << " align_corners=" << align;
      }
    }
  }
}

// The kernel computes a vector of output columns at a time: its reads of the grid and the input
// are vector gathers (ramp indices), not a scalar loop.
TEST(GridSampleTest, WideOutputIsVectorized) {
  Graph g = GridSampleGraph({1, 4, 12, 16}, {1, 8, 32, 2}, "bilinear", "zeros", 0);
  EXPECT_TRUE(CheckAgainstReference(g, Inputs({1, 4, 12, 16}, {1, 8, 32, 2}, 5, false)));
  if (VectorLanes(target::Target::Host(), kF32) < 2) GTEST_SKIP() << "the host has no SIMD lanes";
  Graph fused = testing::Fuse(g);
  GroupKernel k = LowerGroup(fused, fused.groups[0], target::Target::Host(), "grid_sample");
  std::string text = ir::ToString(k.func);
  EXPECT_NE(text.find("ramp("), std::string::npos) << text.substr(0, 4000);
}

TEST(GridSampleTest, OneAndThreeSpatialAxes) {
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    for (const char* padding : {"zeros", "border", "reflection"}) {
      EXPECT_TRUE(CheckAgainstReference(GridSampleGraph({1, 2, 6}, {1, 5, 1}, mode, padding, 0),
                                        Inputs({1, 2, 6}, {1, 5, 1}, 7, false)))
          << "1-D " << mode << " " << padding;
      EXPECT_TRUE(CheckAgainstReference(GridSampleGraph({1, 2, 3, 4, 5}, {1, 2, 2, 3, 3}, mode, padding, 1),
                                        Inputs({1, 2, 3, 4, 5}, {1, 2, 2, 3, 3}, 9, false)))
          << "3-D " << mode << " " << padding;
    }
  }
}

// The cuda target: the kernel's loop IR on the evaluator with GPU semantics (and NVRTC when installed).
TEST(GridSampleTest, Cuda) {
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    CheckOptions options = Inputs({1, 2, 3, 4}, {1, 2, 4, 2}, 13, false);
    options.llvm = false;
    options.cuda_target = "cuda -arch=sm_80";
    EXPECT_TRUE(CheckAgainstReference(GridSampleGraph({1, 2, 3, 4}, {1, 2, 4, 2}, mode, "reflection", 0), options))
        << mode;
  }
}

// Single-pixel axes make reflection degenerate (every coordinate reflects to 0).
TEST(GridSampleTest, SinglePixelAxes) {
  for (int64_t align : {0, 1}) {
    EXPECT_TRUE(CheckAgainstReference(GridSampleGraph({1, 1, 1, 3}, {1, 2, 4, 2}, "bilinear", "reflection", align),
                                      Inputs({1, 1, 1, 3}, {1, 2, 4, 2}, 11, false)));
  }
}

std::string ShapeError(graph::Shape x, graph::Shape grid) {
  try {
    GridSampleGraph(x, grid, "bilinear", "zeros", 0);
  } catch (const Error& e) {
    return e.message();
  }
  return "accepted";
}

TEST(GridSampleTest, BadShapesNameNodeOperandAndShape) {
  std::string m = ShapeError({1, 1, 4, 4}, {1, 3, 3});
  EXPECT_NE(m.find("'sample'"), std::string::npos) << m;
  EXPECT_NE(m.find("grid must have X's rank 4"), std::string::npos) << m;
  EXPECT_NE(m.find("float32[1,3,3]"), std::string::npos) << m;
  m = ShapeError({1, 1, 4, 4}, {1, 3, 3, 3});
  EXPECT_NE(m.find("must hold 2 coordinates"), std::string::npos) << m;
  m = ShapeError({2, 1, 4, 4}, {1, 3, 3, 2});
  EXPECT_NE(m.find("grid batch 1 differs from X's 2"), std::string::npos) << m;
  m = ShapeError({4, 4}, {4, 2});
  EXPECT_NE(m.find("input X must be [N, C, D1, ...]"), std::string::npos) << m;
}

}  // namespace
}  // namespace ops
}  // namespace agate
