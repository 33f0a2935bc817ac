// Data-movement operators (reshape, transpose, concat, split, slice, gather,
// pad, tile, resize, layout transforms) and the shape-producing operators
// (Shape, Size, ConstantOfShape, Range, EyeLike, OneHot) plus TopK, CumSum and
// the scatters.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/graph/op_registry.h"
#include "core/graph/run_time_shape_operand.h"
#include "core/graph/shape_rules.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

using Types = std::vector<TensorType>;

Types ReshapeInfer(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  std::vector<int64_t> target = ctx.attrs().GetInts("shape");
  bool allow_zero = ctx.attrs().GetInt("allowzero", 0) != 0;
  Shape out(target.size());
  int infer_axis = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      AGATE_REQUIRE(infer_axis < 0, kInvalidArgument) << Where(ctx) << ": more than one -1 in shape";
      infer_axis = static_cast<int>(i);
      continue;
    }
    if (target[i] == 0 && !allow_zero) {
      AGATE_REQUIRE(i < in.shape.size(), kInvalidArgument) << Where(ctx) << ": 0 copies axis " << i
                                                           << " that the input of rank " << in.rank() << " lacks";
      out[i] = in.shape[i];
    } else {
      AGATE_REQUIRE(target[i] >= 0, kInvalidArgument) << Where(ctx) << ": negative dimension " << target[i];
      out[i] = target[i];
    }
    known *= out[i];
  }
  if (infer_axis >= 0) {
    AGATE_REQUIRE(known != 0 && in.numel() % known == 0, kInvalidArgument)
        << Where(ctx) << ": cannot reshape " << ShapeToString(in.shape) << " to " << ShapeToString(target);
    out[infer_axis] = in.numel() / known;
  }
  AGATE_REQUIRE(NumElements(out) == in.numel(), kInvalidArgument)
      << Where(ctx) << ": cannot reshape " << ShapeToString(in.shape) << " (" << in.numel() << " elements) to "
      << ShapeToString(out);
  return {TensorType{in.dtype, out}};
}

Types FlattenInfer(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  int64_t axis = ctx.attrs().GetInt("axis", 1);
  if (axis < 0) axis += in.rank();
  AGATE_REQUIRE(axis >= 0 && axis <= in.rank(), kInvalidArgument) << Where(ctx) << ": axis out of range";
  int64_t outer = 1;
  for (int i = 0; i < axis; ++i) outer *= in.shape[i];
  return {TensorType{in.dtype, {outer, outer == 0 ? 0 : in.numel() / std::max<int64_t>(outer, 1)}}};
}

Types SqueezeInfer(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  std::vector<int> axes = NormalizeAxes(ctx.attrs().GetInts("axes", {}), in.rank(), Where(ctx));
  for (size_t j = 0; j < axes.size(); ++j) {
    AGATE_REQUIRE(std::count(axes.begin(), axes.end(), axes[j]) == 1, kInvalidArgument)
        << Where(ctx) << ": axis " << axes[j] << " repeated";
  }
  Shape out;
  for (int i = 0; i < in.rank(); ++i) {
    bool listed = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (listed) {
      AGATE_REQUIRE(in.shape[i] == 1, kInvalidArgument)
          << Where(ctx) << ": cannot squeeze axis " << i << " of size " << in.shape[i];
    }
    if (listed || (axes.empty() && in.shape[i] == 1)) continue;
    out.push_back(in.shape[i]);
  }
  return {TensorType{in.dtype, out}};
}

Types UnsqueezeInfer(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  std::vector<int64_t> raw = ctx.attrs().GetInts("axes");
  int out_rank = in.rank() + static_cast<int>(raw.size());
  std::vector<int> axes = NormalizeAxes(raw, out_rank, Where(ctx));
  Shape out(out_rank, 1);
  std::vector<bool> inserted(out_rank, false);
  for (int a : axes) {
    AGATE_REQUIRE(!inserted[a], kInvalidArgument) << Where(ctx) << ": axis " << a << " repeated";
    inserted[a] = true;
  }
  int next = 0;
  for (int i = 0; i < out_rank; ++i)
    if (!inserted[i]) out[i] = in.shape[next++];
  return {TensorType{in.dtype, out}};
}

std::vector<int64_t> TransposePerm(const Node& node, int rank) {
  std::vector<int64_t> perm = node.attrs.GetInts("perm", {});
  if (perm.empty())
    for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
  AGATE_REQUIRE(static_cast<int>(perm.size()) == rank, kInvalidArgument)
      << node.Describe() << ": perm has " << perm.size() << " entries for rank " << rank;
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < rank; ++i)
    AGATE_REQUIRE(sorted[i] == i, kInvalidArgument) << node.Describe() << ": perm is not a permutation";
  return perm;
}

// RunTimeReshape bounds its output by the product of per-axis upper bounds (the module sizes
// the output's buffer for it), which grows as a power of the rank: past this many elements it
// is refused rather than allocated.
constexpr int64_t kMaxRunTimeReshapeElements = int64_t{1} << 24;

// RunTimeReshape: a Reshape, Unsqueeze or Squeeze ("form") whose shape or axes (input 1, int64
// of rank 1) arrive at run time. The rank is known (from input 1's length); the extents are not.
// Output 0 holds the input's bytes under upper-bound extents (every extent of a Reshape is at
// most the element count; of an Unsqueeze or Squeeze at most the largest input extent), output
// 1 the int64 extents the kernel computes (Graph::run_time_extents).
Types RunTimeReshapeInfer(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  const TensorType& operand = ctx.input(1);
  const std::string form = ctx.attrs().GetString("form");
  AGATE_REQUIRE(operand.dtype == DType::Int(64) && operand.rank() == 1, kInvalidArgument)
      << Where(ctx) << ": input 1 ('" << ctx.node().inputs[1] << "') must be int64 of rank 1, got " << operand.ToString();
  int64_t count = operand.shape[0];
  int64_t largest = 1;
  for (int64_t d : in.shape) largest = std::max(largest, d);
  int64_t rank = 0, bound = largest;
  if (form == "Reshape") {
    AGATE_REQUIRE(in.numel() > 0, kUnsupported)
        << Where(ctx) << ": the input " << in.ToString() << " has no elements, so a shape given at run time has no "
        << "upper bound";
    rank = count;
    bound = in.numel();
  } else if (form == "Unsqueeze") {
    rank = in.rank() + count;
  } else if (form == "Squeeze") {
    AGATE_REQUIRE(count <= in.rank(), kInvalidArgument)
        << Where(ctx) << ": squeezes " << count << " axes of a rank-" << in.rank() << " input";
    rank = in.rank() - count;
  } else {
    AGATE_THROW(kInvalidArgument) << Where(ctx) << ": form '" << form << "' is not Reshape, Unsqueeze or Squeeze";
  }
  AGATE_REQUIRE(rank >= 1 && rank <= 16, kUnsupported)
      << Where(ctx) << ": a result of rank " << rank << " with extents given at run time (ranks 1 to 16 are)";
  int64_t elements = 1;
  for (int64_t i = 0; i < rank; ++i) {
    AGATE_REQUIRE(elements <= kMaxRunTimeReshapeElements / bound, kUnsupported)
        << Where(ctx) << ": its extents arrive at run time, and the upper bound " << bound << " on each of " << rank
        << " axes needs a buffer of more than " << kMaxRunTimeReshapeElements << " elements; freeze input 1 ('"
        << ctx.node().inputs[1] << "') with agate compile --input-value";
    elements *= bound;
  }
  return {TensorType{in.dtype, Shape(rank, bound)}, TensorType{DType::Int(64), {rank}}};
}

// RunTimeSlice: a Slice whose starts, ends, axes or steps (inputs 1 to 4, integers of one
// length) arrive at run time. Output 0 holds the slice compact at its run-time extents, each at
// most the input's (its type is the input's), output 1 the int64 extents.
Types RunTimeSliceInfer(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  AGATE_REQUIRE(in.rank() >= 1, kInvalidArgument) << Where(ctx) << ": cannot slice a scalar";
  int64_t count = -1;
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const TensorType& operand = ctx.input(i);
    AGATE_REQUIRE(operand.dtype.is_integer() && operand.rank() == 1 && (count < 0 || operand.shape[0] == count),
                  kInvalidArgument)
        << Where(ctx) << ": input " << i << " ('" << ctx.node().inputs[i] << "') is " << operand.ToString()
        << "; starts, ends, axes and steps are integer vectors of one length";
    count = operand.shape[0];
  }
  return {in, TensorType{DType::Int(64), {in.rank()}}};
}

// RunTimeTopK: a TopK whose k (input 1, one integer) arrives at run time. Outputs 0 and 2 are
// the values and indices, compact at their run-time extents (the input's with k on the axis,
// bounded by the input's shape); outputs 1 and 3 their int64 extents.
Types RunTimeTopKInfer(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  NormalizeAxis(ctx.attrs().GetInt("axis", -1), in.rank(), Where(ctx));
  const TensorType& k = ctx.input(1);
  AGATE_REQUIRE(k.dtype.is_integer() && k.numel() == 1, kInvalidArgument)
      << Where(ctx) << ": input 1 ('" << ctx.node().inputs[1] << "', k) must hold one integer, got " << k.ToString();
  TensorType extents{DType::Int(64), {in.rank()}};
  return {in, extents, TensorType{DType::Int(64), in.shape}, extents};
}

// RunTimeSplit: a Split whose sizes (input 1, one integer per part) arrive at run time. Its
// outputs alternate: part i (compact at its run-time extents: the input's with split[i] on the
// axis, bounded by the input's shape), then part i's int64 extents.
Types RunTimeSplitInfer(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  NormalizeAxis(ctx.attrs().GetInt("axis", 0), in.rank(), Where(ctx));
  const TensorType& split = ctx.input(1);
  AGATE_REQUIRE(ctx.num_outputs() % 2 == 0 && split.dtype.is_integer() && split.rank() == 1 &&
                    split.shape[0] == ctx.num_outputs() / 2,
                kInvalidArgument)
      << Where(ctx) << ": input 1 ('" << ctx.node().inputs[1] << "', the split) is " << split.ToString() << " for "
      << ctx.num_outputs() / 2 << " parts";
  Types out;
  for (int i = 0; i < ctx.num_outputs() / 2; ++i) {
    out.push_back(in);
    out.push_back(TensorType{DType::Int(64), {in.rank()}});
  }
  return out;
}

Types TransposeInfer(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  std::vector<int64_t> perm = TransposePerm(ctx.node(), in.rank());
  Shape out;
  for (int64_t p : perm) out.push_back(in.shape[p]);
  return {TensorType{in.dtype, out}};
}

Types ConcatInfer(const InferContext& ctx) {
  const TensorType& first = ctx.input(0);
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis"), first.rank(), Where(ctx));
  Shape out = first.shape;
  out[axis] = 0;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const TensorType& t = ctx.input(i);
    AGATE_REQUIRE(t.rank() == first.rank() && t.dtype == first.dtype, kInvalidArgument)
        << Where(ctx) << ": input " << i << " is " << t.ToString() << ", input 0 is " << first.ToString();
    for (int d = 0; d < t.rank(); ++d) {
      AGATE_REQUIRE(d == axis || t.shape[d] == first.shape[d], kInvalidArgument)
          << Where(ctx) << ": input " << i << " " << ShapeToString(t.shape) << " differs from "
          << ShapeToString(first.shape) << " on axis " << d;
    }
    out[axis] += t.shape[axis];
  }
  return {TensorType{first.dtype, out}};
}

Types SplitInfer(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", 0), in.rank(), Where(ctx));
  std::vector<int64_t> split = ctx.attrs().GetInts("split", {});
  int n = ctx.num_outputs();
  if (split.empty()) {
    int64_t dim = in.shape[axis];
    int64_t chunk = (dim + n - 1) / n;
    for (int i = 0; i < n; ++i) split.push_back(std::max<int64_t>(0, std::min(chunk, dim - chunk * i)));
  }
  AGATE_REQUIRE(static_cast<int>(split.size()) == n, kInvalidArgument)
      << Where(ctx) << ": split has " << split.size() << " parts for " << n << " outputs";
  for (int64_t part : split) {
    AGATE_REQUIRE(part >= 0 && part <= in.shape[axis], kInvalidArgument)
        << Where(ctx) << ": split size " << part << " outside [0, " << in.shape[axis] << "]";
  }
  AGATE_REQUIRE(std::accumulate(split.begin(), split.end(), int64_t{0}) == in.shape[axis], kInvalidArgument)
      << Where(ctx) << ": split sizes do not add up to " << in.shape[axis];
  Types out;
  for (int64_t s : split) {
    Shape shape = in.shape;
    shape[axis] = s;
    out.push_back(TensorType{in.dtype, shape});
  }
  return out;
}

Types SliceInfer(const InferContext& ctx) {
  return {TensorType{ctx.input(0).dtype, ComputeSlice(ctx.node(), ctx.input(0).shape).out}};
}

Types GatherInfer(const InferContext& ctx) {
  const TensorType& data = ctx.input(0);
  const TensorType& indices = ctx.input(1);
  AGATE_REQUIRE(indices.dtype.is_integer(), kInvalidArgument) << Where(ctx) << ": indices must be integers";
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", 0), data.rank(), Where(ctx));
  Shape out(data.shape.begin(), data.shape.begin() + axis);
  out.insert(out.end(), indices.shape.begin(), indices.shape.end());
  out.insert(out.end(), data.shape.begin() + axis + 1, data.shape.end());
  return {TensorType{data.dtype, out}};
}

// GatherElements and ScatterElements: indices of the data's rank, no longer than the data
// along every axis but `axis` (their positions there address the data directly: a longer
// one would read or write past it).
void CheckElementIndices(const InferContext& ctx, const TensorType& data, const TensorType& indices) {
  AGATE_REQUIRE(indices.dtype.is_integer(), kInvalidArgument) << Where(ctx) << ": indices must be integers";
  AGATE_REQUIRE(indices.rank() == data.rank(), kInvalidArgument)
      << Where(ctx) << ": indices " << ShapeToString(indices.shape) << " must have the rank of the data "
      << ShapeToString(data.shape);
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", 0), data.rank(), Where(ctx));
  for (int d = 0; d < data.rank(); ++d) {
    AGATE_REQUIRE(d == axis || indices.shape[d] <= data.shape[d], kInvalidArgument)
        << Where(ctx) << ": indices " << ShapeToString(indices.shape) << " are longer than the data "
        << ShapeToString(data.shape) << " along axis " << d << " (only axis " << axis << " may differ)";
  }
}

Types GatherElementsInfer(const InferContext& ctx) {
  CheckElementIndices(ctx, ctx.input(0), ctx.input(1));
  return {TensorType{ctx.input(0).dtype, ctx.input(1).shape}};
}

Types ScatterElementsInfer(const InferContext& ctx) {
  const TensorType& data = ctx.input(0);
  const TensorType& indices = ctx.input(1);
  CheckElementIndices(ctx, data, indices);
  AGATE_REQUIRE(ctx.input(2).shape == indices.shape && ctx.input(2).dtype == data.dtype, kInvalidArgument)
      << Where(ctx) << ": updates " << ctx.input(2).dtype.ToString() << ShapeToString(ctx.input(2).shape)
      << " must have the indices' shape " << ShapeToString(indices.shape) << " and the data's type "
      << data.dtype.ToString();
  return {data};
}

// GatherND and ScatterND: index tuples along the indices' last axis, each of 1 to
// rank - batch_dims coordinates. Returns the tuple length.
int64_t CheckIndexTuples(const InferContext& ctx, const TensorType& data, const TensorType& indices, int64_t batch) {
  AGATE_REQUIRE(indices.dtype.is_integer(), kInvalidArgument) << Where(ctx) << ": indices must be integers";
  AGATE_REQUIRE(data.rank() >= 1 && indices.rank() >= 1, kInvalidArgument)
      << Where(ctx) << ": data " << ShapeToString(data.shape) << " and indices " << ShapeToString(indices.shape)
      << " must both have rank >= 1";
  AGATE_REQUIRE(batch >= 0 && batch < std::min(data.rank(), indices.rank()), kInvalidArgument)
      << Where(ctx) << ": batch_dims " << batch << " must be below both ranks (data " << ShapeToString(data.shape)
      << ", indices " << ShapeToString(indices.shape) << ")";
  for (int64_t d = 0; d < batch; ++d) {
    AGATE_REQUIRE(data.shape[d] == indices.shape[d], kInvalidArgument)
        << Where(ctx) << ": batch axis " << d << " differs between data " << ShapeToString(data.shape)
        << " and indices " << ShapeToString(indices.shape);
  }
  int64_t last = indices.shape.back();
  AGATE_REQUIRE(last >= 1 && last <= data.rank() - batch, kInvalidArgument)
      << Where(ctx) << ": index tuples of " << last << " coordinates (indices " << ShapeToString(indices.shape)
      << ") into data " << ShapeToString(data.shape) << " must have 1 to " << data.rank() - batch;
  return last;
}

Types GatherNDInfer(const InferContext& ctx) {
  const TensorType& data = ctx.input(0);
  const TensorType& indices = ctx.input(1);
  int64_t batch = ctx.attrs().GetInt("batch_dims", 0);
  int64_t last = CheckIndexTuples(ctx, data, indices, batch);
  Shape out(indices.shape.begin(), indices.shape.end() - 1);
  out.insert(out.end(), data.shape.begin() + batch + last, data.shape.end());
  return {TensorType{data.dtype, out}};
}

Types ScatterNDInfer(const InferContext& ctx) {
  const TensorType& data = ctx.input(0);
  const TensorType& indices = ctx.input(1);
  int64_t last = CheckIndexTuples(ctx, data, indices, 0);
  Shape updates(indices.shape.begin(), indices.shape.end() - 1);
  updates.insert(updates.end(), data.shape.begin() + last, data.shape.end());
  AGATE_REQUIRE(ctx.input(2).shape == updates && ctx.input(2).dtype == data.dtype, kInvalidArgument)
      << Where(ctx) << ": updates " << ctx.input(2).dtype.ToString() << ShapeToString(ctx.input(2).shape)
      << " must be " << data.dtype.ToString() << ShapeToString(updates) << " (the indices' tuples by the data's "
      << "remaining axes)";
  return {data};
}

Types ExpandInfer(const InferContext& ctx) {
  return {TensorType{ctx.input(0).dtype,
                     BroadcastShapes(ctx.input(0).shape, ctx.attrs().GetInts("shape"), Where(ctx))}};
}

Types TileInfer(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  std::vector<int64_t> repeats = ctx.attrs().GetInts("repeats");
  AGATE_REQUIRE(static_cast<int>(repeats.size()) == in.rank(), kInvalidArgument)
      << Where(ctx) << ": repeats has " << repeats.size() << " values for rank " << in.rank();
  Shape out = in.shape;
  for (int i = 0; i < in.rank(); ++i) out[i] *= repeats[i];
  return {TensorType{in.dtype, out}};
}

Types PadInfer(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  const int value = PadValueInput(ctx.node());
  AGATE_REQUIRE(value < 0 || ctx.input(value).numel() == 1, kInvalidArgument)
      << Where(ctx) << ": the constant value ('" << ctx.node().inputs[value] << "') is "
      << ctx.input(value).ToString() << ", not one value";
  std::vector<int64_t> pads = ctx.attrs().GetInts("pads");
  AGATE_REQUIRE(static_cast<int>(pads.size()) == 2 * in.rank(), kInvalidArgument)
      << Where(ctx) << ": pads has " << pads.size() << " values for rank " << in.rank();
  Shape out = in.shape;
  for (int i = 0; i < in.rank(); ++i) {
    out[i] += pads[i] + pads[i + in.rank()];
    AGATE_REQUIRE(out[i] >= 0, kInvalidArgument) << Where(ctx) << ": negative output extent on axis " << i;
  }
  return {TensorType{in.dtype, out}};
}

Types DepthToSpaceInfer(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  int64_t b = ctx.attrs().GetInt("blocksize");
  AGATE_REQUIRE(in.rank() == 4 && in.shape[1] % (b * b) == 0, kInvalidArgument)
      << Where(ctx) << ": needs NCHW input with C divisible by blocksize^2";
  return {TensorType{in.dtype, {in.shape[0], in.shape[1] / (b * b), in.shape[2] * b, in.shape[3] * b}}};
}

Types SpaceToDepthInfer(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  int64_t b = ctx.attrs().GetInt("blocksize");
  AGATE_REQUIRE(in.rank() == 4 && in.shape[2] % b == 0 && in.shape[3] % b == 0, kInvalidArgument)
      << Where(ctx) << ": needs NCHW input with H and W divisible by blocksize";
  return {TensorType{in.dtype, {in.shape[0], in.shape[1] * b * b, in.shape[2] / b, in.shape[3] / b}}};
}

Types ResizeInfer(const InferContext& ctx) {
  return {TensorType{ctx.input(0).dtype, ResizeOutputShape(ctx.node(), ctx.input(0).shape)}};
}

std::string ResizeCheck(const Node& node) {
  std::string mode = node.attrs.GetString("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic") return "mode=" + mode;
  std::string ct = node.attrs.GetString("coordinate_transformation_mode", "half_pixel");
  for (const char* known : {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                            "tf_crop_and_resize", "tf_half_pixel_for_nn"}) {
    if (ct == known) return "";
  }
  return "coordinate_transformation_mode=" + ct;
}

Types ShapeInfer(const InferContext& ctx) {
  int rank = ctx.input(0).rank();
  int64_t start = ctx.attrs().GetInt("start", 0);
  int64_t end = ctx.attrs().GetInt("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  return {TensorType{DType::Int(64), {std::max<int64_t>(0, end - start)}}};
}

Types ConstantOfShapeInfer(const InferContext& ctx) {
  DType dtype = ctx.attrs().Has("value") ? ctx.attrs().GetTensor("value").dtype() : DType::Float(32);
  return {TensorType{dtype, ctx.attrs().GetInts("shape")}};
}

Types RangeInfer(const InferContext& ctx) {
  // start, limit and delta read at run time, compiled for the declared length (the importer's
  // marker; run_time_shape_operand.h): the kernel checks they give it.
  if (ctx.attrs().Has(kRunTimeOperandAttr)) {
    int64_t length = ctx.attrs().GetInt("length", -1);
    AGATE_REQUIRE(length >= 0, kInvalidArgument) << Where(ctx) << ": no length for start, limit and delta read at run time";
    return {TensorType{ctx.input(0).dtype, {length}}};
  }
  for (int i = 0; i < 3; ++i) {
    AGATE_REQUIRE(ctx.value(i) != nullptr, kUnsupported)
        << Where(ctx) << ": start, limit and delta must be compile-time constants (the output shape depends on them)";
  }
  double start = ctx.value(0)->GetDouble(0), limit = ctx.value(1)->GetDouble(0), delta = ctx.value(2)->GetDouble(0);
  AGATE_REQUIRE(delta != 0, kInvalidArgument) << Where(ctx) << ": delta is 0";
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((limit - start) / delta)));
  return {TensorType{ctx.input(0).dtype, {n}}};
}

Types EyeLikeInfer(const InferContext& ctx) {
  AGATE_REQUIRE(ctx.input(0).rank() == 2, kInvalidArgument) << Where(ctx) << ": input must be 2-D";
  DType dtype = ctx.attrs().Has("dtype") ? DType::Parse(ctx.attrs().GetString("dtype")) : ctx.input(0).dtype;
  return {TensorType{dtype, ctx.input(0).shape}};
}

Types OneHotInfer(const InferContext& ctx) {
  const TensorType& indices = ctx.input(0);
  int out_rank = indices.rank() + 1;
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", -1), out_rank, Where(ctx));
  std::vector<double> depth = ctx.attrs().GetFloats("depth");
  AGATE_REQUIRE(depth.size() == 1, kInvalidArgument) << Where(ctx) << ": depth must be a scalar";
  // Checked as a double: a NaN or huge depth must not reach the int conversion (undefined).
  AGATE_REQUIRE(depth[0] >= 1 && depth[0] <= double{1 << 30}, kInvalidArgument)
      << Where(ctx) << ": depth " << depth[0] << " must be in [1, 2^30]";
  Shape out = indices.shape;
  out.insert(out.begin() + axis, static_cast<int64_t>(depth[0]));
  return {TensorType{ctx.input(1).dtype, out}};
}

Types TopKInfer(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", -1), in.rank(), Where(ctx));
  std::vector<int64_t> k = ctx.attrs().GetInts("k");
  AGATE_REQUIRE(k.size() == 1 && k[0] >= 0 && k[0] <= in.shape[axis], kInvalidArgument)
      << Where(ctx) << ": k must be one value in [0, " << in.shape[axis] << "]";
  Shape out = in.shape;
  out[axis] = k[0];
  return {TensorType{in.dtype, out}, TensorType{DType::Int(64), out}};
}

// A run-time operand (StaticOperand::run_time) at input 1 that stands for the one-value
// attribute `attribute`: one integer, and not given twice.
void CheckRunTimeScalar(const InferContext& ctx, const std::string& attribute) {
  const TensorType& operand = ctx.input(1);
  AGATE_REQUIRE(operand.dtype.is_integer() && operand.numel() == 1, kInvalidArgument)
      << Where(ctx) << ": input 1 ('" << ctx.node().inputs[1] << "', the " << attribute
      << ") must hold one integer, got " << operand.ToString();
  AGATE_REQUIRE(!ctx.attrs().Has(attribute), kInvalidArgument)
      << Where(ctx) << ": the " << attribute << " is given both as input 1 and as an attribute";
}

Types TriluInfer(const InferContext& ctx) {
  if (ctx.has_input(1)) {
    CheckRunTimeScalar(ctx, "k");
  } else {
    ctx.attrs().GetSingleInt("k", 0);  // one value when given
  }
  AGATE_REQUIRE(ctx.input(0).rank() >= 2, kInvalidArgument) << Where(ctx) << ": input rank must be >= 2";
  return {ctx.input(0)};
}

Types CumSumInfer(const InferContext& ctx) {
  AGATE_REQUIRE(ctx.input(0).rank() >= 1, kInvalidArgument) << Where(ctx) << ": input rank must be >= 1";
  if (ctx.has_input(1)) {
    CheckRunTimeScalar(ctx, "axis");  // its range is checked when the model runs
  } else {
    NormalizeAxis(ctx.attrs().GetSingleInt("axis"), ctx.input(0).rank(), Where(ctx));
  }
  return {ctx.input(0)};
}

Types SameAsFirst(const InferContext& ctx) { return {ctx.input(0)}; }

// LayoutTransform between NCHW and the blocked NCHW{c}c layouts, or between two
// block sizes (inserted by the layout pass).
Types LayoutTransformInfer(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  std::string src = ctx.attrs().GetString("src_layout");
  std::string dst = ctx.attrs().GetString("dst_layout");
  int64_t src_block = ParseLayoutBlock(src, Where(ctx)), dst_block = ParseLayoutBlock(dst, Where(ctx));
  AGATE_REQUIRE(src_block != dst_block, kUnsupported) << Where(ctx) << ": " << src << " -> " << dst;
  Shape logical = in.shape;
  if (src_block > 0) {
    AGATE_REQUIRE(in.rank() == 5 && in.shape[4] == src_block, kInvalidArgument)
        << Where(ctx) << ": " << in.ToString() << " is not in layout " << src;
    logical = {in.shape[0], in.shape[1] * src_block, in.shape[2], in.shape[3]};
  } else {
    AGATE_REQUIRE(in.rank() == 4, kInvalidArgument) << Where(ctx) << ": " << in.ToString() << " is not NCHW";
  }
  if (dst_block == 0) return {TensorType{in.dtype, logical}};
  AGATE_REQUIRE(logical[1] % dst_block == 0, kInvalidArgument)
      << Where(ctx) << ": " << logical[1] << " channels cannot be blocked by " << dst_block;
  return {TensorType{in.dtype, {logical[0], logical[1] / dst_block, logical[2], logical[3], dst_block}}};
}

// RunTimeRowExtents: the run-time extents of a value whose rows come one for one from the rows of
// a value of run-time extents (an operator computed on that value's upper bound,
// frontends/onnx/importer.cc): input 0 the source's int64 extents, attribute "shape" the value's
// upper-bound shape, "axis" the axis of its rows, "source_axis" the element of input 0 that
// counts them; the output is "shape" with the count at "axis".
Types RunTimeRowExtentsInfer(const InferContext& ctx) {
  const TensorType& source = ctx.input(0);
  AGATE_REQUIRE(source.dtype == DType::Int(64) && source.rank() == 1, kInvalidArgument)
      << Where(ctx) << ": input 0 ('" << ctx.node().inputs[0] << "') must be the int64 extents of a value, got "
      << source.ToString();
  const std::vector<int64_t> shape = ctx.attrs().GetInts("shape");
  const int64_t axis = ctx.attrs().GetInt("axis", 0), source_axis = ctx.attrs().GetInt("source_axis", 0);
  AGATE_REQUIRE(axis >= 0 && axis < static_cast<int64_t>(shape.size()) && source_axis >= 0 &&
                    source_axis < source.numel(),
                kInvalidArgument)
      << Where(ctx) << ": axis " << axis << " of a rank-" << shape.size() << " value from element " << source_axis
      << " of " << source.ToString();
  return {TensorType{DType::Int(64), {static_cast<int64_t>(shape.size())}}};
}

// RunTimeToBoundLayout and RunTimeToCompactLayout: a value of run-time extents (input 0, typed
// with its upper bounds) between its two layouts, input 1 its int64 extents. Compact (what the
// run-time operators write and a model output holds): row-major over the actual extents, at the
// front of the buffer. Bound layout: each element at its coordinates in the upper-bound shape.
// Where the one varying axis follows only axes of extent 1 the two are the same bytes; elsewhere
// (NonZero's [rank, count] positions of a mask of rank 2 or more) operators that compute row for
// row on the upper bound need the bound layout, and a model output so computed the compact one
// (frontends/onnx/importer.cc). The output has the input's type.
Types RunTimeLayoutInfer(const InferContext& ctx) {
  const TensorType& data = ctx.input(0);
  const TensorType& extents = ctx.input(1);
  AGATE_REQUIRE(extents.dtype == DType::Int(64) && extents.shape == Shape{data.rank()}, kInvalidArgument)
      << Where(ctx) << ": input 1 ('" << ctx.node().inputs[1] << "') must be the int64[" << data.rank()
      << "] extents of input 0 " << data.ToString() << ", got " << extents.ToString();
  return {data};
}

}  // namespace

void RegisterTensorOps(OpRegistry* r) {
  const OpKind kI = OpKind::kInjective;
  r->Register(Def("Reshape", kI, 1, 1, {"shape", "allowzero"}, ReshapeInfer, {{1, "shape"}}));
  r->Register(Def("Flatten", kI, 1, 1, {"axis"}, FlattenInfer));
  r->Register(Def("Squeeze", kI, 1, 1, {"axes"}, SqueezeInfer, {{1, "axes"}}));
  r->Register(Def("Unsqueeze", kI, 1, 1, {"axes"}, UnsqueezeInfer, {{1, "axes"}}));
  r->Register(Def("RunTimeReshape", OpKind::kOpaque, 2, 2, {"form", "allowzero"}, RunTimeReshapeInfer));
  r->Register(Def("RunTimeSlice", OpKind::kOpaque, 3, 5, {}, RunTimeSliceInfer));
  r->Register(Def("RunTimeSplit", OpKind::kOpaque, 2, 2, {"axis"}, RunTimeSplitInfer));
  r->Register(Def("RunTimeTopK", OpKind::kOpaque, 2, 2, {"axis", "largest", "sorted"}, RunTimeTopKInfer));
  r->Register(Def("RunTimeRowExtents", OpKind::kOpaque, 1, 1, {"shape", "axis", "source_axis"}, RunTimeRowExtentsInfer));
  r->Register(Def("RunTimeToBoundLayout", OpKind::kOpaque, 2, 2, {}, RunTimeLayoutInfer));
  r->Register(Def("RunTimeToCompactLayout", OpKind::kOpaque, 2, 2, {}, RunTimeLayoutInfer));
  r->Register(Def("Transpose", kI, 1, 1, {"perm"}, TransposeInfer));
  r->Register(Def("Concat", kI, 1, -1, {"axis"}, ConcatInfer));
  r->Register(Def("Split", kI, 1, 1, {"axis", "split"}, SplitInfer, {{1, "split"}}));
  r->Register(Def("Slice", kI, 1, 1, {"starts", "ends", "axes", "steps"}, SliceInfer,
                  {{1, "starts"}, {2, "ends"}, {3, "axes"}, {4, "steps"}}));
  r->Register(Def("Gather", kI, 2, 2, {"axis"}, GatherInfer));
  r->Register(Def("GatherElements", kI, 2, 2, {"axis"}, GatherElementsInfer));
  r->Register(Def("GatherND", kI, 2, 2, {"batch_dims"}, GatherNDInfer));
  // A trailing run-time shape operand (run_time_shape_operand.h) is the last input.
  r->Register(Def("Expand", OpKind::kBroadcast, 1, 2, {"shape", kRunTimeOperandAttr}, ExpandInfer, {{1, "shape"}}));
  r->Register(Def("Tile", kI, 1, 2, {"repeats", kRunTimeOperandAttr}, TileInfer, {{1, "repeats"}}));
  // The constant value decides no shape: read at run time when it is not a constant (input 1).
  OpDef pad = Def("Pad", kI, 1, 3, {"pads", "mode", "value", kRunTimeOperandAttr}, PadInfer,
                  {{1, "pads"}, {2, "value", true, true, true, true}});
  pad.check = [](const Node& node) -> std::string {
    std::string mode = node.attrs.GetString("mode", "constant");
    // wrap: ONNX opset 19 (the input repeats periodically, as if its edges were joined).
    return mode == "constant" || mode == "reflect" || mode == "edge" || mode == "wrap" ? "" : "mode=" + mode;
  };
  r->Register(pad);
  r->Register(Def("DepthToSpace", kI, 1, 1, {"blocksize", "mode"}, DepthToSpaceInfer));
  r->Register(Def("SpaceToDepth", kI, 1, 1, {"blocksize"}, SpaceToDepthInfer));
  OpDef resize = Def("Resize", kI, 1, 2,
                     {"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
                      "extrapolation_value", "roi", "scales", "sizes", "antialias", kRunTimeOperandAttr},
                     ResizeInfer, {{1, "roi", true}, {2, "scales", true}, {3, "sizes"}});
  resize.check = ResizeCheck;
  r->Register(resize);
  // k and axis decide which elements, not the shape: a run-time value stays input 1.
  r->Register(Def("Trilu", OpKind::kInjective, 1, 2, {"upper", "k"}, TriluInfer, {{1, "k", false, false, true, true}}));
  r->Register(Def("LayoutTransform", kI, 1, 1, {"src_layout", "dst_layout"}, LayoutTransformInfer));

  r->Register(Def("Shape", OpKind::kOpaque, 1, 1, {"start", "end"}, ShapeInfer));
  r->Register(Def("Size", OpKind::kOpaque, 1, 1, {}, [](const InferContext&) {
    return Types{TensorType{DType::Int(64), {}}};
  }));
  r->Register(Def("ConstantOfShape", OpKind::kOpaque, 0, 1, {"shape", "value", kRunTimeOperandAttr},
                  ConstantOfShapeInfer, {{0, "shape"}}));
  r->Register(Def("Range", OpKind::kOpaque, 3, 3, {"length", kRunTimeOperandAttr}, RangeInfer,
                  {{0, ""}, {1, ""}, {2, ""}}));
  r->Register(Def("EyeLike", OpKind::kOpaque, 1, 1, {"dtype", "k"}, EyeLikeInfer));
  r->Register(Def("OneHot", OpKind::kOpaque, 2, 3, {"axis", "depth", kRunTimeOperandAttr}, OneHotInfer,
                  {{1, "depth", true}}));
  r->Register(Def("TopK", OpKind::kOpaque, 1, 1, {"axis", "largest", "sorted", "k"}, TopKInfer, {{1, "k"}}));
  r->Register(Def("CumSum", OpKind::kOpaque, 1, 2, {"exclusive", "reverse", "axis"}, CumSumInfer,
                  {{1, "axis", false, false, true, true}}));
  r->Register(Def("ScatterElements", OpKind::kOpaque, 3, 3, {"axis", "reduction"}, ScatterElementsInfer));
  r->Register(Def("ScatterND", OpKind::kOpaque, 3, 3, {"reduction"}, ScatterNDInfer));
}

}  // namespace graph
}  // namespace agate
