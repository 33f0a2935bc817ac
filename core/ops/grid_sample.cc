#include "core/ops/grid_sample.h"

#include <utility>

#include "core/ops/op_context.h"
#include "core/ops/registry.h"
#include "core/support/error.h"

namespace agate {
namespace ops {

using te::Expr;
using te::Tensor;
using te::Var;

namespace {

Expr Const(ir::DType t, double v) { return ir::make_const(t, v); }

// The coordinate rules of ONNX's GridSample (after PyTorch's grid_sampler).
class Coordinates {
 public:
  Coordinates(const GridSampleSpec& spec, ir::DType t) : spec_(spec), t_(t) {}

  // [-1, 1] -> source pixel coordinates of an axis of `size` points.
  Expr Unnormalize(const Expr& g, int64_t size) const {
    if (spec_.align_corners) return (g + Const(t_, 1)) * Const(t_, (size - 1) / 2.0);
    return ((g + Const(t_, 1)) * Const(t_, static_cast<double>(size)) - Const(t_, 1)) * Const(t_, 0.5);
  }

  // Border and reflection padding move the coordinate into [0, size - 1].
  Expr Pad(const Expr& c, int64_t size) const {
    if (spec_.padding == "border") return Clamp(c, size);
    if (spec_.padding == "reflection") {
      Expr r = spec_.align_corners ? Reflect(c, 0, 2.0 * (size - 1)) : Reflect(c, -1, 2.0 * size - 1);
      return Clamp(r, size);
    }
    return c;
  }

 private:
  Expr Clamp(const Expr& c, int64_t size) const {
    return ir::min(ir::max(c, Const(t_, 0)), Const(t_, static_cast<double>(size - 1)));
  }
  // Reflects c about the bounds twice_low / 2 and twice_high / 2 until it lies between them.
  Expr Reflect(const Expr& c, double twice_low, double twice_high) const {
    if (twice_low == twice_high) return Const(t_, 0);
    double low = twice_low / 2, span = (twice_high - twice_low) / 2;
    Expr distance = ir::abs(c - Const(t_, low));
    Expr flips = ir::floor(distance / Const(t_, span));
    Expr extra = distance - flips * Const(t_, span);
    Expr even = flips - ir::floor(flips * Const(t_, 0.5)) * Const(t_, 2) == Const(t_, 0);
    return ir::select(even, extra + Const(t_, low), Const(t_, span + low) - extra);
  }

  const GridSampleSpec& spec_;
  ir::DType t_;
};

SampleTap Tap(const Expr& c, const Expr& weight, int64_t size) {
  ir::DType t = c.dtype();
  // NaN and coordinates beyond any index compare false here, so they never reach the cast.
  Expr inside = c >= Const(t, 0) && c <= Const(t, static_cast<double>(size - 1));
  return SampleTap{c, weight, inside};
}

// Keys' cubic convolution weights (a = -0.75) of the taps at -1, 0, 1, 2 for a fraction f.
std::vector<Expr> CubicWeights(const Expr& f) {
  ir::DType t = f.dtype();
  const double a = -0.75;
  auto near = [&](const Expr& d) {
    return (Const(t, a + 2) * d - Const(t, a + 3)) * d * d + Const(t, 1);
  };
  auto far = [&](const Expr& d) {
    return ((Const(t, a) * d - Const(t, 5 * a)) * d + Const(t, 8 * a)) * d - Const(t, 4 * a);
  };
  Expr one = Const(t, 1), two = Const(t, 2);
  return {far(f + one), near(f), near(one - f), far(two - f)};
}

// Values bound once per output element (let var = value in body): each coordinate feeds several
// taps' weights, bounds checks and indices, and without a binding every use would copy its whole
// expression (reflection padding alone is a dozen operations), growing the kernel's expression
// tree with every use.
class Bindings {
 public:
  Expr Bind(const Expr& value) {
    Var v("gs" + std::to_string(lets_.size()), value.dtype());
    lets_.push_back({v, value});
    return v;
  }
  Expr Wrap(Expr body) const {
    for (auto it = lets_.rbegin(); it != lets_.rend(); ++it) body = ir::Let::make(it->first, it->second, body);
    return body;
  }

 private:
  std::vector<std::pair<Var, Expr>> lets_;
};

// The taps of one axis for grid value g.
std::vector<SampleTap> AxisTaps(const Coordinates& coords, const GridSampleSpec& spec, const Expr& g, int64_t size,
                                Bindings* let) {
  ir::DType t = g.dtype();
  Expr f = let->Bind(coords.Unnormalize(g, size));
  if (spec.mode == "nearest") return {Tap(let->Bind(ir::round(coords.Pad(f, size))), Const(t, 1), size)};
  if (spec.mode == "bilinear") return LinearTaps(let->Bind(coords.Pad(f, size)), size);
  // bicubic: the taps around the unpadded coordinate, each padded on its own.
  Expr low = let->Bind(ir::floor(f));
  std::vector<Expr> w = CubicWeights(let->Bind(f - low));
  std::vector<SampleTap> taps;
  for (int i = 0; i < 4; ++i) taps.push_back(Tap(let->Bind(coords.Pad(low + Const(t, i - 1), size)), w[i], size));
  return taps;
}

}  // namespace

Expr SampleTap::Index() const {
  return ir::cast(ir::DType::Index(), ir::select(inside, coordinate, ir::make_zero(coordinate.dtype())));
}

std::vector<SampleTap> LinearTaps(const Expr& c, int64_t size) {
  ir::DType t = c.dtype();
  Expr low = ir::floor(c);
  Expr frac = c - low;
  return {Tap(low, Const(t, 1) - frac, size), Tap(low + Const(t, 1), frac, size)};
}

Expr GatherTaps(const Tensor& x, std::vector<Expr> index, const std::vector<int>& axes,
                const std::vector<std::vector<SampleTap>>& taps, ir::DType accumulate) {
  AGATE_CHECK(axes.size() == taps.size()) << "GatherTaps: " << axes.size() << " axes, " << taps.size() << " tap lists";
  // Walks every combination of one tap per axis (an odometer over the tap lists).
  std::vector<size_t> pick(axes.size(), 0);
  Expr total;
  while (true) {
    Expr weight, inside;
    for (size_t a = 0; a < axes.size(); ++a) {
      const SampleTap& tap = taps[a][pick[a]];
      index[axes[a]] = tap.Index();
      weight = weight.defined() ? weight * tap.weight : tap.weight;
      inside = inside.defined() ? (inside && tap.inside) : tap.inside;
    }
    Expr value = ir::cast(accumulate, x(index));
    Expr term = weight * ir::select(inside, value, ir::make_zero(accumulate));
    total = total.defined() ? total + term : term;
    size_t a = axes.size();
    while (a > 0 && ++pick[a - 1] == taps[a - 1].size()) pick[--a] = 0;
    if (a == 0) break;
  }
  return total;
}

Tensor GridSample(const Tensor& x, const Tensor& grid, const GridSampleSpec& spec, const std::string& name) {
  graph::Shape xs = StaticShape(x), gs = StaticShape(grid);
  int k = static_cast<int>(xs.size()) - 2;
  ir::DType t = x.dtype().bits() == 64 ? ir::DType::Float(64) : ir::DType::Float(32);
  graph::Shape out{xs[0], xs[1]};
  for (int d = 0; d < k; ++d) out.push_back(gs[1 + d]);
  Coordinates coords(spec, t);
  std::vector<int> axes;
  for (int d = 0; d < k; ++d) axes.push_back(2 + d);
  return te::compute(ToExprShape(out), [&](const std::vector<Var>& o) {
    std::vector<Expr> gi{o[0]};
    for (int d = 0; d < k; ++d) gi.push_back(o[2 + d]);
    gi.push_back(Expr());
    std::vector<std::vector<SampleTap>> taps;
    Bindings let;
    for (int d = 0; d < k; ++d) {
      gi.back() = Expr(int64_t{k - 1 - d});  // grid[..., 0] addresses the innermost axis
      taps.push_back(AxisTaps(coords, spec, ir::cast(t, grid(gi)), xs[2 + d], &let));
    }
    std::vector<Expr> index(o.begin(), o.end());
    return ir::cast(x.dtype(), let.Wrap(GatherTaps(x, index, axes, taps, t)));
  }, name, tag::kInjective);
}

namespace {

std::vector<Tensor> GridSampleOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  AGATE_REQUIRE(x.dtype().is_float() && ctx.input(1).dtype().is_float(), kUnsupported)
      << ctx.Describe() << ": GridSample of X " << ctx.input_type(0).ToString() << " and grid "
      << ctx.input_type(1).ToString();
  GridSampleSpec spec;
  spec.mode = ctx.attrs().GetString("mode", "bilinear");
  spec.padding = ctx.attrs().GetString("padding_mode", "zeros");
  spec.align_corners = ctx.attrs().GetInt("align_corners", 0) != 0;
  int k = static_cast<int>(x.ndim()) - 2;
  AGATE_REQUIRE(spec.mode != "bicubic" || k <= 3, kUnsupported)
      << ctx.Describe() << ": cubic sampling over " << k << " spatial axes (4^" << k
      << " taps per point) of X " << ctx.input_type(0).ToString() << "; the operator library unrolls at most 3 axes";
  AGATE_REQUIRE(k <= 6, kUnsupported) << ctx.Describe() << ": GridSample over " << k << " spatial axes of X "
                                      << ctx.input_type(0).ToString() << "; at most 6";
  return {GridSample(x, ctx.input(1), spec, ctx.node().outputs[0])};
}

}  // namespace

void RegisterGridSampleOps(OpTable* t) { t->Register("GridSample", GridSampleOp); }

}  // namespace ops
}  // namespace agate
