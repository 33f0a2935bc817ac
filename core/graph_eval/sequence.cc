// Reference kernels of Compress, ReverseSequence, NonZero, Unique and NonMaxSuppression, and of
// their run-time forms (RunTimeNonZero, RunTimeCompress, RunTimeUnique, RunTimeNonMaxSuppression:
// the static result, computed from the values read now, at the front of the upper-bound output
// and followed by its extents, as RunTimeTopK's reference does).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/graph_eval/interpreter.h"
#include "core/graph_eval/kernel.h"
#include "core/graph/shape_inference.h"
#include "core/graph/shape_rules.h"
#include "core/graph/value_selection.h"
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

// The coordinates of x's nonzero elements, one row per axis (a scalar has one axis).
Tensor NonZeroOf(const Tensor& x) {
  std::vector<int64_t> offsets = NonZeroOffsets(x);
  Shape shape = x.rank() == 0 ? Shape{1} : x.shape();
  int64_t rank = static_cast<int64_t>(shape.size()), count = static_cast<int64_t>(offsets.size());
  std::vector<int64_t> coordinates(rank * count);
  for (int64_t j = 0; j < count; ++j) {
    int64_t rest = offsets[j];
    for (int64_t d = rank - 1; d >= 0; --d) {
      coordinates[d * count + j] = rest % shape[d];
      rest /= shape[d];
    }
  }
  return Tensor::FromInts(DType::Int(64), {rank, count}, coordinates);
}

Tensors NonZero(const KernelContext& ctx) { return {NonZeroOf(ctx.in(0))}; }

// Unique's four outputs (value_selection.h): the distinct items, their first positions, every
// item's output position and each distinct item's count.
Tensors UniqueOutputs(const Tensor& x, const Attributes& attrs, const std::string& where) {
  int axis = attrs.Has("axis") ? NormalizeAxis(attrs.GetInt("axis"), x.rank(), where) : -1;
  UniqueItems u = UniqueOf(x, axis, attrs.GetInt("sorted", 1) != 0);
  int64_t distinct = static_cast<int64_t>(u.first.size());
  Tensor y;
  if (axis < 0) {
    y = GatherByOffsets(x.Reshaped({x.numel()}), TensorType{x.dtype(), {distinct}}, u.first);
  } else {
    Shape shape = x.shape();
    shape[axis] = distinct;
    std::vector<int64_t> strides = RowMajorStrides(x.shape());
    std::vector<int64_t> offsets(NumElements(shape));
    ForEachIndex(shape, [&](const std::vector<int64_t>& idx, int64_t linear) {
      int64_t off = 0;
      for (size_t d = 0; d < idx.size(); ++d) off += (static_cast<int>(d) == axis ? u.first[idx[d]] : idx[d]) * strides[d];
      offsets[linear] = off;
    });
    y = GatherByOffsets(x, TensorType{x.dtype(), shape}, offsets);
  }
  const DType i64 = DType::Int(64);
  return {y, Tensor::FromInts(i64, {distinct}, u.first), Tensor::FromInts(i64, {u.items}, u.inverse),
          Tensor::FromInts(i64, {distinct}, u.counts)};
}

Tensors Unique(const KernelContext& ctx) { return UniqueOutputs(ctx.in(0), ctx.attrs(), ctx.node.Describe()); }

// Run-time forms: each static result at the front of its upper-bound output (ctx output
// 2 * i), followed by its extents.
Tensors AtFrontOfBounds(const KernelContext& ctx, const Tensors& results) {
  Tensors out;
  for (size_t i = 0; i < results.size(); ++i) {
    Tensor bounded = ctx.NewOutput(static_cast<int>(2 * i));
    AGATE_CHECK(results[i].nbytes() <= bounded.nbytes())
        << ctx.node.Describe() << ": output " << 2 * i << " " << ShapeToString(results[i].shape()) << " past its bound "
        << ShapeToString(bounded.shape());
    if (results[i].nbytes() != 0) std::memcpy(bounded.mutable_raw_data(), results[i].raw_data(), results[i].nbytes());
    out.push_back(bounded);
    out.push_back(Tensor::FromInts(DType::Int(64), {results[i].rank()}, results[i].shape()));
  }
  return out;
}

Tensors RunTimeNonZero(const KernelContext& ctx) { return AtFrontOfBounds(ctx, {NonZeroOf(ctx.in(0))}); }

// RunTimeCompress: the static Compress with the condition read now.
Tensors RunTimeCompress(const KernelContext& ctx) {
  Node compress = ctx.node;
  compress.op = "Compress";
  compress.attrs.Set("condition", ctx.in(1).ToInts());
  compress.inputs.resize(1);
  compress.outputs.resize(1);
  return AtFrontOfBounds(ctx, EvaluateNode(compress, {&ctx.in(0)}));
}

Tensors RunTimeUnique(const KernelContext& ctx) {
  return AtFrontOfBounds(ctx, UniqueOutputs(ctx.in(0), ctx.attrs(), ctx.node.Describe()));
}

// NonMaxSuppression (value_selection.h): the selected rows, [count, 3].
Tensor NonMaxSuppressionOf(const KernelContext& ctx) {
  std::vector<const Tensor*> operands;
  for (int i = 2; i < 5; ++i) operands.push_back(ctx.has(i) ? &ctx.in(i) : nullptr);
  NmsSettings settings = NmsSettingsOf(ctx.node, operands);
  std::vector<int64_t> rows = graph::NonMaxSuppressionOf(ctx.in(0), ctx.in(1), settings);
  return Tensor::FromInts(DType::Int(64), {static_cast<int64_t>(rows.size()) / 3, 3}, rows);
}

Tensors NonMaxSuppression(const KernelContext& ctx) { return {NonMaxSuppressionOf(ctx)}; }

Tensors RunTimeNonMaxSuppression(const KernelContext& ctx) { return AtFrontOfBounds(ctx, {NonMaxSuppressionOf(ctx)}); }

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
  r->Register("NonZero", NonZero);
  r->Register("Unique", Unique);
  r->Register("RunTimeNonZero", RunTimeNonZero);
  r->Register("RunTimeCompress", RunTimeCompress);
  r->Register("RunTimeUnique", RunTimeUnique);
  r->Register("NonMaxSuppression", NonMaxSuppression);
  r->Register("RunTimeNonMaxSuppression", RunTimeNonMaxSuppression);
}

}  // namespace graph_eval
}  // namespace agate
