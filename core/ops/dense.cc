#include "core/ops/dense.h"

#include "core/graph/shape_rules.h"

#include <sstream>

#include "core/ops/cuda/cuda_schedules.h"
#include "core/ops/gemm.h"
#include "core/ops/op_context.h"
#include "core/ops/registry.h"
#include "core/ops/schedule_common.h"
#include "core/ops/weight_precision.h"
#include "core/support/error.h"

namespace agate {
namespace ops {

using te::Expr;
using te::Tensor;
using te::Var;

Tensor BatchMatmul(const Tensor& a, const Tensor& b, const std::string& name) {
  graph::Shape as = StaticShape(a), bs = StaticShape(b);
  size_t ra = as.size(), rb = bs.size();
  graph::Shape batch_a(as.begin(), as.end() - 2), batch_b(bs.begin(), bs.end() - 2);
  graph::Shape batch = graph::BroadcastShapes(batch_a, batch_b, name);
  int64_t k = as[ra - 1];
  graph::Shape out = batch;
  out.push_back(as[ra - 2]);
  out.push_back(bs[rb - 1]);
  ir::IterVar rk = te::reduce_axis({Expr(int64_t{0}), Expr(k)}, "k");
  size_t nb = batch.size();
  std::string t = nb == 0 ? tag::kDense : tag::kBatchMatmul;
  return te::compute(
      ToExprShape(out),
      [&](const std::vector<Var>& o) {
        auto index = [&](const graph::Shape& bshape, Expr row, Expr col) {
          std::vector<Expr> idx;
          size_t lead = nb - bshape.size();
          for (size_t i = 0; i < bshape.size(); ++i)
            idx.push_back(bshape[i] == 1 ? Expr(int64_t{0}) : Expr(o[lead + i]));
          idx.push_back(row);
          idx.push_back(col);
          return idx;
        };
        return te::sum(a(index(batch_a, o[nb], rk)) * b(index(batch_b, rk, o[nb + 1])), {rk});
      },
      name, t);
}

namespace {

// Output columns per register tile (and per packed panel of a constant B):
// two vectors when N allows, else one, else 8 or 4 columns. A wide N that no
// vector width divides (GPT-2's 50257-word vocabulary: 29 x 1733) still gets
// two-vector tiles: the last tile is partial (its lanes past N masked off by the
// lowering's tail guard) and packed panels are padded with zero columns. Scalar
// columns instead ran that 154 MB matrix-vector product at 0.3 GFLOP/s.
int64_t DenseNBlock(int64_t n, int lanes, const LowerGroupOptions& o) {
  if (o.dense_n_block > 0 && n % o.dense_n_block == 0) return o.dense_n_block;
  for (int64_t v : {int64_t{2} * lanes, int64_t{lanes}, int64_t{8}, int64_t{4}})
    if (v > 1 && v <= 2 * lanes && n % v == 0) return v;
  if (lanes > 1 && n >= 16 * lanes) return 2 * lanes;
  return 1;
}

}  // namespace

// Register-tiled schedule of a product with one row per batch (matrix-vector:
// bound by reading B): the output tile (m_block x n_block) accumulates in a
// local buffer over k, then the epilogue writes it once. `padded_core`, when
// defined, is the product over whole column tiles that the anchor (a view
// without the padding) reads: the tile then accumulates it unguarded, in
// registers, and only the written stage's last tile carries a lane mask.
std::string ScheduleMatVec(const ScheduleRequest& r, int lanes, const Tensor& padded_core) {
  te::Schedule s = r.schedule;
  Tensor out, acc;
  const bool padded = padded_core.defined() && !padded_core.same_as(r.anchor);
  if (r.epilogue.defined() && StaticShape(r.epilogue) == StaticShape(r.anchor)) {
    out = r.epilogue;
    acc = r.anchor;
  } else if (r.outputs.size() == 1 && r.outputs[0].same_as(r.anchor)) {
    acc = padded ? r.anchor : s.cache_write(r.anchor, ir::MemoryScope::kLocal);
    out = r.anchor;
  } else {
    return ScheduleAnchorDefault(r, "dense (default schedule)");
  }
  if (padded) {
    acc = padded_core;
    if (!out.same_as(r.anchor)) s[r.anchor].compute_inline();
  }
  graph::Shape os = StaticShape(out);
  size_t rank = os.size();
  if (lanes <= 0) lanes = VectorLanes(*r.target, out.dtype());
  int64_t n = os[rank - 1], m = os[rank - 2];
  int64_t nb = DenseNBlock(n, lanes, *r.options);
  int64_t mb = DivisorAtMost(m, r.options->dense_m_block > 0 ? r.options->dense_m_block : (lanes >= 16 ? 6 : 4));
  te::Stage o = s[out];
  auto t = o.tile(o.axis(rank - 2), o.axis(rank - 1), Expr(mb), Expr(nb));
  std::vector<ir::IterVar> outer;
  for (size_t i = 0; i + 2 < rank; ++i) outer.push_back(o.axis(i));
  // Row and column tiles together make the parallel loop: a batch-1 product has
  // one row tile, and its column tiles are all the parallelism there is.
  outer.push_back(t[0]);
  outer.push_back(t[1]);
  ir::IterVar fused = FuseRange(o, outer);
  // Parallel when there is enough work (multiply-adds, not outputs: a batch-1
  // FC layer has few outputs but reads megabytes of weights).
  int64_t k = ConstExtent(s[acc].reduce_axis(0));
  if (ParallelAllowed(*r.target) && r.options->allow_parallel && m * n * std::max<int64_t>(k, 1) >= 65536) {
    o.parallel(fused);
  }
  if (nb > 1) o.vectorize(t[3]);
  te::Stage a = s[acc];
  a.compute_at(o, fused);
  std::vector<ir::IterVar> order;
  for (size_t i = 0; i < rank; ++i) order.push_back(a.axis(i));
  order.insert(order.end() - 2, a.reduce_axis(0));
  a.reorder(order);
  a.unroll(a.axis(rank - 2));
  if (nb > 1) a.vectorize(a.axis(rank - 1));
  std::ostringstream text;
  text << (rank > 2 ? "batch_matmul" : "dense") << " m_block=" << mb << " n_block=" << nb
       << (padded ? ", columns padded to whole tiles" : "") << (r.epilogue.defined() ? ", epilogue at the register tile" : "");
  return text.str();
}

namespace {

// The product and the stage the schedule accumulates: equal, or (columns padded to whole
// panels) the padded product and its view.
struct MatVecProduct {
  Tensor result;  // [..., M, N]: the node's product
  Tensor core;    // [..., M, panels * nb] when N is ragged, else `result`
};

void SetMatVecSchedule(const OpContext& ctx, const MatVecProduct& p) {
  Tensor core = p.core;
  ctx.SetSchedule([core](const ScheduleRequest& r) { return ScheduleMatVec(r, 0, core); }, p.result);
  ctx.SetCudaSchedule(cuda::ScheduleDense, p.result);
}

// B as [K, N] (a [N, K] operand with transB is read transposed).
Tensor RightOperand(const OpContext& ctx, bool trans_b) {
  const Tensor& b = ctx.input(1);
  if (!trans_b) return b;
  graph::Shape bs = StaticShape(b);
  return te::compute(ToExprShape({bs[1], bs[0]}), [&](Var k, Var n) { return b(n, k); },
                     ctx.node().outputs[0] + "_bt", tag::kInjective);
}

// A constant float32 B packed at compile time into [N/nb, K, nb] panels, nb
// the schedule's column tile: each output tile then streams one contiguous
// panel instead of nb columns strided by N. Why: with batch-1 inference the
// dense layers are matrix-vector products bound by reading B (VGG-16's first
// FC layer reads 411 MB); strided rows touch a new page per k and run at a
// fraction of the memory bandwidth. The panels are stored as --precision asks
// (float16/bfloat16 halve those bytes; weight_precision.h). Undefined when B is
// not such a constant.
Tensor PackedRightOperand(const OpContext& ctx, bool trans_b, int64_t nb) {
  // GPUs stage tiles of B in shared memory instead (cuda::ScheduleDense).
  if (ctx.target().kind() == target::TargetKind::kCUDA) return Tensor();
  const graph::Tensor* c = ctx.constant(1);
  if (c == nullptr || c->dtype() != ir::DType::Float(32) || c->shape().size() != 2 || nb <= 1) return Tensor();
  int64_t k = trans_b ? c->shape()[1] : c->shape()[0], n = trans_b ? c->shape()[0] : c->shape()[1];
  // A partial last panel is padded with zero columns (zero-filled by the Tensor constructor).
  graph::Tensor packed(c->dtype(), {(n + nb - 1) / nb, k, nb});
  const float* src = c->data<float>();
  float* dst = packed.mutable_data<float>();
  for (int64_t col = 0; col < n; ++col)
    for (int64_t row = 0; row < k; ++row)
      dst[((col / nb) * k + row) * nb + col % nb] = trans_b ? src[col * k + row] : src[row * n + col];
  return ctx.AddConstant(ctx.node().outputs[0] + "_b_panels", NarrowWeights(packed, ctx.options().weight_precision));
}

// cuda targets: a constant float32 B stored as --precision asks, in its own layout (GPUs
// stage tiles of B in shared memory instead of reading packed panels), read through a stage
// that widens it and that LowerGroup inlines into the product: [K, N], B read transposed when
// trans_b. Undefined for float32 weights, another B, or weights a float16 cannot hold.
Tensor NarrowRightOperand(const OpContext& ctx, bool trans_b) {
  const ir::DType precision = ctx.options().weight_precision;
  if (ctx.target().kind() != target::TargetKind::kCUDA || precision == ir::DType::Float(32)) return Tensor();
  const graph::Tensor* c = ctx.constant(1);
  if (c == nullptr || c->dtype() != ir::DType::Float(32) || c->shape().size() != 2) return Tensor();
  graph::Tensor narrow = NarrowWeights(*c, precision);
  if (narrow.dtype() != precision) return Tensor();
  Tensor stored = ctx.AddConstant(ctx.node().outputs[0] + "_b_narrow", narrow);
  const graph::Shape& cs = c->shape();
  int64_t k = trans_b ? cs[1] : cs[0], n = trans_b ? cs[0] : cs[1];
  return te::compute(ToExprShape({k, n}), [&](Var kk, Var nn) {
    return WidenedWeight(trans_b ? stored(nn, kk) : stored(kk, nn), ir::DType::Float(32));
  }, ctx.node().outputs[0] + "_b_wide", tag::kInjective);
}

// a [..., M, K] x B packed as [ceil(N/nb), K, nb] -> [..., M, N] (a decoder step's
// [1, 1, K] activations too: B has no batch, so every leading axis is a row).
// A ragged N (GPT-2's 50257-word vocabulary) is computed over whole panels (the
// padding columns multiply zeros) and viewed without them: a product over N
// itself would guard every tile's loads, FMAs and accumulator with the tail's
// lane mask, which kept the accumulator in memory and ran that 154 MB product
// 6.8x slower than over 50256 columns on AVX2 (masked loads and stores).
MatVecProduct DenseWithPanels(const Tensor& a, const Tensor& panels, int64_t n_cols, const std::string& name) {
  graph::Shape as = StaticShape(a), ps = StaticShape(panels);
  int64_t nb = ps[2], padded_cols = ps[0] * nb;
  ir::IterVar rk = te::reduce_axis({Expr(int64_t{0}), Expr(ps[1])}, "k");
  graph::Shape shape = as;
  shape.back() = padded_cols;
  const bool ragged = padded_cols != n_cols;
  MatVecProduct p;
  p.core = te::compute(ToExprShape(shape), [&](const std::vector<Var>& o) {
    std::vector<Expr> ai(o.begin(), o.end() - 1);
    ai.push_back(rk);
    Expr n = o.back();
    Expr b = panels(ir::floordiv(n, Expr(nb)), rk, ir::floormod(n, Expr(nb)));
    return te::sum(a(ai) * WidenedWeight(b, a.dtype()), {rk});
  }, ragged ? name + "_padded" : name, shape.size() == 2 ? tag::kDense : tag::kBatchMatmul);
  if (!ragged) {
    p.result = p.core;
    return p;
  }
  graph::Shape out = as;
  out.back() = n_cols;
  Tensor core = p.core;
  p.result = te::compute(ToExprShape(out), [&](const std::vector<Var>& o) {
    return core(std::vector<Expr>(o.begin(), o.end()));
  }, name, tag::kInjective);
  return p;
}

// The product without packed panels: B read as given.
MatVecProduct UnpackedProduct(const Tensor& a, const Tensor& b, const std::string& name) {
  Tensor prod = BatchMatmul(a, b, name);
  return {prod, prod};
}

// B as the matrix-vector and cuda products read it: narrow (NarrowRightOperand) or as given.
Tensor RightOperandAsStored(const OpContext& ctx, bool trans_b) {
  Tensor narrow = NarrowRightOperand(ctx, trans_b);
  return narrow.defined() ? narrow : RightOperand(ctx, trans_b);
}

std::vector<Tensor> GemmOp(const OpContext& ctx) {
  bool ta = ctx.attrs().GetInt("transA", 0) != 0, tb = ctx.attrs().GetInt("transB", 0) != 0;
  double alpha = ctx.attrs().GetFloat("alpha", 1.0), beta = ctx.attrs().GetFloat("beta", 1.0);
  Tensor a = ctx.input(0);
  AGATE_REQUIRE(a.dtype().is_float(), kUnsupported) << ctx.Describe() << ": Gemm of " << a.dtype();
  std::string name = ctx.node().outputs[0];
  if (ta) {
    graph::Shape as = StaticShape(a);
    Tensor orig = a;
    a = te::compute(ToExprShape({as[1], as[0]}), [&](Var i, Var k) { return orig(k, i); }, name + "_at",
                    tag::kInjective);
  }
  bool has_c = ctx.has_input(2) && beta != 0.0;
  std::string prod_name = has_c || alpha != 1.0 ? name + "_mm" : name;
  int64_t n = ctx.output_type(0).shape[1];
  Tensor prod;
  // GPUs stage tiles of B in shared memory (cuda::ScheduleDense) instead of packing it.
  const bool cuda = ctx.target().kind() == target::TargetKind::kCUDA;
  if (!cuda && GemmRows(StaticShape(a), ctx.output_type(0).shape) > 1 && n > 1) {
    GemmOperands operands;
    operands.a = a;
    const graph::Tensor* c = ctx.constant(1);
    if (c != nullptr && c->shape().size() == 2) {
      operands.b_constant = c;
      operands.b_constant_transposed = tb;
    } else {
      operands.b = RightOperand(ctx, tb);
    }
    prod = BuildGemm(ctx, operands, prod_name);
  } else {
    Tensor panels = PackedRightOperand(ctx, tb, DenseNBlock(n, VectorLanes(ctx.target(), a.dtype()), ctx.options()));
    MatVecProduct mv = panels.defined() ? DenseWithPanels(a, panels, n, prod_name)
                                        : UnpackedProduct(a, RightOperandAsStored(ctx, tb), prod_name);
    prod = mv.result;
    SetMatVecSchedule(ctx, mv);
  }
  Tensor out = prod;
  if (has_c || alpha != 1.0) {
    Tensor c = has_c ? ctx.input(2) : Tensor();
    out = te::compute(prod.shape(), [&](const std::vector<Var>& i) {
      Expr v = prod(std::vector<Expr>(i.begin(), i.end()));
      if (alpha != 1.0) v = v * alpha;
      if (has_c) v = v + (beta == 1.0 ? BroadcastRead(c, i) : BroadcastRead(c, i) * beta);
      return v;
    }, name, tag::kBroadcast);
  }
  return {out};
}

std::vector<Tensor> MatMulOp(const OpContext& ctx) {
  Tensor a = ctx.input(0), b = ctx.input(1);
  graph::Shape as = StaticShape(a), bs = StaticShape(b);
  std::string name = ctx.node().outputs[0];
  bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  const bool cuda = ctx.target().kind() == target::TargetKind::kCUDA;
  if (!cuda && !a_vec && !b_vec && GemmRows(as, bs) > 1 && bs.back() > 1) {
    GemmOperands operands;
    operands.a = a;
    operands.b = b;
    const graph::Tensor* c = ctx.constant(1);
    if (c != nullptr && bs.size() == 2) operands.b_constant = c;
    return {BuildGemm(ctx, operands, name)};
  }
  if (a_vec) {
    Tensor orig = a;
    a = te::compute(ToExprShape({1, as[0]}), [&](Var, Var k) { return orig(k); }, name + "_a2", tag::kInjective);
  }
  if (b_vec) {
    Tensor orig = b;
    b = te::compute(ToExprShape({bs[0], 1}), [&](Var k, Var) { return orig(k); }, name + "_b2", tag::kInjective);
  }
  bool reshape = a_vec || b_vec;
  if (!b_vec) {
    if (Tensor narrow = NarrowRightOperand(ctx, false); narrow.defined()) b = narrow;
  }
  Tensor panels;
  if (as.size() >= 2 && bs.size() == 2) {
    panels = PackedRightOperand(ctx, false, DenseNBlock(bs[1], VectorLanes(ctx.target(), a.dtype()), ctx.options()));
  }
  MatVecProduct mv = panels.defined() ? DenseWithPanels(a, panels, bs[1], name)
                                      : UnpackedProduct(a, b, reshape ? name + "_mm" : name);
  Tensor prod = mv.result;
  Tensor out = prod;
  if (reshape) {
    graph::Shape ps = StaticShape(prod);
    out = te::compute(ToExprShape(ctx.output_type(0).shape), [&](const std::vector<Var>& i) {
      std::vector<Expr> idx(i.begin(), i.end());
      if (a_vec && b_vec) return prod(Expr(int64_t{0}), Expr(int64_t{0}));
      if (a_vec) idx.insert(idx.end() - 1, Expr(int64_t{0}));
      else idx.push_back(Expr(int64_t{0}));
      return prod(idx);
    }, name, tag::kInjective);
  }
  SetMatVecSchedule(ctx, mv);
  return {out};
}

}  // namespace

void RegisterDenseOps(OpTable* t) {
  t->Register("Gemm", GemmOp);
  t->Register("MatMul", MatMulOp);
}

}  // namespace ops
}  // namespace agate
