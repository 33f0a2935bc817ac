// RunTimeNonZero, RunTimeCompress and RunTimeUnique: selections whose output extents depend on
// values that arrive when the model runs (core/graph/ops_sequence.cc types each output with an
// upper bound; Graph::run_time_extents names the extents outputs, run_time_extents.h).
//
// Why counting reductions: which elements are kept is known only when the kernel runs, and a
// kernel of tensor expressions has no scatter or running counter; so each candidate counts the
// kept candidates before it (its output position), and each output position reduces over the
// candidates to find the one that lands there. NonZero and Compress count in two levels
// (Compact: blocks of sqrt(n), n * sqrt(n) work for n candidates); Unique compares every pair of
// items (n * n, times the slice size), as TopK ranks by counting (transform.cc): the price of
// data-dependent extents without a sequential scan in the loop IR. Every read is clamped into
// its tensor, so the kernels read in bounds whatever the values, and nothing needs a run-time
// check: no value can exceed the bounds.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/graph/shape_rules.h"
#include "core/ops/op_context.h"
#include "core/ops/registry.h"
#include "core/ops/run_time_extents.h"
#include "core/ops/transform.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using te::Expr;
using te::Tensor;
using te::Var;

const ir::DType kI64 = ir::DType::Int(64);

Expr I(int64_t v) { return Expr(v); }
Expr One() { return ir::make_const(kI64, 1); }
Expr Zero() { return ir::make_zero(kI64); }
Expr Clamp(const Expr& v, int64_t hi) { return ir::min(ir::max(v, I(0)), I(std::max<int64_t>(hi, 0))); }
// A stored int64 read as an index into [0, hi].
Expr IndexAt(const Tensor& t, const Expr& i, int64_t hi) { return Clamp(ir::cast(ir::DType::Index(), t(i)), hi); }

// The selection of `n` candidates where keep(i) holds: each candidate's output position
// (`before`, the kept candidates before it), the kept count (`total`, one element) and, for
// each output position, the candidate that lands there (`source`; positions past the count
// read 0).
//
// Two levels, so that the cost is n * sqrt(n), not n * n: the candidates fall into blocks of
// sqrt(n); each block counts its kept candidates, each block's start is the sum of the counts
// before it, a candidate's position is its block's start plus the kept candidates before it in
// its block; an output position finds its block (the blocks that end at or before it) and then
// the candidate of that block landing on it.
struct Compaction {
  Tensor before, total, source;
};

Compaction Compact(int64_t n, const std::function<Expr(Expr)>& keep, const std::string& name) {
  const int64_t block = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(n)))));
  const int64_t blocks = (n + block - 1) / block;
  // keep at candidate i, false past the last one (the last block may be partial).
  auto kept = [&](Expr i) { return i < I(n) && keep(ir::min(i, I(n - 1))); };
  ir::IterVar t = te::reduce_axis({I(0), I(block)}, "t");
  Tensor count = te::compute({I(blocks)}, [&](const std::vector<Var>& o) {
    return te::sum(ir::select(kept(Expr(o[0]) * I(block) + Expr(t)), One(), Zero()), {t});
  }, name + "_block_count", tag::kReduce);
  ir::IterVar b = te::reduce_axis({I(0), I(blocks)}, "b");
  Tensor start = te::compute({I(blocks)}, [&](const std::vector<Var>& o) {
    return te::sum(ir::select(Expr(b) < Expr(o[0]), count(Expr(b)), Zero()), {b});
  }, name + "_block_start", tag::kReduce);
  Compaction c;
  ir::IterVar u = te::reduce_axis({I(0), I(block)}, "u");
  c.before = te::compute({I(n)}, [&](const std::vector<Var>& o) {
    Expr first = ir::floordiv(Expr(o[0]), I(block)) * I(block);
    Expr earlier = first + Expr(u) < Expr(o[0]) && kept(first + Expr(u));
    return te::sum(ir::select(earlier, One(), Zero()), {u}, Expr(), start(ir::floordiv(Expr(o[0]), I(block))));
  }, name + "_before", tag::kReduce);
  c.total = te::compute({I(1)}, [&](const std::vector<Var>&) {
    return start(I(blocks - 1)) + count(I(blocks - 1));
  }, name + "_total", tag::kInjective);
  ir::IterVar e = te::reduce_axis({I(0), I(blocks)}, "e");
  Tensor home = te::compute({I(n)}, [&](const std::vector<Var>& o) {
    Expr ended = ir::cast(ir::DType::Index(), start(Expr(e)) + count(Expr(e))) <= Expr(o[0]);
    return te::sum(ir::select(ended, One(), Zero()), {e});
  }, name + "_block_of", tag::kReduce);
  ir::IterVar v = te::reduce_axis({I(0), I(block)}, "v");
  c.source = te::compute({I(n)}, [&](const std::vector<Var>& o) {
    Expr candidate = Clamp(ir::cast(ir::DType::Index(), home(Expr(o[0]))), blocks - 1) * I(block) + Expr(v);
    Expr lands = kept(candidate) &&
                 ir::cast(ir::DType::Index(), c.before(ir::min(candidate, I(n - 1)))) == Expr(o[0]);
    return te::sum(ir::select(lands, ir::cast(kI64, candidate), Zero()), {v});
  }, name + "_source", tag::kReduce);
  return c;
}

// x != 0 (NaN counts as nonzero, as numpy's nonzero).
Expr IsNonZero(const Expr& v) {
  Expr zero = ir::make_zero(v.dtype());
  return v.dtype().is_float() ? !(v == zero) : v != zero;
}

// Unique's order of values, as the reference's: NaNs equal one another and above every number
// (numpy's unique).
Expr IsNaN(const Expr& v) { return !(v == v); }
Expr SameValue(const Expr& a, const Expr& b) {
  if (!a.dtype().is_float()) return a == b;
  return a == b || (IsNaN(a) && IsNaN(b));
}
Expr Below(const Expr& a, const Expr& b) {
  if (!a.dtype().is_float()) return a < b;
  return a < b || (!IsNaN(a) && IsNaN(b));
}

std::vector<Tensor> RunTimeNonZeroOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  graph::Shape xs = StaticShape(x);
  graph::Shape shape = xs.empty() ? graph::Shape{1} : xs;  // a scalar counts as one axis
  const int64_t rank = static_cast<int64_t>(shape.size()), n = graph::NumElements(xs);
  const std::string& name = ctx.node().outputs[0];
  auto element = [&](Expr f) { return x(Unravel(f, xs)); };
  Compaction c = Compact(n, [&](Expr f) { return IsNonZero(element(f)); }, name);
  Expr count = ir::cast(ir::DType::Index(), c.total(I(0)));
  // Output element f of the [rank, count] coordinates: axis f / count of the element that lands
  // at position f % count.
  Tensor coordinates = te::compute({I(rank * n)}, [&](const std::vector<Var>& o) {
    Expr at = ir::max(count, I(1));
    Expr axis = ir::floordiv(Expr(o[0]), at);
    Expr flat = IndexAt(c.source, ir::floormod(Expr(o[0]), at), n - 1);
    std::vector<Expr> index = Unravel(flat, shape);
    Expr coordinate = index[rank - 1];
    for (int64_t d = rank - 2; d >= 0; --d) coordinate = ir::select(axis == I(d), index[d], coordinate);
    return ir::cast(kI64, coordinate);
  }, name, tag::kInjective);
  return {coordinates, ExtentsTensor({I(rank), count}, ctx.node().outputs[1])};
}

// Compress along an axis, or of the flattened input (no axis): the condition (input 1, of at
// most the selected extent; entries past it are false) is read when the kernel runs.
std::vector<Tensor> RunTimeCompressOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& condition = ctx.input(1);
  graph::Shape xs = StaticShape(x);
  const int64_t entries = StaticShape(condition)[0];
  AGATE_REQUIRE(entries > 0, kInvalidArgument) << ctx.Describe() << ": the condition has no entries";
  const bool has_axis = ctx.attrs().Has("axis");
  const int axis =
      has_axis ? graph::NormalizeAxis(ctx.attrs().GetInt("axis"), static_cast<int>(xs.size()), ctx.Describe()) : 0;
  const int64_t n = has_axis ? xs[axis] : graph::NumElements(xs);
  const std::string& name = ctx.node().outputs[0];
  auto keep = [&](Expr i) {
    Expr c = condition(ir::min(i, I(entries - 1)));
    return i < I(entries) && c != ir::make_zero(c.dtype());
  };
  Compaction c = Compact(n, keep, name);
  Expr count = ir::cast(ir::DType::Index(), c.total(I(0)));
  graph::Shape bounds = ctx.output_type(0).shape;
  std::vector<Expr> extents = ToExprShape(bounds);
  extents[has_axis ? axis : 0] = count;
  Tensor out = te::compute({I(graph::NumElements(bounds))}, [&](const std::vector<Var>& o) {
    std::vector<Expr> at = CompactIndex(Expr(o[0]), extents, bounds);
    if (!has_axis) return x(Unravel(IndexAt(c.source, at[0], n - 1), xs));
    at[axis] = IndexAt(c.source, at[axis], n - 1);
    return x(at);
  }, name, tag::kInjective);
  return {out, ExtentsTensor(extents, ctx.node().outputs[1])};
}

// Unique over items (elements, or slices along the axis), as the reference (value_selection.h):
// an item is a first occurrence when no earlier item equals it; its output position counts the
// first occurrences before it (unsorted) or below it (sorted); every item maps to the position
// of the first occurrence equal to it. Slices compare at their first differing element.
std::vector<Tensor> RunTimeUniqueOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  graph::Shape xs = StaticShape(x);
  const int rank = static_cast<int>(xs.size());
  const bool has_axis = ctx.attrs().Has("axis");
  const int axis = has_axis ? graph::NormalizeAxis(ctx.attrs().GetInt("axis"), rank, ctx.Describe()) : -1;
  const bool sorted = ctx.attrs().GetInt("sorted", 1) != 0;
  const int64_t n = has_axis ? xs[axis] : graph::NumElements(xs);
  int64_t inner = 1;
  for (int d = axis + 1; has_axis && d < rank; ++d) inner *= xs[d];
  const int64_t size = has_axis ? graph::NumElements(xs) / n : 1;  // elements per item
  const std::vector<std::string>& outs = ctx.node().outputs;
  // Element e of item i (x viewed as [outer, n, inner], e = outer index * inner + inner index).
  auto element = [&](Expr i, Expr e) {
    if (!has_axis) return x(Unravel(i, xs));
    Expr flat = (ir::floordiv(e, I(inner)) * I(n) + i) * I(inner) + ir::floormod(e, I(inner));
    return x(Unravel(flat, xs));
  };
  // The first element where items a and b differ (size when they are equal).
  Tensor differ;
  if (size > 1) {
    ir::IterVar e = te::reduce_axis({I(0), I(size)}, "e");
    differ = te::compute({I(n), I(n)}, [&](const std::vector<Var>& o) {
      Expr same = SameValue(element(o[0], e), element(o[1], e));
      return te::min(ir::select(!same, ir::cast(kI64, Expr(e)), ir::make_const(kI64, size)), {e});
    }, outs[0] + "_differ", tag::kReduce);
  }
  auto equal = [&](Expr a, Expr b) {
    return size > 1 ? differ(a, b) == ir::make_const(kI64, size) : SameValue(element(a, I(0)), element(b, I(0)));
  };
  auto less = [&](Expr a, Expr b) {
    if (size == 1) return Below(element(a, I(0)), element(b, I(0)));
    Expr at = Clamp(ir::cast(ir::DType::Index(), differ(a, b)), size - 1);
    return differ(a, b) < ir::make_const(kI64, size) && Below(element(a, at), element(b, at));
  };
  ir::IterVar q = te::reduce_axis({I(0), I(n)}, "q");
  Tensor repeats = te::compute({I(n)}, [&](const std::vector<Var>& o) {
    return te::sum(ir::select(Expr(q) < Expr(o[0]) && equal(q, o[0]), One(), Zero()), {q});
  }, outs[0] + "_repeats", tag::kReduce);
  auto first = [&](Expr i) { return repeats(i) == Zero(); };
  ir::IterVar r = te::reduce_axis({I(0), I(n)}, "r");
  Tensor order = te::compute({I(n)}, [&](const std::vector<Var>& o) {
    Expr ahead = sorted ? less(r, o[0]) : Expr(r) < Expr(o[0]);
    return te::sum(ir::select(first(r) && ahead, One(), Zero()), {r});
  }, outs[0] + "_order", tag::kReduce);
  ir::IterVar k = te::reduce_axis({I(0), I(n)}, "k");
  Tensor total = te::compute({I(1)}, [&](const std::vector<Var>&) {
    return te::sum(ir::select(first(k), One(), Zero()), {k});
  }, outs[0] + "_total", tag::kReduce);
  ir::IterVar s = te::reduce_axis({I(0), I(n)}, "s");
  Tensor indices = te::compute({I(n)}, [&](const std::vector<Var>& o) {
    Expr lands = first(s) && ir::cast(ir::DType::Index(), order(Expr(s))) == Expr(o[0]);
    return te::sum(ir::select(lands, ir::cast(kI64, Expr(s)), Zero()), {s});
  }, outs[2], tag::kReduce);
  ir::IterVar f = te::reduce_axis({I(0), I(n)}, "f");
  Tensor inverse = te::compute({I(n)}, [&](const std::vector<Var>& o) {
    return te::sum(ir::select(first(f) && equal(f, o[0]), order(Expr(f)), Zero()), {f});
  }, outs[4], tag::kReduce);
  ir::IterVar m = te::reduce_axis({I(0), I(n)}, "m");
  Tensor counts = te::compute({I(n)}, [&](const std::vector<Var>& o) {
    Expr pick = IndexAt(indices, o[0], n - 1);
    return te::sum(ir::select(equal(m, pick), One(), Zero()), {m});
  }, outs[6], tag::kReduce);
  Expr count = ir::cast(ir::DType::Index(), total(I(0)));
  graph::Shape bounds = ctx.output_type(0).shape;
  std::vector<Expr> extents = ToExprShape(bounds);
  extents[has_axis ? axis : 0] = count;
  Tensor values = te::compute({I(graph::NumElements(bounds))}, [&](const std::vector<Var>& o) {
    std::vector<Expr> at = CompactIndex(Expr(o[0]), extents, bounds);
    if (!has_axis) return x(Unravel(IndexAt(indices, at[0], n - 1), xs));
    at[axis] = IndexAt(indices, at[axis], n - 1);
    return x(at);
  }, outs[0], tag::kInjective);
  return {values,  ExtentsTensor(extents, outs[1]), indices, ExtentsTensor({count}, outs[3]),
          inverse, ExtentsTensor({I(n)}, outs[5]),  counts,  ExtentsTensor({count}, outs[7])};
}

}  // namespace

void RegisterRunTimeSelectionOps(OpTable* t) {
  t->Register("RunTimeNonZero", RunTimeNonZeroOp);
  t->Register("RunTimeCompress", RunTimeCompressOp);
  t->Register("RunTimeUnique", RunTimeUniqueOp);
}

}  // namespace ops
}  // namespace agate
