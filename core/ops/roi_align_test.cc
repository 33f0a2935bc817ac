// RoiAlign's compiled kernel (roi_align.h) on the loop-IR evaluator and as LLVM host code against
// the reference interpreter: avg and max modes, half_pixel and output_half_pixel, a fixed and an
// adaptive sample grid (sampling_ratio 0: the grid follows each region's size), regions partly or
// wholly outside the image, a degenerate one, float64; a batch index outside the batch fails the
// kernel naming the node; cuda is refused by name.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

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

const ir::DType kF32 = ir::DType::Float(32);
const ir::DType kI64 = ir::DType::Int(64);

struct Settings {
  std::string mode = "avg";
  std::string transform = "half_pixel";
  int64_t ratio = 2;
  double scale = 1.0;
  ir::DType dtype = kF32;
};

// x [2, 3, 10, 12], four regions (one degenerate, one partly and one wholly outside the image).
const std::vector<double> kRois = {0, 0, 9, 9, /**/ 1.5, 2.25, 7.5, 6, /**/ -3, 4, 14, 13, /**/ 6, 5, 4, 5};
const std::vector<int64_t> kBatchIndices = {0, 1, 1, 0};

Graph RoiAlignOf(const Settings& s) {
  Graph g;
  g.AddInput("x", TensorType{s.dtype, {2, 3, 10, 12}});
  g.AddInput("rois", TensorType{s.dtype, {4, 4}});
  g.AddInput("batch_indices", TensorType{kI64, {4}});
  Add(&g, "RoiAlign", "roi_align", {"x", "rois", "batch_indices"}, {"out"},
      {{"mode", Attribute(s.mode)},
       {"coordinate_transformation_mode", Attribute(s.transform)},
       {"sampling_ratio", Attribute(s.ratio)},
       {"spatial_scale", Attribute(s.scale)},
       {"output_height", Attribute(int64_t{3})},
       {"output_width", Attribute(int64_t{4})}});
  return Finish(g, {"out"});
}

std::map<std::string, graph::Tensor> Regions(ir::DType dtype, const std::vector<int64_t>& batch_indices) {
  return {{"rois", graph::Tensor::FromDoubles(dtype, {4, 4}, kRois)},
          {"batch_indices", graph::Tensor::FromInts(kI64, {4}, batch_indices)}};
}

TEST(RoiAlignTest, MatchesTheReferenceOnEveryBackend) {
  struct Case {
    std::string name;
    Settings settings;
  };
  std::vector<Case> cases = {{"avg, half_pixel, 2x2 samples", {}}};
  cases.push_back({"avg, output_half_pixel, adaptive grid, scale 0.5", {"avg", "output_half_pixel", 0, 0.5}});
  cases.push_back({"max, half_pixel, adaptive grid", {"max", "half_pixel", 0, 1.0}});
  cases.push_back({"max, output_half_pixel, 3x3 samples", {"max", "output_half_pixel", 3, 1.0}});
  cases.push_back({"float64, avg, adaptive grid, scale 1.5", {"avg", "half_pixel", 0, 1.5, ir::DType::Float(64)}});
  for (const Case& c : cases) {
    testing::CheckOptions options;
    options.tolerance = 1e-6;
    options.inputs = Regions(c.settings.dtype, kBatchIndices);
    EXPECT_TRUE(testing::CheckAgainstReference(RoiAlignOf(c.settings), options)) << c.name;
  }
}

// Batch indices arrive when the model runs: one outside [0, 2) fails the kernel before it writes,
// on both backends, as the reference refuses it; cuda is refused by name.
TEST(RoiAlignTest, ABatchIndexOutsideTheBatchFailsTheKernel) {
  Graph g = RoiAlignOf({});
  std::map<std::string, graph::Tensor> inputs = Regions(kF32, {0, 1, 2, 0});
  inputs["x"] = testing::RandomInputs(g, 1).at("x");
  testing::ExpectRunTimeOperandRefused(g, inputs, "'roi_align'", StatusCode::kOutOfRange);
  Graph fused = testing::Fuse(g);
  try {
    LowerGroup(fused, fused.groups.at(0), target::Target::Parse("cuda -arch=sm_80"), "roi_align_kernel");
    ADD_FAILURE() << "lowered for cuda";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("RoiAlign 'roi_align'"), std::string::npos) << e.what();
  }
}

// An empty image has no pixel for a sample near its origin to read: refused by name, not read.
TEST(RoiAlignTest, AnEmptyImageIsRefused) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, 1, 0, 4}});
  g.AddInput("rois", TensorType{kF32, {1, 4}});
  g.AddInput("batch_indices", TensorType{kI64, {1}});
  try {
    Add(&g, "RoiAlign", "roi_align", {"x", "rois", "batch_indices"}, {"out"}, {});
    Graph fused = testing::Fuse(Finish(g, {"out"}));
    LowerGroup(fused, fused.groups.at(0), target::Target::Parse("llvm"), "roi_align_kernel");
    ADD_FAILURE() << "lowered";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("RoiAlign 'roi_align': RoiAlign of an empty image"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ops
}  // namespace agate
