// Reference kernels of Compress and ReverseSequence.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/graph_eval/kernel.h"
#include "core/graph/shape_inference.h"
#include "core/graph/shape_rules.h"
#include "core/support/error.h"

namespace agate {
namespace graph_eval {

using namespace graph;  // the graph IR is what this layer runs

namespace {

using Tensors = std::vector<Tensor>;

Tensors Compress(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> condition = ctx.attrs().GetInts("condition");
  std::vector<int64_t> kept;
  for (size_t i = 0; i < condition.size(); ++i)
    if (condition[i]) kept.push_back(static_cast<int64_t>(i));
  if (!ctx.attrs().Has("axis")) return {GatherByOffsets(x.Reshaped({x.numel()}), ctx.outputs[0], kept)};
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank(), ctx.node.Describe());
  std::vector<int64_t> strides = RowMajorStrides(x.shape());
  std::vector<int64_t> offsets(ctx.outputs[0].numel());
  ForEachIndex(ctx.outputs[0].shape, [&](const std::vector<int64_t>& idx, int64_t linear) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (static_cast<int>(d) == axis ? kept[idx[d]] : idx[d]) * strides[d];
    offsets[linear] = off;
  });
  return {GatherByOffsets(x, ctx.outputs[0], offsets)};
}

Tensors ReverseSequence(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int batch = NormalizeAxis(ctx.attrs().GetInt("batch_axis", 1), x.rank(), ctx.node.Describe());
  int time = NormalizeAxis(ctx.attrs().GetInt("time_axis", 0), x.rank(), ctx.node.Describe());
  std::vector<int64_t> strides = RowMajorStrides(x.shape());
  std::vector<int64_t> offsets(x.numel());
  ForEachIndex(x.shape(), [&](const std::vector<int64_t>& idx, int64_t linear) {
    int64_t len = ctx.in(1).GetInt(idx[batch]);
    int64_t t = idx[time] < len ? len - 1 - idx[time] : idx[time];
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (static_cast<int>(d) == time ? t : idx[d]) * strides[d];
    offsets[linear] = off;
  });
  return {GatherByOffsets(x, ctx.outputs[0], offsets)};
}

}  // namespace

void RegisterSequenceKernels(KernelRegistry* r) {
  r->Register("Compress", Compress);
  r->Register("ReverseSequence", ReverseSequence);
}

}  // namespace graph_eval
}  // namespace agate
