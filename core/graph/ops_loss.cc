// Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
#include <algorithm>

#include "core/graph/op_registry.h"
#include "core/graph/shape_rules.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

using Types = std::vector<TensorType>;

Types LossInfer(const InferContext& ctx) {
  const TensorType& scores = ctx.input(0);
  const TensorType& target = ctx.input(1);
  AGATE_REQUIRE(scores.rank() >= 2 && target.rank() == scores.rank() - 1 && target.dtype.is_integer(),
                kInvalidArgument)
      << Where(ctx) << ": expects scores [N, C, ...] and integer targets [N, ...], got " << scores.ToString()
      << " and " << target.ToString();
  for (int i = 0; i < target.rank(); ++i) {
    AGATE_REQUIRE(target.shape[i] == scores.shape[i == 0 ? 0 : i + 1], kInvalidArgument)
        << Where(ctx) << ": target " << ShapeToString(target.shape) << " does not match scores "
        << ShapeToString(scores.shape);
  }
  std::string reduction = ctx.attrs().GetString("reduction", "mean");
  AGATE_REQUIRE(reduction == "none" || reduction == "sum" || reduction == "mean", kUnsupported)
      << Where(ctx) << ": reduction=" << reduction;
  Types out{TensorType{scores.dtype, reduction == "none" ? target.shape : Shape{}}};
  if (ctx.num_outputs() > 1) out.push_back(scores);  // SoftmaxCrossEntropyLoss's log_prob
  return out;
}

}  // namespace

void RegisterLossOps(OpRegistry* r) {
  r->Register(Def("NegativeLogLikelihoodLoss", OpKind::kOpaque, 2, 3, {"reduction", "ignore_index"}, LossInfer));
  r->Register(Def("SoftmaxCrossEntropyLoss", OpKind::kOpaque, 2, 3, {"reduction", "ignore_index"}, LossInfer));
}

}  // namespace graph
}  // namespace agate
