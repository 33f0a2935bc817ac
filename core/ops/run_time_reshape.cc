// RunTimeReshape: a Reshape, Unsqueeze or Squeeze whose shape or axes arrive when the model runs
// (core/graph/ops_tensor.cc gives the upper bounds; Graph::run_time_extents says which output
// holds the extents).
//
// Why one kernel and no data movement of its own: the three forms keep the bytes as they are, so
// the kernel copies the input to the front of the output's upper-bound buffer (compact row-major
// at any extents) and computes the extents, one int64 per axis, from the operand. The operand is
// first checked as the static shape rules would check it (at most one -1, a 0 that copies an
// existing axis, a product that equals the element count; axes in range, not repeated, squeezed
// axes of extent 1): a bad value fails the kernel (RunTimeCheck) before it writes anything, so
// no wrong or out-of-bound extent ever reaches the runtime. The extents and the check are built
// by the same functions from a reader of the operand's elements: TE reads in the computation,
// buffer loads in the check.
#include <algorithm>
#include <string>
#include <vector>

#include "core/ops/op_context.h"
#include "core/ops/registry.h"
#include "core/ops/transform.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using te::Expr;
using te::Tensor;
using te::Var;

Expr I(int64_t v) { return Expr(v); }
Expr True() { return I(0) == I(0); }
Expr Count(Expr condition) { return ir::select(condition, I(1), I(0)); }

// Extents of the result and the condition under which the operand is valid.
struct RunTimeExtents {
  std::vector<Expr> extents;
  Expr valid;
};

// input[k] for a run-time k in [0, rank) (a select chain over the static extents; 1 for rank 0).
Expr ExtentAt(const graph::Shape& input, const Expr& k) {
  if (input.empty()) return I(1);
  Expr extent = I(input.back());
  for (int d = static_cast<int>(input.size()) - 2; d >= 0; --d) extent = ir::select(k == I(d), I(input[d]), extent);
  return extent;
}

// Reshape (ONNX Reshape-14): -1 infers one extent, 0 copies the input's extent at the same axis
// unless allowzero. n > 0 (the graph rule refuses an empty input), and every bound is n, so
// each factor is clamped into [0, n] before the product: it cannot overflow (n^rank is within
// the bound the graph rule allows) and a factor past n is invalid anyway.
RunTimeExtents ReshapeExtents(const graph::Shape& input, int rank, bool allow_zero, const ElementReader& shape) {
  int64_t n = graph::NumElements(input);
  RunTimeExtents r;
  r.valid = True();
  Expr known = I(1), inferred = I(0);
  std::vector<Expr> given(rank);
  for (int i = 0; i < rank; ++i) {
    Expr v = shape(i);
    Expr d = v;
    if (!allow_zero) {
      // A 0 past the input's rank has nothing to copy.
      d = i < static_cast<int>(input.size()) ? ir::select(v == I(0), I(input[i]), v) : v;
      if (i >= static_cast<int>(input.size())) r.valid = r.valid && v != I(0);
    }
    r.valid = r.valid && v >= I(-1) && v <= I(n);
    inferred = inferred + Count(v == I(-1));
    known = known * ir::select(v == I(-1), I(1), ir::min(ir::max(d, I(0)), I(n)));
    given[i] = d;
  }
  Expr divisor = ir::max(known, I(1));
  Expr one_inferred = inferred == I(1) && known != I(0) && ir::floormod(I(n), divisor) == I(0);
  Expr none_inferred = inferred == I(0) && known == I(n);
  r.valid = r.valid && (one_inferred || none_inferred);
  for (int i = 0; i < rank; ++i) {
    r.extents.push_back(ir::select(shape(i) == I(-1), ir::floordiv(I(n), divisor), given[i]));
  }
  return r;
}

// Axes normalized against `rank`, each checked to be in [-rank, rank) and not repeated.
std::vector<Expr> NormalizedAxes(int64_t count, int rank, const ElementReader& axes, Expr* valid) {
  std::vector<Expr> normalized;
  for (int64_t j = 0; j < count; ++j) {
    Expr a = axes(j);
    *valid = *valid && a >= I(-rank) && a < I(rank);
    normalized.push_back(ir::select(a < I(0), a + I(rank), a));
  }
  for (size_t j = 0; j < normalized.size(); ++j)
    for (size_t k = j + 1; k < normalized.size(); ++k) *valid = *valid && normalized[j] != normalized[k];
  return normalized;
}

Expr Listed(const std::vector<Expr>& axes, int64_t axis) {
  Expr listed = I(0) != I(0);
  for (const Expr& a : axes) listed = listed || a == I(axis);
  return listed;
}

Expr ListedBefore(const std::vector<Expr>& axes, int64_t axis) {
  Expr before = I(0);
  for (const Expr& a : axes) before = before + Count(a < I(axis));
  return before;
}

// Unsqueeze: extent 1 at each listed output axis, the input's extents in order elsewhere.
RunTimeExtents UnsqueezeExtents(const graph::Shape& input, int64_t count, const ElementReader& axes) {
  int rank = static_cast<int>(input.size() + count);
  RunTimeExtents r;
  r.valid = True();
  std::vector<Expr> listed = NormalizedAxes(count, rank, axes, &r.valid);
  for (int i = 0; i < rank; ++i) {
    r.extents.push_back(ir::select(Listed(listed, i), I(1), ExtentAt(input, I(i) - ListedBefore(listed, i))));
  }
  return r;
}

// Squeeze: the input's extents without the listed axes, each of which must have extent 1.
RunTimeExtents SqueezeExtents(const graph::Shape& input, int64_t count, const ElementReader& axes) {
  int in_rank = static_cast<int>(input.size());
  RunTimeExtents r;
  r.valid = True();
  std::vector<Expr> listed = NormalizedAxes(count, in_rank, axes, &r.valid);
  for (const Expr& a : listed) r.valid = r.valid && ExtentAt(input, a) == I(1);
  int rank = in_rank - static_cast<int>(count);
  for (int i = 0; i < rank; ++i) {
    // Output axis i is the input axis k that is kept and has i kept axes before it.
    Expr extent = I(0);
    for (int k = 0; k < in_rank; ++k) {
      Expr is_it = !Listed(listed, k) && I(k) - ListedBefore(listed, k) == I(i);
      extent = extent + ir::select(is_it, I(input[k]), I(0));
    }
    r.extents.push_back(extent);
  }
  return r;
}

// What decides the extents, copied out of the node (a run-time check outlives its OpContext).
struct RunTimeReshapeForm {
  std::string form;  // Reshape, Unsqueeze or Squeeze
  graph::Shape input;
  int64_t count = 0;  // the operand's elements
  bool allow_zero = false;
};

RunTimeExtents ExtentsOf(const RunTimeReshapeForm& f, const ElementReader& operand) {
  if (f.form == "Reshape") return ReshapeExtents(f.input, static_cast<int>(f.count), f.allow_zero, operand);
  if (f.form == "Unsqueeze") return UnsqueezeExtents(f.input, f.count, operand);
  return SqueezeExtents(f.input, f.count, operand);
}

std::vector<Tensor> RunTimeReshapeOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& operand = ctx.input(1);
  RunTimeReshapeForm f{ctx.attrs().GetString("form"), ctx.input_type(0).shape, ctx.input_type(1).numel(),
                       ctx.attrs().GetInt("allowzero", 0) != 0};
  AGATE_REQUIRE(f.form == "Reshape" || f.form == "Unsqueeze" || f.form == "Squeeze", kInvalidArgument)
      << ctx.Describe() << ": unknown form '" << f.form << "'";
  ctx.CheckAtRunTime({1}, [f](const std::vector<ElementReader>& readers) { return ExtentsOf(f, readers[0]).valid; },
                     "input 1 ('" + ctx.node().inputs[1] + "', read when the model runs) is not a valid " + f.form +
                         " operand for the input " + ctx.input_type(0).ToString());
  ElementReader read = [&operand](int64_t i) { return ir::cast(ir::DType::Index(), operand(I(i))); };
  std::vector<Expr> extents = ExtentsOf(f, read).extents;
  int rank = static_cast<int>(extents.size());
  // The bytes at the front of the upper-bound buffer: a flat copy of the input.
  Tensor data = Reshape(x, {graph::NumElements(f.input)}, ctx.node().outputs[0]);
  Tensor shape = te::compute({I(rank)}, [&](const std::vector<Var>& o) {
    Expr e = extents[rank - 1];
    for (int i = rank - 2; i >= 0; --i) e = ir::select(Expr(o[0]) == I(i), extents[i], e);
    return ir::cast(ir::DType::Int(64), e);
  }, ctx.node().outputs[1], tag::kInjective);
  return {data, shape};
}

}  // namespace

void RegisterRunTimeReshapeOps(OpTable* t) { t->Register("RunTimeReshape", RunTimeReshapeOp); }

}  // namespace ops
}  // namespace agate
