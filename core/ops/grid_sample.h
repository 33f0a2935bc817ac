// GridSample in the operator library: every output point reads its sampling
// coordinates from the grid and gathers the input at the computed taps.
//
// Why one injective compute and no tables: unlike Resize, whose taps depend only
// on shapes and are baked into constant tables at compile time, GridSample's taps
// come from a run-time tensor. Each output element therefore unnormalizes its grid
// coordinates, pads them (zeros / border / reflection), and sums the weighted
// taps (1 for nearest, 2^k for linear, 4^k for cubic over k spatial axes) read
// with clamped, masked indices, so no read ever leaves the input. The output is
// one root stage: the injective schedule parallelizes the outer axes and
// vectorizes the output width, which LLVM turns into gathers.
//
// The sampling helpers are shared with DeformConv's bilinear sampling.
#ifndef AGATE_CORE_OPS_GRID_SAMPLE_H_
#define AGATE_CORE_OPS_GRID_SAMPLE_H_

#include <string>
#include <vector>

#include "core/te/tensor.h"

namespace agate {
namespace ops {

// One tap along one axis: a source coordinate (floating point), whether it is
// inside [0, size), and its weight.
struct SampleTap {
  te::Expr coordinate;
  te::Expr weight;
  te::Expr inside;
  // The coordinate as an index, 0 where it lies outside (safe for any read).
  te::Expr Index() const;
};

// The two linear-interpolation taps of source coordinate `c` (already padded)
// along an axis of `size` points, in dtype c.dtype().
std::vector<SampleTap> LinearTaps(const te::Expr& c, int64_t size);

// Reads x at the product of one tap per listed axis: sum of weight products times
// x where every tap is inside, 0 elsewhere. `index` is x's full index with the
// sampled axes' entries ignored; taps[a] are the taps of axis axes[a].
te::Expr GatherTaps(const te::Tensor& x, std::vector<te::Expr> index, const std::vector<int>& axes,
                    const std::vector<std::vector<SampleTap>>& taps, ir::DType accumulate);

struct GridSampleSpec {
  std::string mode = "bilinear";   // bilinear | nearest | bicubic (the opset-20 linear / cubic)
  std::string padding = "zeros";   // zeros | border | reflection
  bool align_corners = false;
};

// x [N, C, D1..Dk], grid [N, O1..Ok, k] -> [N, C, O1..Ok].
te::Tensor GridSample(const te::Tensor& x, const te::Tensor& grid, const GridSampleSpec& spec,
                      const std::string& name);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_GRID_SAMPLE_H_
