// RunTimeTopK: a TopK whose k arrives when the model runs (core/graph/ops_tensor.cc: values and
// indices typed with the input's shape, an upper bound; Graph::run_time_extents names their
// extents outputs).
//
// Why the whole row is sorted: k is unknown when the kernel is built, so the kernel ranks every
// element of each row (TopKIndices with k = n, as the static TopK does for its k) and then writes
// the first k of each row compact at the run-time extents (the input's, with k on the axis). A
// k outside [0, n] fails the kernel's run-time check before anything is written.
#include <algorithm>
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

Expr I(int64_t v) { return Expr(v); }

std::vector<Tensor> RunTimeTopKOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  graph::Shape xs = StaticShape(x);
  int rank = static_cast<int>(xs.size());
  int axis = graph::NormalizeAxis(ctx.attrs().GetInt("axis", -1), rank, ctx.Describe());
  bool largest = ctx.attrs().GetInt("largest", 1) != 0;
  int64_t n = xs[axis];
  ctx.CheckAtRunTime({1}, [n](const std::vector<ElementReader>& k) { return k[0](0) >= I(0) && k[0](0) <= I(n); },
                     "k (input 1, read when the model runs) must lie in [0, " + std::to_string(n) + "]");
  Expr k = ir::cast(ir::DType::Index(), ctx.input(1)(std::vector<Expr>(ctx.input_type(1).rank(), I(0))));
  k = ir::min(ir::max(k, I(0)), I(n));
  const std::vector<std::string>& outs = ctx.node().outputs;
  Tensor sorted = TopKIndices(x, axis, largest, n, outs[0] + "_sorted");
  std::vector<Expr> extents;
  for (int d = 0; d < rank; ++d) extents.push_back(d == axis ? k : I(xs[d]));
  // The position in the sorted rows of output element f, compact at the run-time extents.
  auto position = [&](Expr f) { return CompactIndex(f, extents, xs); };
  const std::vector<Expr> flat = {I(graph::NumElements(xs))};
  Tensor values = te::compute(flat, [&](const std::vector<Var>& o) {
    std::vector<Expr> at = position(o[0]);
    at[axis] = ir::min(ir::max(ir::cast(ir::DType::Index(), sorted(at)), I(0)), I(n - 1));
    return x(at);
  }, outs[0], tag::kInjective);
  Tensor indices = te::compute(flat, [&](const std::vector<Var>& o) { return sorted(position(o[0])); }, outs[2],
                               tag::kInjective);
  return {values, ExtentsTensor(extents, outs[1]), indices, ExtentsTensor(extents, outs[3])};
}

}  // namespace

void RegisterRunTimeTopKOps(OpTable* t) { t->Register("RunTimeTopK", RunTimeTopKOp); }

}  // namespace ops
}  // namespace agate
