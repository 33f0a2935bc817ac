#include "core/ops/layout_transform.h"

#include "core/ops/op_context.h"
#include "core/ops/registry.h"
#include "core/support/error.h"

namespace agate {
namespace ops {

using te::Expr;
using te::Tensor;
using te::Var;

Tensor ToBlocked(const Tensor& x, int64_t block, const std::string& name) {
  graph::Shape s = StaticShape(x);
  return te::compute(ToExprShape({s[0], s[1] / block, s[2], s[3], block}), [&](const std::vector<Var>& o) {
    return x(o[0], o[1] * block + o[4], o[2], o[3]);
  }, name, tag::kInjective);
}

Tensor FromBlocked(const Tensor& x, const std::string& name) {
  graph::Shape s = StaticShape(x);
  int64_t block = s[4];
  return te::compute(ToExprShape({s[0], s[1] * block, s[2], s[3]}), [&](const std::vector<Var>& o) {
    return x(o[0], ir::floordiv(o[1], Expr(block)), o[2], o[3], ir::floormod(o[1], Expr(block)));
  }, name, tag::kInjective);
}

Tensor Reblock(const Tensor& x, int64_t block, const std::string& name) {
  graph::Shape s = StaticShape(x);
  int64_t src = s[4];
  return te::compute(ToExprShape({s[0], s[1] * src / block, s[2], s[3], block}), [&](const std::vector<Var>& o) {
    Expr channel = o[1] * block + o[4];
    return x(o[0], ir::floordiv(channel, Expr(src)), o[2], o[3], ir::floormod(channel, Expr(src)));
  }, name, tag::kInjective);
}

void RegisterLayoutTransformOps(OpTable* t) {
  t->Register("LayoutTransform", [](const OpContext& ctx) {
    const graph::Shape& out = ctx.output_type(0).shape;
    std::string name = ctx.node().outputs[0];
    int rank = ctx.input(0).ndim();
    AGATE_REQUIRE((rank == 4 || rank == 5) && (out.size() == 4 || out.size() == 5), kUnsupported)
        << ctx.Describe() << ": unsupported layout transform";
    if (rank == 5 && out.size() == 5) return std::vector<Tensor>{Reblock(ctx.input(0), out[4], name)};
    if (out.size() == 5) return std::vector<Tensor>{ToBlocked(ctx.input(0), out[4], name)};
    return std::vector<Tensor>{FromBlocked(ctx.input(0), name)};
  });
}

}  // namespace ops
}  // namespace agate
