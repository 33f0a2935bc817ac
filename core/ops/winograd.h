// Winograd convolution for group-1, stride-1, dilation-1 convs in the blocked
// NCHW<c>c layout, with weights constant at compile time: F(m x m, 3 x 3),
// F(2 x 2, 5 x 5), and the one-dimensional F(1 x m, 1 x r) / F(m x 1, r x 1)
// for the factorized 1 x r and r x 1 convs (r = 3, 5, 7; Inception-v3's
// 17x17 blocks spend a third of the model's time in 1x7 and 7x1 convs).
//
// Algorithm (Lavin & Gray, "Fast Algorithms for Convolutional Neural
// Networks"): the output is cut into mh x mw tiles; each tile needs an
// alpha_h x alpha_w (alpha = m + r - 1 per axis) patch d of the padded input and is
//     Y = Ah^T [ (Gh g Gw^T) (.) (Bh^T d Bw) ] Aw
// where (.) is the elementwise product over the alpha_h x alpha_w points. An
// axis the filter does not extend along (r = 1) has m = alpha = 1 and identity
// transforms. Summed over input channels, the elementwise products become, per
// point, a GEMM [tiles x IC] x [IC x OC]: alpha_h * alpha_w GEMMs do the work of
// the direct conv's rh * rw * mh * mw multiply-adds per (tile, ic, oc)
// (F(4x4,3x3): 36 instead of 144, 4x fewer; F(2x2,3x3): 2.25x; F(2x2,5x5):
// 36 instead of 100, 2.8x; F(1x4,1x7): 10 instead of 28, 2.8x).
//
// Transforms are built in code from Cook-Toom interpolation points
// (WinogradMatrices below): alpha - 1 finite points plus the point at
// infinity; the defaults are {0, 1, -1, 1/2, -2} for alpha = 6 (F(4, 3),
// F(2, 5)), {0, +-1, +-2, +-1/2, 3/2, -3/4} for alpha = 10 (F(4, 7)) and a
// prefix of {0, +-1, +-2, +-1/2} otherwise. For F(4, 3), {0, +-1, +-2} gives Lavin &
// Gray's integral B^T, but {0, +-1, 1/2, -2} (Barabasz et al., "Error analysis
// and improving the accuracy of Winograd convolution") has ~5x lower fp32 error
// (winograd_test prints both) at the same speed (benchmarks/ops/conv_benchmark);
// for F(4, 7), 3/2 and -3/4 instead of +-3 (the general list's continuation)
// give ~2x lower median error (winograd_test records both).
//
// Stages (ib/ob: input/output channel blocks, P = N * ceil(OH/mh) * ceil(OW/mw) tiles):
//   pad   [N, IC/ib, ceil(OH/mh)*mh + rh - 1, ceil(OW/mw)*mw + rw - 1, ib]
//         zero-padded input covering every tile (tiles that overhang the output
//         read zeros), root.
//   V     [alpha_h, alpha_w, P, IC/ib, ib] = Bh^T d Bw, per tile and channel
//         block; the channel lanes are the vector, the points unrolled (written
//         as Bh^T over the rows, then Bw over the columns, so the row sums are
//         common subexpressions of the points of one row).
//   U     [alpha_h, alpha_w, OC/ob, IC, ob] = Gh g Gw^T, computed at compile time
//         (a kConstant kernel parameter): per point a panel of `ob` output
//         channels per input channel, contiguous vectors for the GEMM.
//   M     [alpha_h, alpha_w, P, OC/ob, ob] = sum over ic of U * V: register-tiled
//         (tile_block tiles x 1-2 output blocks accumulate in registers).
//   Y     [N, OC/ob, OH, OW, ob] = Ah^T M Aw: computed per mh x mw output tile into
//         registers at the output's tile loop, where the fused epilogue (bias,
//         relu, residual add...) reads it and stores the output once. Tiles
//         overhanging the output edge are guarded.
// Selection (UseWinograd): LowerGroupOptions::conv_winograd (-1 auto, 0 off,
// 1 force); the automatic rule is documented next to WinogradByShape.
#ifndef AGATE_CORE_OPS_WINOGRAD_H_
#define AGATE_CORE_OPS_WINOGRAD_H_

#include <string>
#include <vector>

#include "core/graph/shape_rules.h"
#include "core/graph/tensor.h"
#include "core/ops/op_context.h"
#include "core/te/tensor.h"

namespace agate {
namespace ops {

// Transform matrices of F(m, r) (row-major, double).
struct WinogradMatrices {
  int m = 0, r = 0, alpha = 0;
  std::vector<double> at;  // A^T: m x alpha
  std::vector<double> g;   // G: alpha x r
  std::vector<double> bt;  // B^T: alpha x alpha
  double AT(int i, int j) const { return at[i * alpha + j]; }
  double G(int i, int j) const { return g[i * r + j]; }
  double BT(int i, int j) const { return bt[i * alpha + j]; }
};

// Cook-Toom construction from alpha - 1 = m + r - 2 finite interpolation
// points (plus infinity). Empty `points`: the defaults above.
WinogradMatrices MakeWinogradMatrices(int m, int r, std::vector<double> points = {});

// True when the conv can use Winograd: 3x3, 5x5, 1xr or rx1 (r = 3, 5, 7),
// stride 1, dilation 1, group 1, blocked (5-D) input, output channels divisible
// by the output block.
bool WinogradApplies(const graph::WindowGeometry& g, const graph::Shape& x, const graph::Shape& w, int64_t groups,
                     int64_t out_block);
// The automatic choice by shape (measured on the machines the rule was tuned on;
// see winograd.cc): Winograd when the output has at least 25 tiles (of 2x2 for a
// 3x3 conv, of its own WinogradTileFor tile for the others), unless
// its transformed input and products (V and M) are large (past 16 times the L2,
// `l2_bytes`; 0: unknown, no limit) while few channels give each of their bytes
// little work (IC * OC / (IC + OC) <= 32).
bool WinogradByShape(const graph::Shape& x, const graph::Shape& w, const graph::WindowGeometry& g,
                     int64_t l2_bytes = 0);
// The tile of one Winograd conv: per spatial axis the output tile m and the
// filter size r (m = r = 1 along an axis the filter does not extend).
struct WinogradTile {
  int64_t mh = 1, mw = 1, rh = 1, rw = 1;
  int64_t alpha_h() const { return mh + rh - 1; }
  int64_t alpha_w() const { return mw + rw - 1; }
};
// The tile for a conv WinogradApplies to. 3x3: m x m with m the knob
// (LowerGroupOptions::winograd_tile) when it is 2 or 4, else 4 when the output
// has at least 32 tiles of 4x4, else 2. 5x5: 2x2 (F(4x4, 5x5)'s 8-point
// transforms in two dimensions lose too much fp32 accuracy). 1xr / rx1: m along
// the filter's axis, the knob when it is 2 or 4, else 4.
WinogradTile WinogradTileFor(const graph::Shape& x, const graph::WindowGeometry& g, int knob);
// The decision for one conv: the conv_winograd knob, else WinogradByShape.
bool UseWinograd(const OpContext& ctx, const graph::WindowGeometry& g, const graph::Shape& x, const graph::Shape& w,
                 int64_t groups, int64_t out_block);

// Builds the Winograd stages for x [N, IC/ib, H, W, ib] and constant OIHW weights
// `w`, sets the node's schedule, and returns the conv [N, OC/ob, OH, OW, ob] (no bias).
te::Tensor ConvWinogradNCHWc(const OpContext& ctx, const te::Tensor& x, const graph::Tensor& w,
                             const graph::WindowGeometry& g, int64_t out_block, const std::string& name);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_WINOGRAD_H_
