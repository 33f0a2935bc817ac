#include "core/ops/gemm.h"

#include <cstring>
#include <sstream>

#include "core/graph/shape_rules.h"
#include "core/ops/gemm_plan.h"
#include "core/ops/schedule_common.h"
#include "core/ops/weight_precision.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using te::Expr;
using te::Tensor;
using te::Var;

constexpr const char* kPackTag = "gemm_pack";  // not inlinable: a stage of its own

graph::Shape Lead(const graph::Shape& s) { return graph::Shape(s.begin(), s.end() - 2); }

bool AllOnes(const graph::Shape& s) {
  for (int64_t d : s)
    if (d != 1) return false;
  return true;
}

int64_t Product(const graph::Shape& s) {
  int64_t p = 1;
  for (int64_t d : s) p *= d;
  return p;
}

Expr I(int64_t v) { return Expr(v); }

// Everything the schedule needs to know about the stages BuildGemm made.
struct GemmStages {
  Tensor core;      // C' over padded rows and columns (the anchor)
  Tensor packed_b;  // the run-time packing stage, or undefined (B packed at compile time)
  Tensor result;    // the node's output: core itself or its view without padding
  GemmShape shape;
  GemmPlan plan;
  bool fold = false;  // batch folded into the rows
};

// B, a compile-time constant [K, N] (or [N, K] when transposed), as [panels, K, nr]
// column panels, zero past N; float32 panels stored as --precision asks (weight_precision.h).
Tensor PackConstant(const OpContext& ctx, const graph::Tensor& c, bool transposed, const GemmPlan& p,
                    const std::string& name) {
  int64_t k = transposed ? c.shape()[1] : c.shape()[0], n = transposed ? c.shape()[0] : c.shape()[1];
  graph::Tensor packed(c.dtype(), {p.panels, k, p.nr});
  const size_t esz = static_cast<size_t>(c.dtype().bytes());
  const auto* src = static_cast<const uint8_t*>(c.raw_data());
  auto* dst = static_cast<uint8_t*>(packed.mutable_raw_data());
  for (int64_t col = 0; col < n; ++col)
    for (int64_t row = 0; row < k; ++row) {
      int64_t from = transposed ? col * k + row : row * n + col;
      int64_t to = ((col / p.nr) * k + row) * p.nr + col % p.nr;
      std::memcpy(dst + to * esz, src + from * esz, esz);
    }
  return ctx.AddConstant(name + "_b_panels", NarrowWeights(packed, ctx.options().weight_precision));
}

// B [b_batch..., K, N] as [b_batch..., panels, K, nr] at run time, zero past N.
// Reads through whatever view B is (a transpose stays a read pattern here).
Tensor PackAtRunTime(const Tensor& b, const GemmPlan& p, const std::string& name) {
  graph::Shape bs = StaticShape(b);
  size_t nb = bs.size() - 2;
  int64_t k = bs[nb], n = bs[nb + 1];
  graph::Shape shape = Lead(bs);
  shape.push_back(p.panels);
  shape.push_back(k);
  shape.push_back(p.nr);
  return te::compute(
      ToExprShape(shape),
      [&](const std::vector<Var>& o) {
        Expr col = o[nb] * I(p.nr) + o[nb + 2];
        std::vector<Expr> idx(o.begin(), o.begin() + nb);
        idx.push_back(o[nb + 1]);
        idx.push_back(col);
        Expr v = b(idx);
        // Past N: zero; the read then carries the condition as its lane mask.
        if (p.padded_n() != n) v = ir::select(col < I(n), v, ir::make_zero(b.dtype()));
        return v;
      },
      name + "_b_packed", kPackTag);
}

// The row `row` of the folded rows (batch..., M flattened) as indices of A.
std::vector<Expr> UnflattenRow(Expr row, const graph::Shape& a_batch, int64_t m) {
  std::vector<Expr> idx(a_batch.size() + 1);
  idx[a_batch.size()] = a_batch.empty() || AllOnes(a_batch) ? row : ir::floormod(row, I(m));
  Expr rest = ir::floordiv(row, I(m));
  for (size_t d = a_batch.size(); d-- > 0;) {
    idx[d] = a_batch[d] == 1 ? I(0) : ir::floormod(rest, I(a_batch[d]));
    rest = ir::floordiv(rest, I(a_batch[d]));
  }
  return idx;
}

// The run-time packing: per task at the parallel loop (`block`: the written
// stage's fused (batch, column block[, row block]) loop), or once at the root,
// parallel over the panels.
void SchedulePacking(te::Schedule& s, const Tensor& packed, const GemmPlan& p, const te::Stage& out,
                     const ir::IterVar& block) {
  te::Stage st = s[packed];
  size_t rank = packed.ndim();
  if (p.pack_per_block) {
    st.compute_at(out, block);
  } else {
    std::vector<ir::IterVar> outer;
    for (size_t i = 0; i + 2 < rank; ++i) outer.push_back(st.axis(i));  // batch and panels
    ir::IterVar fused = FuseRange(st, outer);
    if (p.parallel) st.parallel(fused);
  }
  if (p.lanes > 1) st.vectorize(st.axis(rank - 1));
}

std::string ScheduleGemm(const ScheduleRequest& r, const GemmStages& g) {
  te::Schedule s = r.schedule;
  const GemmPlan& p = g.plan;
  // `out`: the stage written at the register tile, in the product's shape: the
  // fused epilogue, or the product itself when it is what the group writes (its
  // output, or the stage LowerGroup materializes for other outputs to read).
  Tensor out, acc;
  const graph::Shape shape = StaticShape(g.result);
  if (r.epilogue.defined() && StaticShape(r.epilogue) == shape) {
    out = r.epilogue;
  } else if (r.outputs.size() == 1 && StaticShape(r.outputs[0]) == shape) {
    out = r.outputs[0];
  } else {
    return ScheduleAnchorDefault(r, "gemm (several outputs: default schedule)");
  }
  if (out.same_as(g.core)) {
    acc = s.cache_write(g.core, ir::MemoryScope::kLocal);
  } else {
    acc = g.core;
    // The unpadded view of C' (the anchor, so LowerGroup kept it) is read in place.
    if (!g.result.same_as(g.core) && !out.same_as(g.result)) s[g.result].compute_inline();
  }

  // The written stage: (batch, column block, row block) fused and parallel; inside,
  // column panels, then register tiles of rows, then the tile's rows (unrolled)
  // and columns (vectors).
  te::Stage o = s[out];
  size_t rank = out.ndim();
  std::vector<ir::IterVar> batch_loops;
  ir::IterVar rows;
  if (g.fold) {
    // The batch folds into the rows: fuse the leading axes into one row loop.
    // Axes of extent 1 stay out of it (outermost, trivial): the epilogue may read
    // them as a constant 0 (a broadcast), and a row index fused with them would
    // then be a floormod that wraps in the padded last tile.
    std::vector<ir::IterVar> ones, lead;
    for (size_t i = 0; i + 1 < rank; ++i) (ConstExtent(o.axis(i)) == 1 ? ones : lead).push_back(o.axis(i));
    if (!ones.empty()) {
      std::vector<ir::IterVar> order = ones;
      order.insert(order.end(), lead.begin(), lead.end());
      order.push_back(o.axis(rank - 1));
      o.reorder(order);
    }
    batch_loops = ones;
    rows = FuseRange(o, lead);
  } else {
    for (size_t i = 0; i + 2 < rank; ++i) batch_loops.push_back(o.axis(i));
    rows = o.axis(rank - 2);
  }
  auto [ro, ri] = o.split(rows, I(p.mr));
  auto [jo, ji] = o.split(o.axis(rank - 1), I(p.nr));
  auto [rb, ro2] = o.split(ro, I(p.row_block));
  auto [cb, jo2] = o.split(jo, I(p.col_block));
  std::vector<ir::IterVar> order = batch_loops;
  for (const ir::IterVar& iv : {cb, rb, jo2, ro2, ri, ji}) order.push_back(iv);
  o.reorder(order);
  std::vector<ir::IterVar> blocks = batch_loops;
  blocks.push_back(cb);
  if (p.parallel_rows) blocks.push_back(rb);
  ir::IterVar block = FuseRange(o, blocks);
  if (p.parallel) o.parallel(block);
  o.unroll(ri);
  if (p.lanes > 1) o.vectorize(ji);
  if (g.packed_b.defined()) SchedulePacking(s, g.packed_b, p, o, block);

  te::Stage a = s[acc];
  size_t arank = acc.ndim();
  std::vector<ir::IterVar> acc_order;
  for (size_t i = 0; i + 2 < arank; ++i) acc_order.push_back(a.axis(i));
  if (p.kc >= g.shape.k) {
    // The register tile accumulates all of K.
    a.compute_at(o, ro2);
    acc_order.push_back(a.reduce_axis(0));
    acc_order.push_back(a.axis(arank - 2));
    acc_order.push_back(a.axis(arank - 1));
    a.reorder(acc_order);
    a.unroll(a.axis(arank - 2));
    if (p.lanes > 1) a.vectorize(a.axis(arank - 1));
  } else {
    // K in slices: the block's C' in a local buffer, each slice streaming its B
    // panels past every register tile of the block; the epilogue reads the buffer.
    a.compute_at(o, p.parallel_rows ? block : rb);
    auto [aio, aii] = a.split(a.axis(arank - 2), I(p.mr));
    auto [ajo, aji] = a.split(a.axis(arank - 1), I(p.nr));
    auto [ko, ki] = a.split(a.reduce_axis(0), I(p.kc));
    for (const ir::IterVar& iv : {ko, ajo, aio, ki, aii, aji}) acc_order.push_back(iv);
    a.reorder(acc_order);
    a.unroll(aii);
    if (p.lanes > 1) a.vectorize(aji);
  }
  std::ostringstream text;
  text << (g.fold || g.shape.batch == 1 ? "gemm" : "batch_gemm") << " " << p.Describe(g.shape) << ", B "
       << (!g.packed_b.defined() ? "packed at compile time" : p.pack_per_block ? "packed per block" : "packed at run time")
       << (!r.epilogue.defined() ? "" : p.kc >= g.shape.k ? ", epilogue at the register tile" : ", epilogue per block");
  return text.str();
}

}  // namespace

int64_t GemmRows(const graph::Shape& a_shape, const graph::Shape& b_shape) {
  int64_t m = a_shape[a_shape.size() - 2];
  return AllOnes(Lead(b_shape)) ? Product(Lead(a_shape)) * m : m;
}

Tensor BuildGemm(const OpContext& ctx, const GemmOperands& in, const std::string& name) {
  const Tensor& a = in.a;
  graph::Shape as = StaticShape(a);
  graph::Shape bs = in.b_constant ? (in.b_constant_transposed
                                         ? graph::Shape{in.b_constant->shape()[1], in.b_constant->shape()[0]}
                                         : in.b_constant->shape())
                                  : StaticShape(in.b);
  graph::Shape a_batch = Lead(as), b_batch = Lead(bs);
  graph::Shape batch = graph::BroadcastShapes(a_batch, b_batch, name);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  AGATE_REQUIRE(bs[bs.size() - 2] == k, kInvalidArgument)
      << ctx.Describe() << ": inner dimensions differ (" << graph::ShapeToString(as) << " x "
      << graph::ShapeToString(bs) << ")";

  GemmStages g;
  g.fold = AllOnes(b_batch);
  g.shape.batch = g.fold ? 1 : Product(batch);
  g.shape.rows = g.fold ? Product(batch) * m : m;
  g.shape.n = n;
  g.shape.k = k;
  g.shape.b_packed_at_run_time = !(in.b_constant != nullptr && b_batch.empty());
  g.plan = PlanGemm(g.shape, a.dtype(), ctx.target(), ctx.options());
  const GemmPlan& p = g.plan;

  Tensor bp;
  bool constant_panels = in.b_constant != nullptr && b_batch.empty();
  if (constant_panels) {
    bp = PackConstant(ctx, *in.b_constant, in.b_constant_transposed, p, name);
  } else {
    AGATE_REQUIRE(in.b.defined(), kInternal) << ctx.Describe() << ": B is neither a tensor nor a 2-D constant";
    bp = PackAtRunTime(in.b, p, name);
    g.packed_b = bp;
  }

  // C' over whole register tiles: rows past the last read row M-1 again (their
  // results are never stored), columns past N multiply B's zero padding.
  const size_t nbo = g.fold ? 0 : batch.size();
  const int64_t rows = g.shape.rows, mp = p.padded_rows(), np = p.padded_n();
  graph::Shape core_shape(batch.begin(), batch.begin() + nbo);
  core_shape.push_back(mp);
  core_shape.push_back(np);
  graph::Shape out_shape = batch;
  out_shape.push_back(m);
  out_shape.push_back(n);
  bool direct = core_shape == out_shape;  // no padding, no folding: C' is the output
  ir::IterVar rk = te::reduce_axis({I(0), I(k)}, "k");
  g.core = te::compute(
      ToExprShape(core_shape),
      [&](const std::vector<Var>& o) {
        Expr i = o[nbo], j = o[nbo + 1];
        Expr row = mp != rows ? ir::min(i, I(rows - 1)) : Expr(i);
        std::vector<Expr> aidx;
        if (g.fold) {
          aidx = UnflattenRow(row, a_batch, m);
        } else {
          size_t lead = nbo - a_batch.size();
          for (size_t d = 0; d < a_batch.size(); ++d) aidx.push_back(a_batch[d] == 1 ? I(0) : Expr(o[lead + d]));
          aidx.push_back(row);
        }
        aidx.push_back(rk);
        std::vector<Expr> bidx;
        if (!constant_panels) {
          size_t lead = nbo - std::min(nbo, b_batch.size());
          for (size_t d = 0; d < b_batch.size(); ++d)
            bidx.push_back(g.fold || b_batch[d] == 1 ? I(0) : Expr(o[lead + d]));
        }
        bidx.push_back(ir::floordiv(j, I(p.nr)));
        bidx.push_back(rk);
        bidx.push_back(ir::floormod(j, I(p.nr)));
        return te::sum(a(aidx) * WidenedWeight(bp(bidx), a.dtype()), {rk});
      },
      direct ? name : name + "_gemm", nbo == 0 ? tag::kDense : tag::kBatchMatmul);

  if (direct) {
    g.result = g.core;
  } else {
    const size_t nb = batch.size();
    g.result = te::compute(
        ToExprShape(out_shape),
        [&](const std::vector<Var>& o) {
          std::vector<Expr> idx;
          if (g.fold) {
            Expr flat = I(0);
            for (size_t d = 0; d < nb; ++d) flat = flat * I(batch[d]) + o[d];
            idx.push_back(flat * I(m) + o[nb]);
          } else {
            idx.assign(o.begin(), o.begin() + nb + 1);
          }
          idx.push_back(o[nb + 1]);
          return g.core(idx);
        },
        name, tag::kInjective);
  }
  GemmStages stages = g;
  // Anchored on the product in its own shape (the view when C' is padded): what
  // LowerGroup matches the group's outputs and epilogue against.
  ctx.SetSchedule([stages](const ScheduleRequest& r) { return ScheduleGemm(r, stages); }, g.result);
  return g.result;
}

}  // namespace ops
}  // namespace agate
