// Operators that select or reorder along one axis: Compress (a constant mask) and
// ReverseSequence (per-batch prefixes); and the selections whose output extents depend on
// values: NonZero and Unique of a constant (folded when imported), and RunTimeNonZero,
// RunTimeCompress and RunTimeUnique, whose input or condition arrives when the model runs:
// each output is typed with an upper bound and followed by its int64 extents, which the kernel
// writes (Graph::run_time_extents), as RunTimeTopK does. NonMaxSuppression likewise: of constants
// it folds; RunTimeNonMaxSuppression's selected_indices are bounded by every class of every batch
// keeping min(max_output_boxes_per_class, N) boxes.
#include <algorithm>

#include "core/graph/op_registry.h"
#include "core/graph/shape_rules.h"
#include "core/graph/value_selection.h"
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

// NonZero and Unique of a constant: the shapes follow from its values (value_selection.h). A
// run-time input is imported as RunTimeNonZero or RunTimeUnique instead.
const Tensor& SelectedValues(const InferContext& ctx) {
  const Tensor* x = ctx.value(0);
  AGATE_REQUIRE(x != nullptr, kUnsupported)
      << Where(ctx) << ": its output extents depend on the values of input 0 ('" << ctx.node().inputs[0]
      << "'), which are known only when the model runs";
  return *x;
}

// NonZero's rank: a scalar counts as one axis (numpy's nonzero of a 0-d array, ONNX's reference).
int64_t NonZeroRank(const TensorType& x) { return std::max<int64_t>(x.rank(), 1); }

Types NonZeroInfer(const InferContext& ctx) {
  const Tensor& x = SelectedValues(ctx);
  int64_t count = static_cast<int64_t>(NonZeroOffsets(x).size());
  return {TensorType{DType::Int(64), {NonZeroRank(ctx.input(0)), count}}};
}

// Unique's axis (normalized), or -1 without one (flattened).
int UniqueAxis(const InferContext& ctx) {
  if (!ctx.attrs().Has("axis")) return -1;
  return NormalizeAxis(ctx.attrs().GetInt("axis"), ctx.input(0).rank(), Where(ctx));
}

// Unique's outputs for `distinct` distinct items: Y (x's shape with `distinct` on the axis, or
// [distinct]), indices and counts ([distinct]) and inverse_indices (one per item).
Types UniqueTypes(const TensorType& x, int axis, int64_t distinct) {
  Shape y = axis < 0 ? Shape{distinct} : x.shape;
  if (axis >= 0) y[axis] = distinct;
  int64_t items = axis < 0 ? x.numel() : x.shape[axis];
  TensorType index{DType::Int(64), {distinct}};
  return {TensorType{x.dtype, y}, index, TensorType{DType::Int(64), {items}}, index};
}

Types UniqueInfer(const InferContext& ctx) {
  const Tensor& x = SelectedValues(ctx);
  int axis = UniqueAxis(ctx);
  UniqueItems u = UniqueOf(x, axis, ctx.attrs().GetInt("sorted", 1) != 0);
  return UniqueTypes(ctx.input(0), axis, static_cast<int64_t>(u.first.size()));
}

// Upper bounds need at least one element to bound: a run-time selection from an empty tensor
// is refused (its result is empty whatever the values; a model has no reason to compute it).
void RequireElements(const InferContext& ctx, const TensorType& x) {
  AGATE_REQUIRE(x.numel() > 0, kUnsupported)
      << Where(ctx) << ": input 0 ('" << ctx.node().inputs[0] << "') " << x.ToString() << " has no elements to select "
      << "from at run time";
}

// RunTimeNonZero: output 0 the coordinates, [rank, numel] (every element nonzero at most),
// compact at [rank, count]; output 1 those two extents.
Types RunTimeNonZeroInfer(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  RequireElements(ctx, x);
  return {TensorType{DType::Int(64), {NonZeroRank(x), x.numel()}}, TensorType{DType::Int(64), {2}}};
}

// RunTimeCompress: input 1 the condition (bool or integer, rank 1, at most the selected extent).
// Output 0 typed as the input (with an axis) or [numel] (flattened), compact at the kept count;
// output 1 its extents.
Types RunTimeCompressInfer(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const TensorType& condition = ctx.input(1);
  RequireElements(ctx, x);
  bool has_axis = ctx.attrs().Has("axis");
  int64_t extent = has_axis ? x.shape[NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank(), Where(ctx))] : x.numel();
  AGATE_REQUIRE((condition.dtype.is_bool() || condition.dtype.is_integer()) && condition.rank() == 1 &&
                    condition.shape[0] <= extent,
                kInvalidArgument)
      << Where(ctx) << ": input 1 ('" << ctx.node().inputs[1] << "', condition) must be a bool vector of at most "
      << extent << " entries, got " << condition.ToString();
  TensorType out = has_axis ? x : TensorType{x.dtype, {x.numel()}};
  return {out, TensorType{DType::Int(64), {out.rank()}}};
}

// RunTimeUnique: Unique's four outputs bounded by every item being distinct, each followed by
// its extents (inverse_indices's are always its bound).
Types RunTimeUniqueInfer(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  RequireElements(ctx, x);
  int axis = UniqueAxis(ctx);
  Types bounds = UniqueTypes(x, axis, axis < 0 ? x.numel() : x.shape[axis]);
  Types out;
  for (const TensorType& t : bounds) {
    out.push_back(t);
    out.push_back(TensorType{DType::Int(64), {t.rank()}});
  }
  return out;
}

// NonMaxSuppression's inputs (value_selection.h): boxes [B, N, 4] and scores [B, C, N], float32,
// with the same B and N; each run-time operand at most one int64 (max_output_boxes_per_class) or
// float32 (the thresholds) value, and not also an attribute; center_point_box 0 or 1.
void CheckNmsInputs(const InferContext& ctx) {
  const TensorType& boxes = ctx.input(0);
  const TensorType& scores = ctx.input(1);
  const DType f32 = DType::Float(32);
  AGATE_REQUIRE(boxes.dtype == f32 && boxes.rank() == 3 && boxes.shape[2] == 4, kInvalidArgument)
      << Where(ctx) << ": boxes ('" << ctx.node().inputs[0] << "') must be float32 [num_batches, num_boxes, 4], got "
      << boxes.ToString();
  AGATE_REQUIRE(scores.dtype == f32 && scores.rank() == 3 && scores.shape[0] == boxes.shape[0] &&
                    scores.shape[2] == boxes.shape[1],
                kInvalidArgument)
      << Where(ctx) << ": scores ('" << ctx.node().inputs[1] << "') must be float32 [num_batches, num_classes, "
      << "num_boxes] with the batches and boxes of boxes " << boxes.ToString() << ", got " << scores.ToString();
  for (int k = 0; k < 3; ++k) {
    if (!ctx.has_input(2 + k)) continue;
    const TensorType& operand = ctx.input(2 + k);
    const DType want = k == 0 ? DType::Int(64) : f32;
    AGATE_REQUIRE(operand.dtype == want && operand.numel() <= 1, kInvalidArgument)
        << Where(ctx) << ": input " << 2 + k << " ('" << ctx.node().inputs[2 + k] << "', " << kNmsOperands[k]
        << ") must hold one " << want << " value, got " << operand.ToString();
    AGATE_REQUIRE(!ctx.attrs().Has(kNmsOperands[k]), kInvalidArgument)
        << Where(ctx) << ": " << kNmsOperands[k] << " is given both as input " << 2 + k << " and as an attribute";
  }
  int64_t center = ctx.attrs().GetInt("center_point_box", 0);
  AGATE_REQUIRE(center == 0 || center == 1, kInvalidArgument)
      << Where(ctx) << ": center_point_box must be 0 or 1, got " << center;
}

// NonMaxSuppression of constants: the selection itself decides the rows.
Types NonMaxSuppressionInfer(const InferContext& ctx) {
  CheckNmsInputs(ctx);
  std::vector<const Tensor*> operands;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    AGATE_REQUIRE(!ctx.has_input(i) || ctx.value(i) != nullptr, kUnsupported)
        << Where(ctx) << ": its output extents depend on the values of input " << i << " ('" << ctx.node().inputs[i]
        << "'), which are known only when the model runs";
    if (i >= 2) operands.push_back(ctx.value(i));
  }
  NmsSettings settings = NmsSettingsOf(ctx.node(), operands);
  int64_t rows = static_cast<int64_t>(NonMaxSuppressionOf(*ctx.value(0), *ctx.value(1), settings).size()) / 3;
  return {TensorType{DType::Int(64), {rows, 3}}};
}

// The most boxes one class of one batch keeps: N, or fewer when max_output_boxes_per_class is a
// constant; none without one (ONNX: a missing or empty operand selects nothing).
int64_t NmsBoxesPerClass(const InferContext& ctx) {
  const int64_t n = ctx.input(0).shape[1];
  if (ctx.attrs().Has(kNmsOperands[0])) return std::clamp<int64_t>(ctx.attrs().GetInt(kNmsOperands[0]), 0, n);
  return ctx.has_input(2) && ctx.input(2).numel() == 1 ? n : 0;
}

// RunTimeNonMaxSuppression: output 0 the selected [batch, class, box] rows, [B * C * per class, 3]
// at most, compact at the rows selected; output 1 those two extents. A constant iou_threshold is
// checked here; one read at run time, by the kernel.
Types RunTimeNonMaxSuppressionInfer(const InferContext& ctx) {
  CheckNmsInputs(ctx);
  if (ctx.attrs().Has(kNmsOperands[1])) {
    float iou = static_cast<float>(ctx.attrs().GetFloat(kNmsOperands[1]));
    AGATE_REQUIRE(NmsValidIou(iou), kInvalidArgument) << Where(ctx) << ": iou_threshold " << iou << " is outside [0, 1]";
  }
  const Shape& scores = ctx.input(1).shape;
  int64_t rows = scores[0] * scores[1] * NmsBoxesPerClass(ctx);
  return {TensorType{DType::Int(64), {rows, 3}}, TensorType{DType::Int(64), {2}}};
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
  r->Register(Def("NonZero", OpKind::kOpaque, 1, 1, {}, NonZeroInfer));
  r->Register(Def("Unique", OpKind::kOpaque, 1, 1, {"axis", "sorted"}, UniqueInfer));
  r->Register(Def("RunTimeNonZero", OpKind::kOpaque, 1, 1, {}, RunTimeNonZeroInfer));
  r->Register(Def("RunTimeCompress", OpKind::kOpaque, 2, 2, {"axis"}, RunTimeCompressInfer));
  r->Register(Def("RunTimeUnique", OpKind::kOpaque, 1, 1, {"axis", "sorted"}, RunTimeUniqueInfer));
  // Constant operands are attributes; run-time ones stay inputs 2 to 4, read by the kernels
  // (the importer places them: frontends/onnx/importer.cc, ImportNonMaxSuppression).
  std::vector<std::string> nms_attrs = {"center_point_box", kNmsOperands[0], kNmsOperands[1], kNmsOperands[2]};
  std::vector<StaticOperand> nms_operands = {{2, kNmsOperands[0], false, true, true, true},
                                             {3, kNmsOperands[1], true, true, true, true},
                                             {4, kNmsOperands[2], true, true, true, true}};
  r->Register(Def("NonMaxSuppression", OpKind::kOpaque, 2, 5, nms_attrs, NonMaxSuppressionInfer, nms_operands));
  r->Register(Def("RunTimeNonMaxSuppression", OpKind::kOpaque, 2, 5, nms_attrs, RunTimeNonMaxSuppressionInfer));
  r->Register(Def("ReverseSequence", OpKind::kOpaque, 2, 2, {"batch_axis", "time_axis"}, ReverseSequenceInfer));
}

}  // namespace graph
}  // namespace agate
