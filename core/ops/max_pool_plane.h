// A 2-D max pool of one NCHW plane as straight vector code, for the tensorized NCHW max pool.
//
// Why: in NCHW the pooled axis is the row, so the generic schedule vectorizes a row only when
// its length is a multiple of the vector (ResNet's 56-wide rows never are), and each element then
// evaluated its window's padding tests and clamped indices: ResNet-50 int8's 3x3/2 stem pool
// (uint8, 64 x 112 x 112) ran 0.28 ms against ONNX Runtime's 0.06. Which rows and columns a
// window leaves the image through is known at compile time, so this code decides it there: the
// interior rows run in one loop whose columns are whole vectors (the last one overlapping the
// one before it rather than a partial vector: a max pool may write an output twice), and the
// few border rows and columns are unrolled with their out-of-image taps dropped, so no load is
// ever guarded. Stride-2..4 row reads of 8- and 16-bit elements become one load and a shuffle
// (the LLVM backend's strided loads); wider elements are gathered.
#ifndef AGATE_CORE_OPS_MAX_POOL_PLANE_H_
#define AGATE_CORE_OPS_MAX_POOL_PLANE_H_

#include "core/graph/shape_rules.h"
#include "core/ir/stmt.h"

namespace agate {
namespace ops {

// Border rows and columns (windows that leave the input) are unrolled one by one, so windows
// with more of them on either axis (huge pads on small maps) keep the generic schedule.
constexpr int64_t kMaxPoolPlaneBorder = 16;
// Each output's taps are unrolled into one chain of maxes, so larger windows (a 32x30 window is
// 960 taps: an expression 960 deep, and code that grows with it) keep the generic schedule.
constexpr int64_t kMaxPoolPlaneTaps = 64;

// True for a 2-D window of at most kMaxPoolPlaneTaps taps with at most kMaxPoolPlaneBorder border
// rows and border columns.
bool MaxPoolPlaneApplies(const graph::WindowGeometry& g);

// The max pool of the plane at `x_offset` of `x` (elements [H, W] row-major) under the 2-D
// window geometry `g` into the plane at `out_offset` of `out` ([OH, OW] row-major), with
// vectors of at most `max_lanes` elements. An output whose window lies wholly in the padding
// gets `empty`, the max's start value (-inf, or the integer type's lowest). Requires
// MaxPoolPlaneApplies(g).
ir::Stmt LowerMaxPoolPlane(const graph::WindowGeometry& g, const ir::Buffer& x, const ir::Expr& x_offset,
                           const ir::Buffer& out, const ir::Expr& out_offset, const ir::Expr& empty, int max_lanes);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_MAX_POOL_PLANE_H_
