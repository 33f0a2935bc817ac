#include "core/ops/qlinear_matmul_vnni.h"

#include <algorithm>
#include <sstream>

#include "core/graph/shape_rules.h"
#include "core/ir/buffer.h"
#include "core/ir/stmt.h"
#include "core/ops/schedule_common.h"
#include "core/ops/vnni_common.h"
#include "core/schedule/schedule.h"
#include "core/support/error.h"

namespace agate {
namespace ops {

using te::Expr;
using te::Tensor;
using te::Var;
using vnni::I;
using vnni::kI16;
using vnni::kI32;
using vnni::kS8;
using vnni::kU8;

namespace {

// The packed geometry of one product (see the header).
struct MatMulPlan {
  const vnni::Isa* isa = nullptr;
  int64_t lanes() const { return isa->lanes; }  // int32 lanes per vector
  int64_t group() const { return isa->group; }  // K elements per lane and step
  int64_t rows = 0, k = 0, n = 0;  // folded rows (M times A's batch), K, N
  int64_t k4 = 0;                  // ceil(K / group): the group-deep K steps (K padded to k4 * group)
  int64_t mr = 1, vectors = 1;     // register tile: mr rows x vectors * lanes columns
  int64_t nr() const { return vectors * lanes(); }
  int64_t padded_rows() const { return (rows + mr - 1) / mr * mr; }
  int64_t padded_n() const { return (n + nr() - 1) / nr() * nr(); }
};

// The register tile with the least modelled time: per K step a tile issues mr * v
// vpdpbusd or vpmaddwd (one per cycle; at least ~6 cycles, the latency a chain of
// accumulators must cover) and mr broadcasts plus v loads (two per cycle), over
// the tiles that cover the padded rows and columns. mr * v accumulators, v B vectors
// and a broadcast must fit the vector registers (30 of 32, 15 of 16). There must be more
// than one tile (the schedule's loop over tiles, which the tile's offsets refer to, would
// otherwise be an extent-1 loop that lowering removes): false when even one vector by one
// row is a single tile.
bool PickTile(MatMulPlan* p) {
  double best = 0;
  const int64_t registers = p->isa->registers - (p->isa->registers >= 32 ? 2 : 1);
  for (int64_t v = 1; v <= 4; ++v) {
    for (int64_t mr = 1; mr <= 8; ++mr) {
      if (mr * v + v + 1 > registers) continue;
      int64_t count = (p->rows + mr - 1) / mr * ((p->n + v * p->lanes() - 1) / (v * p->lanes()));
      if (count < 2) continue;
      double tiles = static_cast<double>(count);
      double cost = tiles * (static_cast<double>(std::max<int64_t>(mr * v, 6)) + 0.5 * static_cast<double>(mr + v));
      if (best == 0 || cost < best * 0.999) {
        best = cost;
        p->mr = mr;
        p->vectors = v;
      }
    }
  }
  return best > 0;
}

// A scalar parameter's only element (rank 0 or one element).
Expr ScalarAt(const Tensor& t) { return t(std::vector<Expr>(t.ndim(), I(0))); }

// The register tile [1, 1, mr, nr] over the whole reduction: per K step, one vector load
// of B per vector and a group broadcast of A per row (4 bytes or 2 int16), mr x v
// vpdpbusd or vpmaddwd into accumulators in a local array with constant indices
// (registers). `a_input`: which of `inputs` (desc's input tensors' order) is A.
ir::Stmt LowerTile(const MatMulPlan& plan, int a_input, const std::vector<ir::Buffer>& inputs,
                   const std::vector<Expr>& offsets, const ir::Buffer& out, const Expr& out_offset) {
  using namespace ir;  // NOLINT
  const int ai = a_input, bi = 1 - ai;
  const Buffer &ab = inputs[ai], &bb = inputs[bi];
  const int64_t nr = plan.nr(), lanes = plan.lanes(), g = plan.group();
  vnni::RegisterTile acc("vnni_mm_acc", plan.mr, plan.vectors, lanes);
  Var k4("k4");
  std::vector<Stmt> update, store;
  for (int64_t t = 0; t < plan.mr; ++t) {
    Expr a = Load::make(ab, vnni::Lanes(offsets[ai] + t * plan.k4 * g + k4 * g, g));
    for (int64_t v = 0; v < plan.vectors; ++v) {
      Expr b = Load::make(bb, vnni::Lanes(offsets[bi] + (k4 * nr + v * lanes) * g, g * lanes));
      update.push_back(acc.Set(t, v, plan.isa->Dot(acc.Value(t, v), a, b)));
      store.push_back(Store::make(out, acc.Value(t, v), vnni::Lanes(out_offset + t * nr + v * lanes, lanes)));
    }
  }
  return acc.Around(For::make(k4, 0, plan.k4, ForKind::kSerial, Seq::make(update)), store);
}

}  // namespace

Tensor VnniIntegerMatMul(const OpContext& ctx, const VnniMatMulInputs& in, const TileEpilogue& epilogue,
                         const std::string& name) {
  const vnni::Isa* isa = vnni::PickIsa(ctx.target());
  if (isa == nullptr) return Tensor();
  const Tensor& a = ctx.input(in.a);
  const graph::Tensor* bc = ctx.constant(in.b);
  if (bc == nullptr || (a.dtype() != kU8 && a.dtype() != kS8)) return Tensor();
  if (bc->dtype() != kU8 && bc->dtype() != kS8) return Tensor();
  graph::Shape as = StaticShape(a), bs = bc->shape();
  if (as.size() < 2 || bs.size() != 2 || as.back() != bs[0]) return Tensor();
  bool has_a_zp = in.a_zp >= 0 && ctx.has_input(in.a_zp), has_b_zp = in.b_zp >= 0 && ctx.has_input(in.b_zp);
  if (has_a_zp && graph::NumElements(StaticShape(ctx.input(in.a_zp))) != 1) return Tensor();  // per row: generic
  const graph::Tensor* bz = has_b_zp ? ctx.constant(in.b_zp) : nullptr;
  if (has_b_zp && (bz == nullptr || (bz->numel() != 1 && (bz->shape().size() != 1 || bz->numel() != bs[1]))))
    return Tensor();

  MatMulPlan p;
  p.isa = isa;
  const int64_t g = p.group();
  p.rows = graph::NumElements(graph::Shape(as.begin(), as.end() - 1));
  p.k = bs[0];
  p.n = bs[1];
  p.k4 = (p.k + g - 1) / g;
  if (!PickTile(&p)) return Tensor();  // a single one-vector tile: the generic product
  const int64_t mp = p.padded_rows(), np = p.padded_n(), nr = p.nr();

  // B: VNNI and sdot: int8 panels (uint8 shifted by -128, its zero point with it); per column
  // the constant sum_k b'[k, n] - K * zb'[n] that a's zero point multiplies, and zb'[n].
  // Centred: int16 panels of b[k, n] - zb[n], no further terms.
  const int64_t b_shift = !isa->centred && bc->dtype() == kU8 ? 128 : 0;
  graph::Tensor packed(isa->b_type, {np / nr, p.k4, nr, g});
  graph::Tensor column_term(kI32, {p.n}), b_zero(kI32, {p.n});
  bool b_zero_points = false;
  for (int64_t j = 0; j < p.n; ++j) {
    int64_t zb = (bz == nullptr ? 0 : bz->GetInt(bz->numel() == 1 ? 0 : j)) - b_shift;
    int64_t sum = 0;
    for (int64_t k = 0; k < p.k; ++k) {
      int64_t v = bc->GetInt(k * p.n + j) - b_shift;
      int64_t at = (((j / nr) * p.k4 + k / g) * nr + j % nr) * g + k % g;
      if (isa->centred) {
        packed.mutable_data<int16_t>()[at] = static_cast<int16_t>(v - zb);
      } else {
        packed.mutable_data<int8_t>()[at] = static_cast<int8_t>(v);
      }
      sum += v;
    }
    column_term.mutable_data<int32_t>()[j] = static_cast<int32_t>(sum - p.k * zb);
    b_zero.mutable_data<int32_t>()[j] = static_cast<int32_t>(zb);
    b_zero_points = b_zero_points || (!isa->centred && zb != 0);
  }

  // a's zero point after the shift of A into the packed type (int8 into VNNI's uint8: +128;
  // uint8 into sdot's int8: -128): a constant (folded into the column term) or the run-time
  // scalar. Centred: subtracted from A where it is packed.
  const int64_t a_shift = isa->ShiftFrom(a.dtype());
  const graph::Tensor* az = has_a_zp ? ctx.constant(in.a_zp) : nullptr;
  Tensor column_table, b_zero_table;
  Expr a_zero;  // run-time: cast(int32, za) + shift
  Expr a_zero16 = ir::make_const(kI16, 0.0);  // centred: the zero point A's packing subtracts
  if (isa->centred) {
    if (az != nullptr) a_zero16 = ir::make_const(kI16, static_cast<double>(az->GetInt(0)));
    if (has_a_zp && az == nullptr) a_zero16 = ir::cast(kI16, ScalarAt(ctx.input(in.a_zp)));
  } else if (!has_a_zp || az != nullptr) {
    int64_t za = (az == nullptr ? 0 : az->GetInt(0)) + a_shift;
    for (int64_t j = 0; j < p.n; ++j)
      column_term.mutable_data<int32_t>()[j] = static_cast<int32_t>(za * column_term.data<int32_t>()[j]);
    if (za != 0) column_table = ctx.AddConstant(name + "_zp_compensation", column_term);
  } else {
    column_table = ctx.AddConstant(name + "_b_column_sums", column_term);
    a_zero = ir::cast(kI32, ScalarAt(ctx.input(in.a_zp))) + I(a_shift);
  }
  if (b_zero_points) b_zero_table = ctx.AddConstant(name + "_b_zero_points", b_zero);
  Tensor bp = ctx.AddConstant(name + "_b_vnni", packed);

  // A: Ap[Mp][K4 * g] uint8 (or int16 minus the zero point, centred), the batch folded into
  // the rows (rows contiguous, so the packing vectorizes along K).
  graph::Shape a_lead(as.begin(), as.end() - 1);
  auto a_row = [&](const Expr& row) {  // indices of A's leading axes for folded row `row`
    std::vector<Expr> idx(a_lead.size());
    Expr rest = row;
    for (size_t d = a_lead.size(); d-- > 0;) {
      idx[d] = d == 0 ? rest : ir::floormod(rest, I(a_lead[d]));
      rest = ir::floordiv(rest, I(a_lead[d]));
    }
    return idx;
  };
  Tensor ap = te::compute(ToExprShape({mp, p.k4 * g}), [&](const std::vector<Var>& i) {
    Expr row = mp != p.rows ? ir::min(i[0], I(p.rows - 1)) : Expr(i[0]);
    Expr k = i[1];
    std::vector<Expr> idx = a_row(row);
    idx.push_back(p.k % g != 0 ? ir::min(k, I(p.k - 1)) : k);
    Expr v = a(idx);
    if (isa->centred) v = ir::cast(kI16, v) - a_zero16;
    if (a_shift != 0) v = ir::cast(isa->a_type, ir::cast(kI32, v) + I(a_shift));
    if (p.k % g != 0) v = ir::select(k < I(p.k), v, ir::make_const(isa->a_type, 0));
    return v;
  }, name + "_a_vnni", tag::kOpaque);

  // Row sums of A' (only when some column's zero point is not 0).
  Tensor row_sums;
  if (b_zero_points) {
    ir::IterVar rk4 = te::reduce_axis({I(0), I(p.k4)}, "rk4"), rk = te::reduce_axis({I(0), I(4)}, "rk");
    row_sums = te::compute(ToExprShape({mp}), [&](const std::vector<Var>& i) {
      return te::sum(ir::cast(kI32, ap(i[0], rk4 * 4 + rk)), {rk4, rk});
    }, name + "_a_row_sums", tag::kOpaque);
  }

  // The products over whole register tiles: accv[Mp/mr][Np/nr][mr][nr].
  auto dot_body = [&](const Tensor& at, const Tensor& bt, const std::vector<Var>& o,
                      const std::vector<ir::IterVar>& r) {
    return te::sum(ir::cast(kI32, at(o[0] * p.mr + o[2], r[0] * g + r[1])) * ir::cast(kI32, bt(o[1], r[0], o[3], r[1])),
                   r);
  };
  auto reduce_axes = [&] {
    return std::vector<ir::IterVar>{te::reduce_axis({I(0), I(p.k4)}, "rk4"), te::reduce_axis({I(0), I(g)}, "rk")};
  };
  std::vector<ir::IterVar> r = reduce_axes();
  Tensor accv = te::compute(ToExprShape({mp / p.mr, np / nr, p.mr, nr}),
                            [&](const std::vector<Var>& o) { return dot_body(ap, bp, o, r); }, name + "_vnni",
                            tag::kDense);
  Tensor ad = te::placeholder(ap.shape(), isa->a_type, name + "_a_tile");
  Tensor bd = te::placeholder(bp.shape(), isa->b_type, name + "_b_tile");
  std::vector<ir::IterVar> rd = reduce_axes();
  auto intrin = std::make_shared<te::TensorIntrin>();
  intrin->name = "vnni_matmul_tile";
  intrin->desc = te::compute(ToExprShape({1, 1, p.mr, nr}),
                             [&](const std::vector<Var>& o) { return dot_body(ad, bd, o, rd); }, name + "_tile");
  MatMulPlan plan = p;
  const int a_input = intrin->desc.op()->InputTensors()[0].same_as(ad) ? 0 : 1;
  intrin->lower = [plan, a_input](const std::vector<ir::Buffer>& inputs, const std::vector<Expr>& offsets,
                                  const ir::Buffer& out, const Expr& out_offset) {
    return LowerTile(plan, a_input, inputs, offsets, out, out_offset);
  };

  // The epilogue at the tile: the products minus the zero-point terms, then the
  // caller's epilogue; padded columns read the last column's parameters (never stored).
  Tensor tile_out = te::compute(ToExprShape({mp, np}), [&](const std::vector<Var>& o) {
    Expr column = np != p.n ? ir::min(o[1], I(p.n - 1)) : Expr(o[1]);
    Expr v = accv(ir::floordiv(o[0], I(p.mr)), ir::floordiv(o[1], I(nr)), ir::floormod(o[0], I(p.mr)),
                  ir::floormod(o[1], I(nr)));
    if (column_table.defined()) v = v - (a_zero.defined() ? a_zero * column_table(column) : column_table(column));
    if (b_zero_points) v = v - b_zero_table(column) * row_sums(o[0]);
    return epilogue ? epilogue(v, column) : v;
  }, name + "_tile_out", tag::kOpaque);

  // The output: the planes' valid rows and columns in A's batch shape.
  graph::Shape out_shape = a_lead;
  out_shape.push_back(p.n);
  Tensor out = te::compute(ToExprShape(out_shape), [&](const std::vector<Var>& o) {
    Expr row = I(0);
    for (size_t d = 0; d + 1 < o.size(); ++d) row = row * I(out_shape[d]) + o[d];
    return tile_out(row, o.back());
  }, name, tag::kInjective);

  ctx.SetSchedule([plan, ap, row_sums, accv, tile_out, intrin](const ScheduleRequest& req) {
    te::Schedule s = req.schedule;
    auto [knobs, parallel] = vnni::ScheduleFlags(req);
    s[ap].compute_root();
    ScheduleInjectiveStage(s, ap, *req.target, knobs);
    if (row_sums.defined()) s[row_sums].compute_root();
    // The epilogue over register tiles (row tiles outside, column panels inside: A's rows
    // stay in L1 while B streams from L2), vectorized along the columns; the tile is
    // computed inside it, in a local buffer.
    te::Stage e = s[tile_out];
    auto [io, ii] = e.split(e.axis(0), I(plan.mr));
    auto [jo, ji] = e.split(e.axis(1), I(plan.nr()));
    e.reorder({io, jo, ii, ji});
    ir::IterVar tiles = FuseRange(e, {io, jo});
    if (parallel) e.parallel(tiles);
    auto [vo, vi] = e.split(ji, I(plan.lanes()));
    e.vectorize(vi);
    vnni::ComputeTileAt(s, accv, e, tiles, *intrin);
    for (const Tensor& out : req.outputs) {
      if (out.same_as(accv) || out.same_as(tile_out) || out.same_as(ap)) continue;
      ScheduleInjectiveStage(s, out, *req.target, knobs);
    }
    std::ostringstream text;
    text << "matmul int8 " << plan.isa->name << " (" << plan.isa->instruction
         << (plan.isa->centred ? ", centred int16" : "") << ") tile " << plan.mr << "x" << plan.nr()
         << ", B packed at compile time"
         << (row_sums.defined() ? ", row sums for B's zero points" : "") << ", epilogue at the register tile";
    return text.str();
  }, accv);
  return out;
}

}  // namespace ops
}  // namespace agate
