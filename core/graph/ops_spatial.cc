// Spatial sampling: RoiAlign, GridSample and MaxUnpool.
#include <algorithm>

#include "core/graph/op_registry.h"
#include "core/graph/shape_rules.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

using Types = std::vector<TensorType>;

Types MaxUnpoolInfer(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  AGATE_REQUIRE(ctx.input(1).shape == x.shape, kInvalidArgument) << Where(ctx) << ": indices must match X";
  std::vector<int64_t> output_shape = ctx.attrs().GetInts("output_shape", {});
  if (!output_shape.empty()) return {TensorType{x.dtype, output_shape}};
  std::vector<int64_t> kernel = ctx.attrs().GetInts("kernel_shape");
  size_t n = kernel.size();
  std::vector<int64_t> strides = ctx.attrs().GetInts("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = ctx.attrs().GetInts("pads", std::vector<int64_t>(2 * n, 0));
  AGATE_REQUIRE(x.rank() == static_cast<int>(n) + 2 && strides.size() == n && pads.size() == 2 * n, kInvalidArgument)
      << Where(ctx) << ": kernel_shape, strides and pads disagree with the input rank";
  Shape out{x.shape[0], x.shape[1]};
  for (size_t i = 0; i < n; ++i) out.push_back((x.shape[i + 2] - 1) * strides[i] - pads[i] - pads[i + n] + kernel[i]);
  return {TensorType{x.dtype, out}};
}

Types GridSampleInfer(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const TensorType& grid = ctx.input(1);
  AGATE_REQUIRE(x.rank() == 4 && grid.rank() == 4 && grid.shape[0] == x.shape[0] && grid.shape[3] == 2,
                kInvalidArgument)
      << Where(ctx) << ": expects X [N,C,H,W] and grid [N,Ho,Wo,2], got " << x.ToString() << " and "
      << grid.ToString();
  return {TensorType{x.dtype, {x.shape[0], x.shape[1], grid.shape[1], grid.shape[2]}}};
}

std::string GridSampleCheck(const Node& node) {
  std::string mode = node.attrs.GetString("mode", "bilinear");
  std::string padding = node.attrs.GetString("padding_mode", "zeros");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") return "mode=" + mode;
  if (padding != "zeros" && padding != "border" && padding != "reflection") return "padding_mode=" + padding;
  return "";
}

Types RoiAlignInfer(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const TensorType& rois = ctx.input(1);
  AGATE_REQUIRE(x.rank() == 4 && rois.rank() == 2 && rois.shape[1] == 4 && ctx.input(2).shape == Shape{rois.shape[0]},
                kInvalidArgument)
      << Where(ctx) << ": expects X [N,C,H,W], rois [R,4] and batch_indices [R]";
  return {TensorType{x.dtype, {rois.shape[0], x.shape[1], ctx.attrs().GetInt("output_height", 1),
                               ctx.attrs().GetInt("output_width", 1)}}};
}

}  // namespace

void RegisterSpatialOps(OpRegistry* r) {
  OpDef roi_align = Def("RoiAlign", OpKind::kOpaque, 3, 3,
                        {"coordinate_transformation_mode", "mode", "output_height", "output_width", "sampling_ratio",
                         "spatial_scale"},
                        RoiAlignInfer);
  roi_align.check = [](const Node& node) -> std::string {
    std::string mode = node.attrs.GetString("mode", "avg");
    std::string ct = node.attrs.GetString("coordinate_transformation_mode", "half_pixel");
    if (mode != "avg" && mode != "max") return "mode=" + mode;
    if (ct != "half_pixel" && ct != "output_half_pixel") return "coordinate_transformation_mode=" + ct;
    return "";
  };
  r->Register(roi_align);
  OpDef grid_sample = Def("GridSample", OpKind::kOpaque, 2, 2, {"align_corners", "mode", "padding_mode"},
                          GridSampleInfer);
  grid_sample.check = GridSampleCheck;
  r->Register(grid_sample);
  r->Register(Def("MaxUnpool", OpKind::kOpaque, 2, 2, {"kernel_shape", "strides", "pads", "output_shape"},
                  MaxUnpoolInfer, {{2, "output_shape"}}));
}

}  // namespace graph
}  // namespace agate
