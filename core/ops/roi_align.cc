#include "core/ops/roi_align.h"

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/ir/function.h"
#include "core/ops/composed_kernel.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using composed::I;
using composed::Load;
using composed::Loop;
using composed::Store;
using ir::Buffer;
using ir::Expr;
using ir::Stmt;
using ir::Var;

const ir::DType kF64 = ir::DType::Float(64);
const ir::DType kI64 = ir::DType::Int(64);

Expr F(double v) { return ir::make_const(kF64, v); }

// A value clamped into [lo, hi]: the clamp makes an index computed from values provably in
// bounds (the arithmetic before it keeps it there already, except on NaN coordinates).
Expr Clamp(const Expr& v, int64_t lo, int64_t hi) { return ir::max(ir::min(v, I(hi)), I(lo)); }

// A float as an integer in [0, limit]: negative values and NaN give 0, values past the limit the
// limit (a float-to-integer conversion out of range is undefined in C and LLVM).
Expr ToIndex(const Expr& v, int64_t limit) {
  Expr top = F(static_cast<double>(limit));
  return ir::cast(kI64, ir::select(v > top, top, ir::select(v >= F(0.0), v, F(0.0))));
}

// Binds `value` to `var` around `body`.
Stmt Let(const Var& var, const Expr& value, const Stmt& body) { return ir::LetStmt::make(var, value, body); }

}  // namespace

bool IsRoiAlignOp(const std::string& op) { return op == "RoiAlign"; }

GroupKernel LowerRoiAlignGroup(const graph::Graph& graph, const graph::FusedGroup& group,
                               const target::Target& target, const std::string& kernel_name) {
  ComposedKernel built =
      BeginComposedKernel(graph, group, target, kernel_name, "sample loops whose extents are values: CPU targets only");
  const graph::Node& node = graph.nodes.at(group.nodes[0]);
  const graph::TensorType& x_type = graph.TypeOf(node.inputs[0]);
  const graph::TensorType& rois_type = graph.TypeOf(node.inputs[1]);
  AGATE_REQUIRE(x_type.dtype.is_float() && rois_type.dtype.is_float(), kUnsupported)
      << node.Describe() << ": RoiAlign of " << x_type.dtype << graph::ShapeToString(x_type.shape) << " with rois "
      << rois_type.dtype << " (floating point only)";
  const ComposedParams& params = built.params;
  AGATE_REQUIRE(params.outputs.count(0), kInternal) << node.Describe() << ": its output is not the kernel's";
  const Buffer& x = params.inputs.at(node.inputs[0]);
  const Buffer& rois = params.inputs.at(node.inputs[1]);
  const Buffer& batch_indices = params.inputs.at(node.inputs[2]);
  const Buffer& out = params.outputs.at(0);
  const ir::DType out_dtype = graph.TypeOf(node.outputs[0]).dtype;
  const graph::Shape& out_shape = graph.TypeOf(node.outputs[0]).shape;
  const int64_t batch = x_type.shape[0], channels = x_type.shape[1], h = x_type.shape[2], w = x_type.shape[3];
  const int64_t regions = out_shape[0], oh = out_shape[2], ow = out_shape[3];
  const bool half_pixel = node.attrs.GetString("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  const bool is_max = node.attrs.GetString("mode", "avg") == "max";
  const double scale = node.attrs.GetFloat("spatial_scale", 1.0);
  const int64_t ratio = node.attrs.GetInt("sampling_ratio", 0);
  AGATE_REQUIRE(ratio >= 0, kInvalidArgument) << node.Describe() << ": sampling_ratio " << ratio << " (0 or more)";
  // A sample near an empty image's origin would still read its (absent) first pixel.
  AGATE_REQUIRE(h > 0 && w > 0, kInvalidArgument)
      << node.Describe() << ": RoiAlign of an empty image " << graph::ShapeToString(x_type.shape);

  Var r("roi"), c("roi_channel"), ph("roi_bin_y"), pw("roi_bin_x"), iy("roi_sample_y"), ix("roi_sample_x");
  Var checked("roi_checked");
  Expr index_of = ir::cast(kI64, Load(batch_indices, checked));
  std::string message = node.Describe() + ": a batch index (input 2, read when the model runs) lies outside [0, " +
                        std::to_string(batch) + ")";
  Stmt check = Loop(checked, I(regions), ir::AssertStmt::make(index_of >= I(0) && index_of < I(batch), message));

  // Per region: its batch image, corners, extents, bin sizes and sample grid.
  Var n("roi_image"), x0("roi_x0", kF64), y0("roi_y0", kF64), roi_w("roi_width", kF64), roi_h("roi_height", kF64);
  Var bin_h("roi_bin_height", kF64), bin_w("roi_bin_width", kF64);
  Var grid_h("roi_grid_height"), grid_w("roi_grid_width"), count("roi_samples", kF64);
  const double offset = half_pixel ? 0.5 : 0.0;
  auto corner = [&](int k) { return ir::cast(kF64, Load(rois, Expr(r) * I(4) + I(k))) * F(scale) - F(offset); };
  Expr width = corner(2) - x0, height = corner(3) - y0;
  if (!half_pixel) {
    width = ir::max(width, F(1.0));
    height = ir::max(height, F(1.0));
  }
  auto grid = [&](const Var& extent, int64_t bins) {
    // At most 2^31 - 1 samples per axis: a larger grid (a region billions of pixels wide) would
    // not end in any time anyway, and the product of two stays inside int64.
    return ratio > 0 ? I(ratio) : ToIndex(ir::ceil(Expr(extent) / F(static_cast<double>(bins))), (int64_t{1} << 31) - 1);
  };

  // One sample: the bilinear weights of its four neighbours (clamped to the last row and column).
  Buffer acc = ir::CreateBuffer("roi_acc", kF64, {I(1)}, ir::MemoryScope::kLocal);
  Var yy("roi_y", kF64), xx("roi_x", kF64), y_low("roi_y_low"), x_low("roi_x_low"), y_high("roi_y_high"), x_high("roi_x_high");
  Var y_at("roi_y_at", kF64), x_at("roi_x_at", kF64);
  Var y_edge("roi_y_edge", ir::DType::Bool()), x_edge("roi_x_edge", ir::DType::Bool());
  Expr sample_y = Expr(y0) + ir::cast(kF64, Expr(ph)) * bin_h +
                  (ir::cast(kF64, Expr(iy)) + F(0.5)) * bin_h / ir::cast(kF64, Expr(grid_h));
  Expr sample_x = Expr(x0) + ir::cast(kF64, Expr(pw)) * bin_w +
                  (ir::cast(kF64, Expr(ix)) + F(0.5)) * bin_w / ir::cast(kF64, Expr(grid_w));
  Expr outside = Expr(yy) < F(-1.0) || Expr(yy) > F(static_cast<double>(h)) || Expr(xx) < F(-1.0) ||
                 Expr(xx) > F(static_cast<double>(w));
  auto v = [&](const Expr& row, const Expr& column) {
    return ir::cast(kF64, Load(x, ((Expr(n) * I(channels) + c) * I(h) + row) * I(w) + column));
  };
  Expr ly = Expr(y_at) - ir::cast(kF64, Expr(y_low)), lx = Expr(x_at) - ir::cast(kF64, Expr(x_low));
  Expr hy = F(1.0) - ly, hx = F(1.0) - lx;
  Expr a = hy * hx * v(y_low, x_low), b = hy * lx * v(y_low, x_high);
  Expr cc = ly * hx * v(y_high, x_low), d = ly * lx * v(y_high, x_high);
  Expr acc_value = Load(acc, I(0));
  Stmt accumulate = Store(acc, is_max ? ir::max(ir::max(ir::max(ir::max(acc_value, a), b), cc), d) : acc_value + a + b + cc + d,
                          I(0));
  // The corners: truncated coordinates (of max(coordinate, 0)), the last row or column when past it.
  Expr y_floor = ToIndex(Expr(yy), h), x_floor = ToIndex(Expr(xx), w);
  Stmt inside = Let(y_edge, y_floor >= I(h - 1), Let(x_edge, x_floor >= I(w - 1),
      Let(y_low, Clamp(ir::select(y_edge, I(h - 1), y_floor), 0, h - 1),
      Let(x_low, Clamp(ir::select(x_edge, I(w - 1), x_floor), 0, w - 1),
      Let(y_high, Clamp(ir::select(y_edge, I(h - 1), y_floor + I(1)), 0, h - 1),
      Let(x_high, Clamp(ir::select(x_edge, I(w - 1), x_floor + I(1)), 0, w - 1),
      Let(y_at, ir::select(y_edge, F(static_cast<double>(h - 1)), ir::max(Expr(yy), F(0.0))),
      Let(x_at, ir::select(x_edge, F(static_cast<double>(w - 1)), ir::max(Expr(xx), F(0.0))), accumulate))))))));
  // Outside: the sample is 0 (in max mode it still takes part).
  Stmt sample = is_max ? ir::IfThenElse::make(outside, Store(acc, ir::max(acc_value, F(0.0)), I(0)), inside)
                       : ir::IfThenElse::make(!outside, inside);
  sample = Let(yy, sample_y, Let(xx, sample_x, sample));
  Stmt samples = ir::For::make(iy, I(0), ir::max(Expr(grid_h), I(0)), ir::ForKind::kSerial,
                               ir::For::make(ix, I(0), ir::max(Expr(grid_w), I(0)), ir::ForKind::kSerial, sample));
  Expr result = is_max ? acc_value : acc_value / Expr(count);
  Expr out_index = ((Expr(r) * I(channels) + c) * I(oh) + ph) * I(ow) + pw;
  Stmt per_bin = ir::Seq::make({
      Store(acc, F(is_max ? -std::numeric_limits<double>::infinity() : 0.0), I(0)),
      samples,
      Store(out, ir::cast(out_dtype, result), out_index),
  });
  Stmt per_region = Loop(c, I(channels), Loop(ph, I(oh), Loop(pw, I(ow), per_bin)));
  per_region = Let(count, ir::cast(kF64, ir::max(Expr(grid_h) * grid_w, I(1))), per_region);
  per_region = Let(grid_w, grid(roi_w, ow), per_region);
  per_region = Let(grid_h, grid(roi_h, oh), per_region);
  per_region = Let(bin_w, Expr(roi_w) / F(static_cast<double>(ow)), per_region);
  per_region = Let(bin_h, Expr(roi_h) / F(static_cast<double>(oh)), per_region);
  per_region = Let(roi_h, height, per_region);
  per_region = Let(roi_w, width, per_region);
  per_region = Let(y0, corner(1), per_region);
  per_region = Let(x0, corner(0), per_region);
  per_region = Let(n, Clamp(ir::cast(kI64, Load(batch_indices, r)), 0, batch - 1), per_region);
  Stmt stmt = ir::Seq::make({check, Loop(r, I(regions), per_region)});
  return FinishComposedKernel(std::move(built), ir::Allocate::make(acc, {I(1)}, 64, ir::MemoryScope::kLocal, stmt), 0,
                              "RoiAlign of " + std::to_string(regions) + " regions into " + std::to_string(oh) + "x" +
                                  std::to_string(ow) + " bins, " + (is_max ? "max" : "avg") +
                                  ": serial sample loops in float64 [" + node.op + "]");
}

}  // namespace ops
}  // namespace agate
