#include "core/ops/einsum.h"

#include "core/graph/shape_rules.h"
#include "core/ops/op_context.h"
#include "core/ops/registry.h"
#include "core/ops/schedule_common.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using te::Expr;
using te::Tensor;
using te::Var;

std::vector<Tensor> EinsumOp(const OpContext& ctx) {
  std::vector<graph::Shape> shapes;
  for (int i = 0; i < ctx.num_inputs(); ++i) shapes.push_back(StaticShape(ctx.input(i)));
  graph::EinsumSpec spec = graph::ParseEinsum(ctx.attrs().GetString("equation"), shapes, ctx.Describe());
  ir::DType dt = ctx.input(0).dtype();
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    AGATE_REQUIRE(ctx.input(i).dtype() == dt, kInvalidArgument)
        << ctx.Describe() << ": operand " << i << " is " << ctx.input(i).dtype() << ", operand 0 " << dt;
  }
  std::map<char, ir::IterVar> reduce;
  std::vector<ir::IterVar> reduce_axes;
  for (const auto& [label, extent] : spec.extents) {
    if (spec.output.find(label) != std::string::npos) continue;
    reduce[label] = te::reduce_axis({Expr(int64_t{0}), Expr(extent)}, std::string("r_") + label);
    reduce_axes.push_back(reduce[label]);
  }
  Tensor out = te::compute(ToExprShape(ctx.output_type(0).shape), [&](const std::vector<Var>& o) {
    auto var_of = [&](char label) -> Expr {
      size_t at = spec.output.find(label);
      return at != std::string::npos ? Expr(o[at]) : Expr(reduce.at(label));
    };
    Expr product;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      std::vector<Expr> idx;
      for (size_t a = 0; a < spec.inputs[i].size(); ++a)
        idx.push_back(shapes[i][a] == 1 ? Expr(int64_t{0}) : var_of(spec.inputs[i][a]));
      Expr v = ctx.input(i)(idx);
      product = product.defined() ? product * v : v;
    }
    return reduce_axes.empty() ? product : te::sum(product, reduce_axes);
  }, ctx.node().outputs[0], reduce_axes.empty() ? tag::kInjective : tag::kReduce);
  if (!reduce_axes.empty()) {
    SetDefaultSchedules(ctx, "einsum", out);
  }
  return {out};
}

}  // namespace

void RegisterEinsumOps(OpTable* t) { t->Register("Einsum", EinsumOp); }

}  // namespace ops
}  // namespace agate
