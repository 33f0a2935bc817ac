// Operators that select or reorder along one axis: Compress (a constant mask) and
// ReverseSequence (per-batch prefixes).
#include <algorithm>

#include "core/graph/op_registry.h"
#include "core/graph/shape_rules.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

using Types = std::vector<TensorType>;

Types CompressInfer(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  std::vector<int64_t> condition = ctx.attrs().GetInts("condition");
  bool has_axis = ctx.attrs().Has("axis");
  int64_t extent = has_axis ? x.shape[NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank(), Where(ctx))] : x.numel();
  AGATE_REQUIRE(static_cast<int64_t>(condition.size()) <= extent, kInvalidArgument)
      << Where(ctx) << ": condition has " << condition.size() << " entries for " << extent;
  int64_t kept = std::count_if(condition.begin(), condition.end(), [](int64_t c) { return c != 0; });
  if (!has_axis) return {TensorType{x.dtype, {kept}}};
  Shape out = x.shape;
  out[NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank(), Where(ctx))] = kept;
  return {TensorType{x.dtype, out}};
}

Types ReverseSequenceInfer(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  int batch = NormalizeAxis(ctx.attrs().GetInt("batch_axis", 1), x.rank(), Where(ctx));
  AGATE_REQUIRE(ctx.input(1).shape == Shape{x.shape[batch]}, kInvalidArgument)
      << Where(ctx) << ": sequence_lens must be [" << x.shape[batch] << "]";
  return {x};
}

}  // namespace

void RegisterSequenceOps(OpRegistry* r) {
  r->Register(Def("Compress", OpKind::kInjective, 1, 1, {"axis", "condition"}, CompressInfer, {{1, "condition"}}));
  r->Register(Def("ReverseSequence", OpKind::kOpaque, 2, 2, {"batch_axis", "time_axis"}, ReverseSequenceInfer));
}

}  // namespace graph
}  // namespace agate
