// Winograd convolution F(m x m, 3 x 3) for group-1, stride-1, dilation-1 3x3
// convs in the blocked NCHW<c>c layout, with weights constant at compile time.
//
// Algorithm (Lavin & Gray, "Fast Algorithms for Convolutional Neural
// Networks"): the output is cut into m x m tiles; each tile needs an
// alpha x alpha (alpha = m + 2) patch d of the padded input and is
//     Y = A^T [ (G g G^T) (.) (B^T d B) ] A
// where (.) is the elementwise product over the alpha x alpha points. Summed
// over input channels, the elementwise products become, per point, a GEMM
// [tiles x IC] x [IC x OC]: alpha^2 GEMMs do the work of the direct conv's
// 9 * m^2 multiply-adds per (tile, ic, oc) with alpha^2 (m = 4: 36 instead of
// 144, 4x fewer; m = 2: 16 instead of 36, 2.25x fewer).
//
// Transforms are built in code from Cook-Toom interpolation points
// (WinogradMatrices below): alpha - 1 finite points plus the point at
// infinity; the defaults are {0, 1, -1, 1/2, -2} for m = 4 and {0, 1, -1}
// for m = 2. For m = 4, {0, +-1, +-2} gives Lavin & Gray's integral B^T, but
// {0, +-1, 1/2, -2} (Barabasz et al., "Error analysis and improving the
// accuracy of Winograd convolution") has ~5x lower fp32 error (winograd_test
// prints both) at the same speed (benchmarks/ops/conv_benchmark).
//
// Stages (ib/ob: input/output channel blocks, P = N * ceil(OH/m) * ceil(OW/m) tiles):
//   pad   [N, IC/ib, ceil(OH/m)*m + 2, ceil(OW/m)*m + 2, ib]  zero-padded input
//         covering every tile (tiles that overhang the output read zeros), root.
//   V     [alpha, alpha, P, IC/ib, ib] = B^T d B, per tile and channel block;
//         the channel lanes are the vector, the alpha^2 points unrolled (written
//         as B^T over the rows, then over the columns, so the row sums are
//         common subexpressions of the points of one row).
//   U     [alpha, alpha, OC/ob, IC, ob] = G g G^T, computed at compile time
//         (a kConstant kernel parameter): per point a panel of `ob` output
//         channels per input channel, contiguous vectors for the GEMM.
//   M     [alpha, alpha, P, OC/ob, ob] = sum over ic of U * V: register-tiled
//         (tile_block tiles x 1-2 output blocks accumulate in registers).
//   Y     [N, OC/ob, OH, OW, ob] = A^T M A: computed per m x m output tile into
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

// True when the conv can use Winograd: 3x3, stride 1, dilation 1, group 1,
// blocked (5-D) input, output channels divisible by the output block.
bool WinogradApplies(const graph::WindowGeometry& g, const graph::Shape& x, const graph::Shape& w, int64_t groups,
                     int64_t out_block);
// The automatic choice by shape (measured on the machines the rule was tuned on;
// see winograd.cc): Winograd when the output has at least 16 tiles of 2x2, unless
// its transformed input and products (V and M) are large (past 16 times the L2,
// `l2_bytes`; 0: unknown, no limit) while few channels give each of their bytes
// little work (IC * OC / (IC + OC) <= 32).
bool WinogradByShape(const graph::Shape& x, const graph::Shape& w, const graph::WindowGeometry& g,
                     int64_t l2_bytes = 0);
// The output tile m: the knob (LowerGroupOptions::winograd_tile) when it is 2 or
// 4, else 4 when the output has at least 32 tiles of 4x4, else 2.
int64_t WinogradTileSize(const graph::Shape& x, const graph::WindowGeometry& g, int knob);
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
