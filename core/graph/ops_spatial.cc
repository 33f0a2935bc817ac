// Spatial sampling: RoiAlign, GridSample, AffineGrid, Col2Im, DeformConv and MaxUnpool.
#include <algorithm>

#include "core/graph/op_registry.h"
#include "core/graph/run_time_shape_operand.h"
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

// GridSample-16 samples 2-D images; GridSample-20 any spatial rank k >= 1: X [N, C, D1..Dk] and
// grid [N, O1..Ok, k] (the last axis lists coordinates innermost spatial axis first: x, y, z).
Types GridSampleInfer(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const TensorType& grid = ctx.input(1);
  AGATE_REQUIRE(x.rank() >= 3, kInvalidArgument)
      << Where(ctx) << ": input X must be [N, C, D1, ...] (rank 3 or more), got " << x.ToString();
  int k = x.rank() - 2;
  AGATE_REQUIRE(grid.rank() == x.rank(), kInvalidArgument)
      << Where(ctx) << ": grid must have X's rank " << x.rank() << " ([N, O1.." << "O" << k << ", " << k
      << "]), got grid " << grid.ToString() << " for X " << x.ToString();
  AGATE_REQUIRE(grid.shape[0] == x.shape[0], kInvalidArgument)
      << Where(ctx) << ": grid batch " << grid.shape[0] << " differs from X's " << x.shape[0] << " (grid "
      << grid.ToString() << ", X " << x.ToString() << ")";
  AGATE_REQUIRE(grid.shape.back() == k, kInvalidArgument)
      << Where(ctx) << ": grid's last axis must hold " << k << " coordinates for " << k << " spatial axes, got grid "
      << grid.ToString() << " for X " << x.ToString();
  AGATE_REQUIRE(x.dtype.is_float() && grid.dtype.is_float(), kInvalidArgument)
      << Where(ctx) << ": X and grid must be floating point, got X " << x.ToString() << " and grid "
      << grid.ToString();
  Shape out{x.shape[0], x.shape[1]};
  for (int d = 0; d < k; ++d) out.push_back(grid.shape[1 + d]);
  return {TensorType{x.dtype, out}};
}

// Mode names of both forms (the importer maps GridSample-20's linear/cubic to bilinear/bicubic).
std::string GridSampleCheck(const Node& node) {
  std::string mode = node.attrs.GetString("mode", "bilinear");
  std::string padding = node.attrs.GetString("padding_mode", "zeros");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") return "mode=" + mode;
  if (padding != "zeros" && padding != "border" && padding != "reflection") return "padding_mode=" + padding;
  int64_t align = node.attrs.GetInt("align_corners", 0);
  if (align != 0 && align != 1) return "align_corners=" + std::to_string(align);
  return "";
}

// AffineGrid-20: theta [N, k, k + 1] (k = 2 or 3) and the constant size [N, C, D1..Dk] give the
// sampling grid [N, D1..Dk, k] that GridSample reads.
Types AffineGridInfer(const InferContext& ctx) {
  const TensorType& theta = ctx.input(0);
  std::vector<int64_t> size = ctx.attrs().GetInts("size");
  AGATE_REQUIRE(size.size() == 4 || size.size() == 5, kInvalidArgument)
      << Where(ctx) << ": size must list [N, C, H, W] or [N, C, D, H, W], got " << ShapeToString(size);
  for (int64_t d : size) {
    AGATE_REQUIRE(d > 0, kInvalidArgument) << Where(ctx) << ": size " << ShapeToString(size) << " has an extent below 1";
  }
  int64_t k = static_cast<int64_t>(size.size()) - 2;
  AGATE_REQUIRE(theta.rank() == 3 && theta.shape[0] == size[0] && theta.shape[1] == k && theta.shape[2] == k + 1,
                kInvalidArgument)
      << Where(ctx) << ": theta must be [N, " << k << ", " << k + 1 << "] = [" << size[0] << ", " << k << ", " << k + 1
      << "] for size " << ShapeToString(size) << ", got theta " << theta.ToString();
  AGATE_REQUIRE(theta.dtype.is_float(), kInvalidArgument)
      << Where(ctx) << ": theta must be floating point, got " << theta.ToString();
  Shape out{size[0]};
  out.insert(out.end(), size.begin() + 2, size.end());
  out.push_back(k);
  return {TensorType{theta.dtype, out}};
}

// Col2Im-18: input [N, C * prod(block_shape), L] with L the number of sliding blocks over the
// padded image; the constant image_shape and block_shape give the output [N, C, image_shape...].
Types Col2ImInfer(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  Col2ImSpec spec = ComputeCol2Im(ctx.node(), x.shape);
  Shape out{x.shape[0], spec.channels};
  out.insert(out.end(), spec.image.begin(), spec.image.end());
  return {TensorType{x.dtype, out}};
}

// DeformConv-19 (2-D): X [N, C, H, W], W [oC, C / group, kH, kW], offset
// [N, offset_group * 2 * kH * kW, oH, oW], optional B [oC] and mask [N, offset_group * kH * kW, oH, oW].
Types DeformConvInfer(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const TensorType& w = ctx.input(1);
  const TensorType& offset = ctx.input(2);
  AGATE_REQUIRE(x.rank() == 4 && w.rank() == 4, kInvalidArgument)
      << Where(ctx) << ": X must be [N, C, H, W] and W [oC, C / group, kH, kW], got X " << x.ToString() << " and W "
      << w.ToString();
  AGATE_REQUIRE(x.dtype.is_float() && w.dtype == x.dtype && offset.dtype == x.dtype, kInvalidArgument)
      << Where(ctx) << ": X, W and offset must share one floating-point type, got X " << x.ToString() << ", W "
      << w.ToString() << " and offset " << offset.ToString();
  int64_t group = ctx.attrs().GetInt("group", 1), offset_group = ctx.attrs().GetInt("offset_group", 1);
  AGATE_REQUIRE(group > 0 && x.shape[1] % group == 0 && w.shape[0] % group == 0 && w.shape[1] * group == x.shape[1],
                kInvalidArgument)
      << Where(ctx) << ": X " << x.ToString() << " has " << x.shape[1] << " channels but W " << w.ToString()
      << " with group=" << group << " expects " << w.shape[1] * group;
  AGATE_REQUIRE(offset_group > 0 && x.shape[1] % offset_group == 0, kInvalidArgument)
      << Where(ctx) << ": offset_group=" << offset_group << " does not divide X's " << x.shape[1] << " channels (X "
      << x.ToString() << ")";
  std::vector<int64_t> kernel = ctx.attrs().GetInts("kernel_shape", {w.shape[2], w.shape[3]});
  AGATE_REQUIRE(kernel == std::vector<int64_t>({w.shape[2], w.shape[3]}), kInvalidArgument)
      << Where(ctx) << ": kernel_shape " << ShapeToString(kernel) << " disagrees with W " << w.ToString();
  WindowGeometry g = ComputeWindow(ctx.node(), x.shape, kernel);
  Shape out{x.shape[0], w.shape[0], g.out[0], g.out[1]};
  int64_t taps = kernel[0] * kernel[1];
  Shape want_offset{x.shape[0], offset_group * 2 * taps, g.out[0], g.out[1]};
  AGATE_REQUIRE(offset.shape == want_offset, kInvalidArgument)
      << Where(ctx) << ": offset must be " << ShapeToString(want_offset) << " (N, offset_group * 2 * kH * kW, oH, oW), got "
      << offset.ToString();
  if (ctx.has_input(3)) {
    AGATE_REQUIRE(ctx.input(3).shape == Shape{w.shape[0]} && ctx.input(3).dtype == x.dtype, kInvalidArgument)
        << Where(ctx) << ": bias B must be " << x.dtype.ToString() << "[" << w.shape[0] << "], got "
        << ctx.input(3).ToString();
  }
  if (ctx.has_input(4)) {
    Shape want_mask{x.shape[0], offset_group * taps, g.out[0], g.out[1]};
    AGATE_REQUIRE(ctx.input(4).shape == want_mask && ctx.input(4).dtype == x.dtype, kInvalidArgument)
        << Where(ctx) << ": mask must be " << ShapeToString(want_mask) << " (N, offset_group * kH * kW, oH, oW), got "
        << ctx.input(4).ToString();
  }
  return {TensorType{x.dtype, out}};
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
  OpDef affine_grid = Def("AffineGrid", OpKind::kOpaque, 1, 1, {"align_corners", "size"}, AffineGridInfer, {{1, "size"}});
  affine_grid.check = [](const Node& node) -> std::string {
    int64_t align = node.attrs.GetInt("align_corners", 0);
    return align == 0 || align == 1 ? "" : "align_corners=" + std::to_string(align);
  };
  r->Register(affine_grid);
  r->Register(Def("Col2Im", OpKind::kOpaque, 1, 1, {"image_shape", "block_shape", "dilations", "pads", "strides"},
                  Col2ImInfer, {{1, "image_shape"}, {2, "block_shape"}}));
  r->Register(Def("DeformConv", OpKind::kOpaque, 3, 5,
                  {"dilations", "group", "kernel_shape", "offset_group", "pads", "strides"}, DeformConvInfer));
  // A run-time output_shape (run_time_shape_operand.h) is input 2.
  r->Register(Def("MaxUnpool", OpKind::kOpaque, 2, 3, {"kernel_shape", "strides", "pads", "output_shape", kRunTimeOperandAttr},
                  MaxUnpoolInfer, {{2, "output_shape"}}));
}

}  // namespace graph
}  // namespace agate
