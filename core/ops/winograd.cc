#include "core/ops/winograd.h"

#include <cmath>
#include <sstream>

#include "core/ops/schedule_common.h"
#include "core/ops/window.h"
#include "core/support/error.h"

namespace agate {
namespace ops {

using te::Expr;
using te::Tensor;
using te::Var;

namespace {

// Coefficients (lowest degree first) of prod over `roots` of (x - root).
std::vector<double> PolyFromRoots(const std::vector<double>& roots) {
  std::vector<double> c{1.0};
  for (double root : roots) {
    std::vector<double> next(c.size() + 1, 0.0);
    for (size_t i = 0; i < c.size(); ++i) {
      next[i + 1] += c[i];
      next[i] -= root * c[i];
    }
    c = next;
  }
  return c;
}

}  // namespace

// Toom-Cook for the linear convolution h = g * u (deg g = r - 1, deg u = m - 1,
// deg h = alpha - 1) evaluates g and u at the points (the point at infinity
// gives the leading coefficients), multiplies, and interpolates h:
//   h = Vh^-1 [(Vg g) (.) (Vu u)],   V_k[j] = (1, p_j, ..., p_j^(k-1)), V_k[inf] = (0, ..., 0, 1).
// The FIR filter y_i = sum_k g_k d_(i+k) (what a conv computes) is the
// transpose of u -> g * u, so  y = Vu^T [(Vg g) (.) (Vh^-T d)]:
//   A^T = Vu^T,  G = Vg,  B^T = Vh^-T.
// Row j of Vh^-T holds the Lagrange basis polynomial of point j,
// prod_(l != j) (x - p_l) / f_j with f_j = prod_(l != j) (p_j - p_l); the row of
// infinity holds prod_l (x - p_l). The 1 / f_j factors are moved from B^T into G
// (the elementwise product is invariant to scaling a row of one by s and of the
// other by 1 / s), so for integer points the run-time transform B^T is integral
// and the fractions are applied once, in double, to the weights.
WinogradMatrices MakeWinogradMatrices(int m, int r, std::vector<double> points) {
  WinogradMatrices w;
  w.m = m;
  w.r = r;
  w.alpha = m + r - 1;
  int alpha = w.alpha, n = alpha - 1;
  if (points.empty() && n == 5) {
    points = {0, 1, -1, 0.5, -2};  // F(4, 3), F(2, 5): lower fp32 error than {0, +-1, +-2} (winograd.h)
  } else if (points.empty() && n == 9) {
    points = {0, 1, -1, 2, -2, 0.5, -0.5, 1.5, -0.75};  // F(4, 7): lower fp32 error than +-3 (winograd.h)
  } else if (points.empty()) {
    const double defaults[] = {0, 1, -1, 2, -2, 0.5, -0.5, 3, -3};
    AGATE_REQUIRE(n <= 9, kUnsupported) << "no default Winograd points for F(" << m << ", " << r << ")";
    points.assign(defaults, defaults + n);
  }
  AGATE_REQUIRE(static_cast<int>(points.size()) == n, kInvalidArgument)
      << "F(" << m << ", " << r << ") needs " << n << " interpolation points, got " << points.size();
  w.at.assign(m * alpha, 0.0);
  w.g.assign(alpha * r, 0.0);
  w.bt.assign(alpha * alpha, 0.0);
  for (int j = 0; j < n; ++j) {
    double f = 1.0;
    std::vector<double> others;
    for (int l = 0; l < n; ++l) {
      if (l == j) continue;
      AGATE_REQUIRE(points[l] != points[j], kInvalidArgument) << "Winograd points must be distinct";
      f *= points[j] - points[l];
      others.push_back(points[l]);
    }
    for (int i = 0; i < m; ++i) w.at[i * alpha + j] = std::pow(points[j], i);
    for (int k = 0; k < r; ++k) w.g[j * r + k] = std::pow(points[j], k) / f;
    std::vector<double> basis = PolyFromRoots(others);  // n coefficients
    for (int t = 0; t < n; ++t) w.bt[j * alpha + t] = basis[t];
  }
  w.at[(m - 1) * alpha + alpha - 1] = 1.0;
  w.g[(alpha - 1) * r + r - 1] = 1.0;
  std::vector<double> all = PolyFromRoots(points);  // alpha coefficients
  for (int t = 0; t < alpha; ++t) w.bt[(alpha - 1) * alpha + t] = all[t];
  return w;
}

bool WinogradApplies(const graph::WindowGeometry& g, const graph::Shape& x, const graph::Shape& w, int64_t groups,
                     int64_t out_block) {
  if (!(groups == 1 && x.size() == 5 && w.size() == 4 && g.kernel.size() == 2 && g.strides[0] == 1 &&
        g.strides[1] == 1 && g.dilations[0] == 1 && g.dilations[1] == 1 && out_block > 0 && w[0] % out_block == 0 &&
        w[1] == x[1] * x[4]))
    return false;
  const int64_t kh = g.kernel[0], kw = g.kernel[1];
  auto one_dimensional = [](int64_t r) { return r == 3 || r == 5 || r == 7; };
  return (kh == kw && (kh == 3 || kh == 5)) || (kh == 1 && one_dimensional(kw)) || (kw == 1 && one_dimensional(kh));
}

namespace {

int64_t Tiles(const graph::Shape& x, const graph::WindowGeometry& g, int64_t mh, int64_t mw) {
  return x[0] * ((g.out[0] + mh - 1) / mh) * ((g.out[1] + mw - 1) / mw);
}
int64_t Tiles(const graph::Shape& x, const graph::WindowGeometry& g, int64_t m) { return Tiles(x, g, m, m); }
int64_t Tiles(const graph::Shape& x, const graph::WindowGeometry& g, const WinogradTile& t) {
  return Tiles(x, g, t.mh, t.mw);
}

// The transformed weights are alpha_h * alpha_w / (rh * rw) times the direct
// conv's (3x3: 4x for m = 4, 1.8x for m = 2; 1x7 with m = 4: 1.4x) and each
// element is used once per tile, so a call must have enough tiles to amortize
// reading them; in a network they come from memory, not cache (each layer's
// weights are evicted by the others').
constexpr int64_t kMinTiles2 = 25;  // Winograd at all (2x2 tiles for 3x3, else the form's own): from 9x9 maps
constexpr int64_t kMinTiles4 = 32;  // 4x4 tiles (between the measured 16: 2x2 better, and 49: 4x4 better)

}  // namespace

// Measured with benchmarks/ops/conv_benchmark --cold (caches flushed before each
// call, as in a whole network) on the ResNet-50 3x3 stride-1 layers, 2-core
// AVX-512 EPYC, 1 / 2 threads, speed relative to agate's direct NCHW16c conv:
//   56x56x64  (196 tiles of 4x4): m = 4 1.8 / 2.1x, m = 2 1.1 / 1.1x
//   28x28x128 (49 tiles of 4x4):  m = 4 1.8 / 1.8x, m = 2 1.4 / 1.6x
//   14x14x256 (16 tiles of 4x4):  m = 4 1.2 / 1.2x, m = 2 1.5 / 1.6x
//   7x7x512   (4 of 4x4, 16 of 2x2): m = 4 0.9 / 0.7x (slower), m = 2 1.15 / 1.1x
// (with warm caches m = 4 wins more: 2.8x, 3.2x, 2.4x, 0.8x; m = 2: 1.5x, 2.0x,
// 2.0x, 1.45x; in ResNet-50 itself the per-kernel profile agrees with --cold.)
// Inside ResNet-50 on a 2-core Zen 3 (AVX2) the 7x7x512 layers (16 tiles of 2x2: transformed
// weights 16.8 MB against 9.4 MB, each element used 16 times) took 4.8 ms per conv in Winograd
// on 2 threads against 2.0-2.3 ms direct, and 3.7-3.9 ms either way on 1 thread (`agate run
// --profile`, three interleaved runs): two threads streaming the larger weights contend for
// memory. So 16 tiles (7x7 and 8x8 maps) stay direct; 49 (14x14) keep Winograd.
// So: 4x4 tiles from kMinTiles4 tiles, else 2x2 tiles from kMinTiles2, else direct.
static int64_t WinogradTileSize3x3(const graph::Shape& x, const graph::WindowGeometry& g) {
  return Tiles(x, g, 4) >= kMinTiles4 ? 4 : 2;
}

WinogradTile WinogradTileFor(const graph::Shape& x, const graph::WindowGeometry& g, int knob) {
  WinogradTile t;
  t.rh = g.kernel[0];
  t.rw = g.kernel[1];
  const bool chosen = knob == 2 || knob == 4;
  if (t.rh == 3 && t.rw == 3) {
    t.mh = t.mw = chosen ? knob : WinogradTileSize3x3(x, g);
  } else if (t.rh == t.rw) {
    t.mh = t.mw = 2;
  } else if (t.rh == 1) {
    t.mw = chosen ? knob : 4;
  } else {
    t.mh = chosen ? knob : 4;
  }
  return t;
}

// Measured on an AVX2 EPYC (Zen 3, 512 KiB L2; benchmarks/ops/conv_benchmark, caches
// flushed before each call, 1 thread; Winograd / direct): the stages run over the
// whole output, so V and M (alpha^2 x tiles x (IC + OC) floats) go through memory
// when they are tens of MB, and with few channels the batched GEMM does too little
// per byte of them to hide it (h = IC * OC / (IC + OC)):
//   VGG-16 64 -> 64 at 224x224 (V+M 58 MB, h 32): 0.93 / 0.88x (slower)
//   Inception-v3 32 -> 32 at 147x147 (13 MB, h 16): 0.83x; 32 -> 64 (19 MB, h 21): 0.91x
//   48 -> 48 at 112x112 (11 MB, h 24): 1.00x
//   64 -> 128 at 112x112 (22 MB, h 43): 1.08 / 1.03x; Inception 80 -> 192 at 71x71 (13 MB, h 56): 2.3x
//   32 -> 64 at 56x56 (2.7 MB, h 21): 1.41x; ResNet-50's layers (<= 4 MB): 1.2-1.8x
// So direct when V+M exceed 16 x L2 (8 MB there) and h <= 32. Blocking the stages per
// group of tiles (V and M in cache) would keep Winograd's 2-4x fewer multiply-adds
// for those layers too; not built yet.
bool WinogradByShape(const graph::Shape& x, const graph::Shape& w, const graph::WindowGeometry& g, int64_t l2_bytes) {
  const bool square3 = g.kernel.size() == 2 && g.kernel[0] == 3 && g.kernel[1] == 3;
  const WinogradTile tile = WinogradTileFor(x, g, 0);
  if ((square3 ? Tiles(x, g, 2) : Tiles(x, g, tile)) < kMinTiles2) return false;
  if (l2_bytes <= 0 || w.size() != 4) return true;
  const double ic = static_cast<double>(w[1]), oc = static_cast<double>(w[0]);
  const double intermediates =
      4.0 * static_cast<double>(tile.alpha_h() * tile.alpha_w() * Tiles(x, g, tile)) * (ic + oc);
  const double work_per_byte = ic * oc / (ic + oc);
  return !(intermediates > 16.0 * static_cast<double>(l2_bytes) && work_per_byte <= 32.0);
}

bool UseWinograd(const OpContext& ctx, const graph::WindowGeometry& g, const graph::Shape& x, const graph::Shape& w,
                 int64_t groups, int64_t out_block) {
  int knob = ctx.options().conv_winograd;
  if (knob == 0) return false;
  const graph::Tensor* wc = ctx.constant(1);
  if (wc == nullptr || wc->dtype() != ir::DType::Float(32)) return false;
  if (!WinogradApplies(g, x, w, groups, out_block)) return false;
  return knob > 0 || WinogradByShape(x, w, g, ctx.target().l2_cache_bytes());
}

namespace {

const ir::DType kF32 = ir::DType::Float(32);

// sum_k c_k * e_k with the zero terms dropped and unit coefficients not multiplied.
Expr LinComb(const std::vector<double>& coef, const std::vector<Expr>& terms) {
  Expr acc;
  for (size_t k = 0; k < coef.size(); ++k) {
    double c = coef[k];
    if (c == 0.0) continue;
    Expr term = c == 1.0 || c == -1.0 ? terms[k] : ir::make_const(kF32, c) * terms[k];
    if (!acc.defined()) {
      acc = c == -1.0 ? -term : term;
    } else {
      acc = c == -1.0 ? acc - term : acc + term;
    }
  }
  return acc.defined() ? acc : ir::make_zero(kF32);
}

// values[index] for an index expression in [0, values.size()): a select chain
// that folds to one value once `index` is a constant (unrolled loops).
Expr Pick(const Expr& index, const std::vector<Expr>& values) {
  Expr out = values.back();
  for (int64_t k = static_cast<int64_t>(values.size()) - 2; k >= 0; --k)
    out = ir::select(index == Expr(k), values[k], out);
  return out;
}

struct WinogradStages {
  Tensor pad, v, m, y;
  WinogradTile tile;
  int64_t tiles = 0;  // P
};

std::string ScheduleWinograd(const ScheduleRequest& r, const WinogradStages& w) {
  te::Schedule s = r.schedule;
  const LowerGroupOptions& o = *r.options;
  bool parallel = ParallelAllowed(*r.target) && o.allow_parallel;
  int lanes = VectorLanes(*r.target, kF32);
  // The stage that writes the output once (the epilogue, or the conv itself) and the
  // per-tile output transform.
  Tensor out, acc;
  if (r.epilogue.defined() && StaticShape(r.epilogue) == StaticShape(r.anchor)) {
    out = r.epilogue;
    acc = r.anchor;
  } else if (r.outputs.size() == 1 && r.outputs[0].same_as(r.anchor)) {
    acc = s.cache_write(r.anchor, ir::MemoryScope::kLocal);
    out = r.anchor;
  } else {
    return ScheduleAnchorDefault(r, "conv2d_winograd (multi-output: default schedule)");
  }

  // Padded input: once, at the root.
  if (w.pad.op()->tag == tag::kPad) {
    s[w.pad].compute_root();
    InjectiveKnobs knobs;
    if (!o.allow_parallel) knobs.min_parallel_elements = INT64_MAX;
    ScheduleInjectiveStage(s, w.pad, *r.target, knobs);
  }

  // Input transform: (tile, channel block) outer and parallel; the alpha_h x alpha_w
  // points unrolled around the channel-lane vector.
  {
    te::Stage v = s[w.v];
    ir::IterVar e = v.axis(0), nu = v.axis(1), p = v.axis(2), cc = v.axis(3), ci = v.axis(4);
    v.reorder({p, cc, e, nu, ci});
    ir::IterVar fused = v.fuse(p, cc);
    if (parallel) v.parallel(fused);
    v.unroll(e);
    v.unroll(nu);
    if (lanes > 1) v.vectorize(ci);
  }

  // Batched GEMM per point: register tile of tile_block tiles x oc_blocks output
  // blocks accumulates over the input channels.
  graph::Shape ms = StaticShape(w.m);  // [alpha_h, alpha_w, P, OC/ob, ob]
  int64_t ob = ms[4];
  int64_t oc_blocks = (ob >= lanes && ms[3] % 2 == 0) ? 2 : 1;
  int64_t tile_limit = o.winograd_tile_block > 0 ? o.winograd_tile_block : (oc_blocks == 2 ? 8 : 12);
  int64_t tb = DivisorAtMost(ms[2], tile_limit);
  if (tb < 4 && ms[2] > tile_limit) tb = LeastWastefulTile(ms[2], 4, tile_limit);  // 37x37 tiles: a guarded tail
  {
    Tensor mloc = s.cache_write(w.m, ir::MemoryScope::kLocal);
    te::Stage mm = s[w.m];
    auto [po, pi] = mm.split(mm.axis(2), Expr(tb));
    auto [ko, ki] = mm.split(mm.axis(3), Expr(oc_blocks));
    mm.reorder({mm.axis(0), mm.axis(1), ko, po, pi, ki, mm.axis(4)});
    ir::IterVar fused = FuseRange(mm, {mm.axis(0), mm.axis(1), ko, po});
    if (parallel) mm.parallel(fused);
    if (lanes > 1) mm.vectorize(mm.axis(4));
    te::Stage a = s[mloc];
    a.compute_at(mm, fused);
    a.reorder({a.axis(0), a.axis(1), a.reduce_axis(0), a.reduce_axis(1), a.axis(2), a.axis(3), a.axis(4)});
    a.unroll(a.axis(2));
    a.unroll(a.axis(3));
    if (lanes > 1) a.vectorize(a.axis(4));
  }

  // Output transform per mh x mw tile into registers, then the epilogue's single store.
  {
    te::Stage os = s[out];
    auto [tho, thi] = os.split(os.axis(2), Expr(w.tile.mh));
    auto [two, twi] = os.split(os.axis(3), Expr(w.tile.mw));
    os.reorder({os.axis(0), os.axis(1), tho, two, thi, twi, os.axis(4)});
    ir::IterVar fused = FuseRange(os, {os.axis(0), os.axis(1), tho});
    if (parallel) os.parallel(fused);
    os.unroll(thi);
    os.unroll(twi);
    if (lanes > 1) os.vectorize(os.axis(4));
    te::Stage a = s[acc];
    a.compute_at(os, two);
    a.unroll(a.axis(2));
    a.unroll(a.axis(3));
    if (lanes > 1) a.vectorize(a.axis(4));
  }
  std::ostringstream text;
  text << "conv2d_winograd F(" << w.tile.mh << "x" << w.tile.mw << "," << w.tile.rh << "x" << w.tile.rw
       << ") tiles=" << w.tiles << " gemm tile=" << tb << "x"
       << oc_blocks * ob << (r.epilogue.defined() ? ", epilogue at the output tile" : "");
  return text.str();
}

}  // namespace

Tensor ConvWinogradNCHWc(const OpContext& ctx, const Tensor& x, const graph::Tensor& weights,
                         const graph::WindowGeometry& g, int64_t out_block, const std::string& name) {
  graph::Shape xs = StaticShape(x);
  const graph::Shape& ws = weights.shape();
  const WinogradTile tile = WinogradTileFor(xs, g, ctx.options().winograd_tile);
  const int64_t mh = tile.mh, mw = tile.mw, rh = tile.rh, rw = tile.rw;
  WinogradMatrices th = MakeWinogradMatrices(static_cast<int>(mh), static_cast<int>(rh));
  WinogradMatrices tw = MakeWinogradMatrices(static_cast<int>(mw), static_cast<int>(rw));
  const int64_t ah = th.alpha, aw = tw.alpha, ib = xs[4], ob = out_block, ic = ws[1], oc = ws[0];
  const int64_t oh = g.out[0], ow = g.out[1];
  const int64_t nh = (oh + mh - 1) / mh, nw = (ow + mw - 1) / mw, tiles = xs[0] * nh * nw;

  // U = Gh g Gw^T per (oc, ic), packed [alpha_h, alpha_w, OC/ob, IC, ob].
  graph::Tensor u(kF32, {ah, aw, oc / ob, ic, ob});
  {
    const float* src = weights.data<float>();
    float* dst = u.mutable_data<float>();
    std::vector<double> gk(ah * rw);  // Gh g: alpha_h x rw
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t c = 0; c < ic; ++c) {
        const float* k = src + (o * ic + c) * rh * rw;
        for (int e = 0; e < ah; ++e)
          for (int b = 0; b < rw; ++b) {
            double sum = 0;
            for (int a = 0; a < rh; ++a) sum += th.G(e, a) * k[a * rw + b];
            gk[e * rw + b] = sum;
          }
        for (int e = 0; e < ah; ++e)
          for (int n = 0; n < aw; ++n) {
            double v = 0;
            for (int b = 0; b < rw; ++b) v += gk[e * rw + b] * tw.G(n, b);
            dst[(((e * aw + n) * (oc / ob) + o / ob) * ic + c) * ob + o % ob] = static_cast<float>(v);
          }
      }
  }
  Tensor packed = ctx.AddConstant(name + "_winograd_u", u);

  // Zero-padded input covering every tile.
  std::vector<int64_t> in{xs[2], xs[3]};
  Tensor pad = te::compute(ToExprShape({xs[0], xs[1], nh * mh + rh - 1, nw * mw + rw - 1, ib}),
                           [&](const std::vector<Var>& i) {
    return PaddedRead(x, {i[0], i[1], i[2] - g.pad_begin[0], i[3] - g.pad_begin[1], i[4]}, 2, in, ir::make_zero(kF32));
  }, name + "_pad", tag::kPad);

  // V = Bh^T d Bw per tile: rows first (R[e][s] = sum_r BTh[e][r] d[r][s]), shared by every nu.
  Tensor v = te::compute(ToExprShape({ah, aw, tiles, xs[1], ib}), [&](const std::vector<Var>& i) {
    Expr p = i[2];
    Expr n = ir::floordiv(p, Expr(nh * nw)), rest = ir::floormod(p, Expr(nh * nw));
    Expr y0 = ir::floordiv(rest, Expr(nw)) * mh, x0 = ir::floormod(rest, Expr(nw)) * mw;
    std::vector<std::vector<Expr>> d(ah, std::vector<Expr>(aw));
    for (int64_t a = 0; a < ah; ++a)
      for (int64_t b = 0; b < aw; ++b) d[a][b] = pad(n, i[3], y0 + a, x0 + b, i[4]);
    std::vector<Expr> per_e;
    for (int e = 0; e < ah; ++e) {
      std::vector<Expr> row(aw);
      for (int b = 0; b < aw; ++b) {
        std::vector<double> c;
        std::vector<Expr> terms;
        for (int a = 0; a < ah; ++a) {
          c.push_back(th.BT(e, a));
          terms.push_back(d[a][b]);
        }
        row[b] = LinComb(c, terms);
      }
      std::vector<Expr> per_nu;
      for (int n2 = 0; n2 < aw; ++n2) {
        std::vector<double> c;
        for (int b = 0; b < aw; ++b) c.push_back(tw.BT(n2, b));
        per_nu.push_back(LinComb(c, row));
      }
      per_e.push_back(Pick(i[1], per_nu));
    }
    return Pick(i[0], per_e);
  }, name + "_winograd_v", "winograd_input");

  // M[e, nu, p, kk, ko] = sum over input channels of U * V.
  ir::IterVar rc = te::reduce_axis({Expr(int64_t{0}), Expr(xs[1])}, "rc");
  ir::IterVar rci = te::reduce_axis({Expr(int64_t{0}), Expr(ib)}, "rci");
  Tensor mm = te::compute(ToExprShape({ah, aw, tiles, oc / ob, ob}), [&](const std::vector<Var>& i) {
    return te::sum(packed(i[0], i[1], i[3], rc * ib + rci, i[4]) * v(i[0], i[1], i[2], rc, rci), {rc, rci});
  }, name + "_winograd_m", "winograd_gemm");

  // Y = Ah^T M Aw, indexed by output position.
  Tensor y = te::compute(ToExprShape({xs[0], oc / ob, oh, ow, ob}), [&](const std::vector<Var>& i) {
    Expr tho = ir::floordiv(i[2], Expr(mh)), two = ir::floordiv(i[3], Expr(mw));
    Expr p = (i[0] * nh + tho) * nw + two;
    std::vector<std::vector<Expr>> mv(ah, std::vector<Expr>(aw));
    for (int64_t e = 0; e < ah; ++e)
      for (int64_t n2 = 0; n2 < aw; ++n2) mv[e][n2] = mm(Expr(e), Expr(n2), p, i[1], i[4]);
    std::vector<Expr> per_i;
    for (int a = 0; a < mh; ++a) {
      std::vector<Expr> per_j;
      for (int b = 0; b < mw; ++b) {
        // sum_e ATh[a][e] (sum_nu ATw[b][nu] M[e][nu])
        std::vector<double> ce;
        std::vector<Expr> cols;
        for (int e = 0; e < ah; ++e) {
          ce.push_back(th.AT(a, e));
          std::vector<double> cn;
          for (int n2 = 0; n2 < aw; ++n2) cn.push_back(tw.AT(b, n2));
          cols.push_back(th.AT(a, e) == 0.0 ? ir::make_zero(kF32) : LinComb(cn, mv[e]));
        }
        per_j.push_back(LinComb(ce, cols));
      }
      per_i.push_back(Pick(ir::floormod(i[3], Expr(mw)), per_j));
    }
    return Pick(ir::floormod(i[2], Expr(mh)), per_i);
  }, name, tag::kConv2dWinograd);

  WinogradStages stages{pad, v, mm, y, tile, tiles};
  ctx.SetSchedule([stages](const ScheduleRequest& r) { return ScheduleWinograd(r, stages); }, y);
  return y;
}

}  // namespace ops
}  // namespace agate
