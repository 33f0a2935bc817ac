// Linear algebra beyond MatMul: Einsum and Det.
#include <algorithm>

#include "core/graph/op_registry.h"
#include "core/graph/shape_rules.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

using Types = std::vector<TensorType>;

Types EinsumInfer(const InferContext& ctx) {
  std::vector<Shape> shapes;
  for (int i = 0; i < ctx.num_inputs(); ++i) shapes.push_back(ctx.input(i).shape);
  EinsumSpec spec = ParseEinsum(ctx.attrs().GetString("equation"), shapes, Where(ctx));
  Shape out;
  for (char c : spec.output) out.push_back(spec.extents.at(c));
  return {TensorType{ctx.input(0).dtype, out}};
}

Types DetInfer(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  AGATE_REQUIRE(x.rank() >= 2 && x.shape[x.rank() - 1] == x.shape[x.rank() - 2], kInvalidArgument)
      << Where(ctx) << ": needs square matrices, got " << ShapeToString(x.shape);
  return {TensorType{x.dtype, Shape(x.shape.begin(), x.shape.end() - 2)}};
}

}  // namespace

void RegisterLinalgOps(OpRegistry* r) {
  r->Register(Def("Einsum", OpKind::kOpaque, 1, -1, {"equation"}, EinsumInfer));
  r->Register(Def("Det", OpKind::kOpaque, 1, 1, {}, DetInfer));
}

}  // namespace graph
}  // namespace agate
