// Reference kernels of the data-movement and shape-producing operators.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/graph_eval/interpreter.h"
#include "core/graph_eval/kernel.h"
#include "core/graph/op_registry.h"
#include "core/graph/run_time_shape_operand.h"
#include "core/graph/shape_rules.h"
#include "core/support/error.h"

namespace agate {
namespace graph_eval {

using namespace graph;  // the graph IR is what this layer runs
namespace {

using Tensors = std::vector<Tensor>;

// A shape operand read at run time (run_time_shape_operand.h) must give the shape the node was
// compiled for; `input` is the shape of input 0 (none when the operand is the only input).
void CheckShapeOperand(const KernelContext& ctx) {
  int index = RunTimeShapeOperandIndex(ctx.node);
  if (index < 0) return;
  Shape input = index == 0 ? Shape{} : ctx.in(0).shape();
  CheckRunTimeShapeOperand(ctx.node, input, ctx.in(index), ctx.outputs[0].shape);
}

int64_t Offset(const std::vector<int64_t>& index, const std::vector<int64_t>& strides) {
  int64_t off = 0;
  for (size_t d = 0; d < index.size(); ++d) off += index[d] * strides[d];
  return off;
}

// Output element i comes from input element offset_of(index of i).
Tensor MapIndices(const Tensor& in, const TensorType& out,
                  const std::function<int64_t(const std::vector<int64_t>&)>& offset_of) {
  std::vector<int64_t> offsets(out.numel());
  ForEachIndex(out.shape, [&](const std::vector<int64_t>& idx, int64_t linear) { offsets[linear] = offset_of(idx); });
  return GatherByOffsets(in, out, offsets);
}

int64_t WrapIndex(int64_t i, int64_t dim, const Node& node) {
  if (i < 0) i += dim;
  AGATE_REQUIRE(i >= 0 && i < dim, kOutOfRange) << node.Describe() << ": index " << i << " out of range [0, " << dim << ")";
  return i;
}

Tensors Reshape(const KernelContext& ctx) { return {ctx.in(0).Reshaped(ctx.outputs[0].shape)}; }

Tensors Transpose(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> perm = ctx.attrs().GetInts("perm", {});
  if (perm.empty())
    for (int i = x.rank() - 1; i >= 0; --i) perm.push_back(i);
  std::vector<int64_t> strides = RowMajorStrides(x.shape());
  return {MapIndices(x, ctx.outputs[0], [&](const std::vector<int64_t>& idx) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * strides[perm[d]];
    return off;
  })};
}

Tensors Concat(const KernelContext& ctx) {
  const TensorType& type = ctx.outputs[0];
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis"), type.rank(), ctx.node.Describe());
  Tensor out = ctx.NewOutput(0);
  size_t width = type.dtype.element_bytes();
  char* dst = static_cast<char*>(out.mutable_raw_data());
  std::vector<int64_t> out_strides = RowMajorStrides(type.shape);
  int64_t base = 0;
  for (size_t k = 0; k < ctx.inputs.size(); ++k) {
    const Tensor& part = ctx.in(k);
    const char* src = static_cast<const char*>(part.raw_data());
    ForEachIndex(part.shape(), [&](const std::vector<int64_t>& idx, int64_t linear) {
      std::vector<int64_t> o = idx;
      o[axis] += base;
      std::memcpy(dst + Offset(o, out_strides) * width, src + linear * width, width);
    });
    base += part.shape()[axis];
  }
  return {out};
}

Tensors Split(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", 0), x.rank(), ctx.node.Describe());
  std::vector<int64_t> strides = RowMajorStrides(x.shape());
  Tensors out;
  int64_t base = 0;
  for (const TensorType& type : ctx.outputs) {
    out.push_back(MapIndices(x, type, [&](const std::vector<int64_t>& idx) {
      std::vector<int64_t> i = idx;
      i[axis] += base;
      return Offset(i, strides);
    }));
    base += type.shape[axis];
  }
  return out;
}

Tensors Slice(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  SliceSpec spec = ComputeSlice(ctx.node, x.shape());
  std::vector<int64_t> strides = RowMajorStrides(x.shape());
  return {MapIndices(x, ctx.outputs[0], [&](const std::vector<int64_t>& idx) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (spec.start[d] + idx[d] * spec.step[d]) * strides[d];
    return off;
  })};
}

Tensors Gather(const KernelContext& ctx) {
  const Tensor& data = ctx.in(0);
  const Tensor& indices = ctx.in(1);
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", 0), data.rank(), ctx.node.Describe());
  std::vector<int64_t> strides = RowMajorStrides(data.shape());
  std::vector<int64_t> index_strides = RowMajorStrides(indices.shape());
  int q = indices.rank();
  return {MapIndices(data, ctx.outputs[0], [&](const std::vector<int64_t>& idx) {
    int64_t off = 0;
    for (int d = 0; d < axis; ++d) off += idx[d] * strides[d];
    int64_t flat = 0;
    for (int d = 0; d < q; ++d) flat += idx[axis + d] * index_strides[d];
    off += WrapIndex(indices.GetInt(flat), data.shape()[axis], ctx.node) * strides[axis];
    for (int d = axis + 1; d < data.rank(); ++d) off += idx[d + q - 1] * strides[d];
    return off;
  })};
}

Tensors GatherElements(const KernelContext& ctx) {
  const Tensor& data = ctx.in(0);
  const Tensor& indices = ctx.in(1);
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", 0), data.rank(), ctx.node.Describe());
  std::vector<int64_t> strides = RowMajorStrides(data.shape());
  std::vector<int64_t> offsets(indices.numel());
  ForEachIndex(indices.shape(), [&](const std::vector<int64_t>& idx, int64_t linear) {
    std::vector<int64_t> i = idx;
    i[axis] = WrapIndex(indices.GetInt(linear), data.shape()[axis], ctx.node);
    offsets[linear] = Offset(i, strides);
  });
  return {GatherByOffsets(data, ctx.outputs[0], offsets)};
}

Tensors GatherND(const KernelContext& ctx) {
  const Tensor& data = ctx.in(0);
  const Tensor& indices = ctx.in(1);
  int64_t batch = ctx.attrs().GetInt("batch_dims", 0);
  int64_t last = indices.shape().back();
  std::vector<int64_t> strides = RowMajorStrides(data.shape());
  int64_t slice = 1;
  for (int d = batch + last; d < data.rank(); ++d) slice *= data.shape()[d];
  int64_t tuples = indices.numel() / std::max<int64_t>(last, 1);
  int64_t batch_count = 1;
  for (int d = 0; d < batch; ++d) batch_count *= data.shape()[d];
  int64_t per_batch = tuples / std::max<int64_t>(batch_count, 1);
  std::vector<int64_t> offsets;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t b = t / std::max<int64_t>(per_batch, 1);
    int64_t off = 0;
    int64_t rem = b;
    for (int d = static_cast<int>(batch) - 1; d >= 0; --d) {
      off += (rem % data.shape()[d]) * strides[d];
      rem /= data.shape()[d];
    }
    for (int64_t j = 0; j < last; ++j) {
      int64_t axis = batch + j;
      off += WrapIndex(indices.GetInt(t * last + j), data.shape()[axis], ctx.node) * strides[axis];
    }
    for (int64_t s = 0; s < slice; ++s) offsets.push_back(off + s);
  }
  return {GatherByOffsets(data, ctx.outputs[0], offsets)};
}

Tensors Expand(const KernelContext& ctx) {
  CheckShapeOperand(ctx);
  return {GatherByOffsets(ctx.in(0), ctx.outputs[0], BroadcastOffsets(ctx.outputs[0].shape, ctx.in(0).shape()))};
}

Tensors Tile(const KernelContext& ctx) {
  CheckShapeOperand(ctx);
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> strides = RowMajorStrides(x.shape());
  return {MapIndices(x, ctx.outputs[0], [&](const std::vector<int64_t>& idx) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (idx[d] % x.shape()[d]) * strides[d];
    return off;
  })};
}

Tensors Pad(const KernelContext& ctx) {
  CheckShapeOperand(ctx);
  const Tensor& x = ctx.in(0);
  const int operand = RunTimeShapeOperandIndex(ctx.node);
  std::vector<int64_t> pads = operand >= 0 ? ctx.in(operand).ToInts() : ctx.attrs().GetInts("pads");
  std::string mode = ctx.attrs().GetString("mode", "constant");
  std::vector<int64_t> strides = RowMajorStrides(x.shape());
  int rank = x.rank();
  bool any_outside = false;
  std::vector<int64_t> offsets(ctx.outputs[0].numel());
  ForEachIndex(ctx.outputs[0].shape, [&](const std::vector<int64_t>& idx, int64_t linear) {
    int64_t off = 0;
    for (int d = 0; d < rank; ++d) {
      int64_t dim = x.shape()[d];
      int64_t i = idx[d] - pads[d];
      if (i < 0 || i >= dim) {
        if (mode == "constant" || dim == 0) {
          off = -1;
          break;
        }
        if (mode == "edge") {
          i = std::clamp<int64_t>(i, 0, dim - 1);
        } else if (mode == "wrap") {
          i = ((i % dim) + dim) % dim;
        } else {  // reflect, without repeating the edge
          int64_t period = 2 * (dim - 1);
          if (period == 0) {
            i = 0;
          } else {
            i = ((i % period) + period) % period;
            if (i >= dim) i = period - i;
          }
        }
      }
      off += i * strides[d];
    }
    offsets[linear] = off;
    if (off < 0) any_outside = true;
  });
  Tensor out = GatherByOffsets(x, ctx.outputs[0], offsets);
  const int value_input = PadValueInput(ctx.node);
  double value = value_input >= 0 ? ctx.in(value_input).GetDouble(0) : ctx.attrs().GetFloat("value", 0.0);
  if (any_outside && value != 0.0)
    for (size_t i = 0; i < offsets.size(); ++i)
      if (offsets[i] < 0) out.SetDouble(i, value);
  return {out};
}

Tensors DepthToSpace(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t b = ctx.attrs().GetInt("blocksize");
  bool crd = ctx.attrs().GetString("mode", "DCR") == "CRD";
  int64_t c_out = ctx.outputs[0].shape[1];
  std::vector<int64_t> strides = RowMajorStrides(x.shape());
  return {MapIndices(x, ctx.outputs[0], [&](const std::vector<int64_t>& o) {
    int64_t i = o[2] % b, j = o[3] % b;
    int64_t c = crd ? o[1] * b * b + i * b + j : (i * b + j) * c_out + o[1];
    return o[0] * strides[0] + c * strides[1] + (o[2] / b) * strides[2] + (o[3] / b) * strides[3];
  })};
}

Tensors SpaceToDepth(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t b = ctx.attrs().GetInt("blocksize");
  int64_t c_in = x.shape()[1];
  std::vector<int64_t> strides = RowMajorStrides(x.shape());
  return {MapIndices(x, ctx.outputs[0], [&](const std::vector<int64_t>& o) {
    int64_t block = o[1] / c_in, c = o[1] % c_in;
    int64_t i = block / b, j = block % b;
    return o[0] * strides[0] + c * strides[1] + (o[2] * b + i) * strides[2] + (o[3] * b + j) * strides[3];
  })};
}

Tensors Trilu(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  bool upper = ctx.attrs().GetInt("upper", 1) != 0;
  int64_t k = ctx.has(1) ? ctx.in(1).GetInt(0) : ctx.attrs().GetSingleInt("k", 0);  // input 1: k at run time
  int rank = x.rank();
  std::vector<int64_t> offsets(x.numel());
  ForEachIndex(x.shape(), [&](const std::vector<int64_t>& idx, int64_t linear) {
    int64_t diff = idx[rank - 1] - idx[rank - 2];
    bool keep = upper ? diff >= k : diff <= k;
    offsets[linear] = keep ? linear : -1;
  });
  return {GatherByOffsets(x, ctx.outputs[0], offsets)};
}

// RunTimeReshape: the extents are those the static form (Reshape, Unsqueeze, Squeeze) infers
// from the operand's values read now, so a bad shape is refused by the same rule, naming the
// node. Output 0 holds the input's bytes at its front and zeros after them (up to its bounds).
Tensors RunTimeReshape(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Node form = ctx.node;
  form.op = ctx.attrs().GetString("form");
  form.attrs.Erase("form");
  form.attrs.Set(form.op == "Reshape" ? "shape" : "axes", ctx.in(1).ToInts());
  form.inputs.resize(1);
  form.outputs.resize(1);
  TensorType in{x.dtype(), x.shape()};
  const OpDef* def = OpRegistry::Global().Find(form.op);
  AGATE_CHECK(def != nullptr) << form.op << " is not registered";
  Shape extents = def->infer(InferContext(form, {&in}, {nullptr})).at(0).shape;
  const Shape& bounds = ctx.outputs[0].shape;
  AGATE_CHECK(extents.size() == bounds.size()) << ctx.node.Describe() << ": rank " << extents.size() << " for bounds "
                                               << ShapeToString(bounds);
  for (size_t i = 0; i < extents.size(); ++i) {
    AGATE_CHECK(extents[i] <= bounds[i]) << ctx.node.Describe() << ": extent " << extents[i] << " past its bound "
                                         << bounds[i];
  }
  Tensor y = ctx.NewOutput(0);
  if (x.nbytes() != 0) std::memcpy(y.mutable_raw_data(), x.raw_data(), x.nbytes());
  return {y, Tensor::FromInts(DType::Int(64), {static_cast<int64_t>(extents.size())}, extents)};
}

// RunTimeRowExtents: the bound shape with the source's row count on the rows' axis.
Tensors RunTimeRowExtents(const KernelContext& ctx) {
  std::vector<int64_t> extents = ctx.attrs().GetInts("shape");
  extents[ctx.attrs().GetInt("axis", 0)] = ctx.in(0).GetInt(ctx.attrs().GetInt("source_axis", 0));
  return {Tensor::FromInts(DType::Int(64), {static_cast<int64_t>(extents.size())}, extents)};
}

// The element offsets, in a buffer of shape `bounds`, of every coordinate inside `extents`,
// row-major: element k of a compact value lies at offset k, in the bound layout at offsets[k].
std::vector<int64_t> OffsetsInBounds(const Tensor& extents_tensor, const Shape& bounds, const Node& node) {
  const std::vector<int64_t> extents = extents_tensor.ToInts();
  AGATE_CHECK(extents.size() == bounds.size()) << node.Describe() << ": " << extents.size() << " extents for bounds "
                                               << ShapeToString(bounds);
  for (size_t d = 0; d < extents.size(); ++d) {
    AGATE_CHECK(extents[d] >= 0 && extents[d] <= bounds[d])
        << node.Describe() << ": extents " << ShapeToString(extents) << " past the bounds " << ShapeToString(bounds);
  }
  std::vector<int64_t> offsets;
  if (NumElements(extents) == 0) return offsets;
  std::vector<int64_t> at(extents.size(), 0);
  while (true) {
    int64_t offset = 0;
    for (size_t d = 0; d < at.size(); ++d) offset = offset * bounds[d] + at[d];
    offsets.push_back(offset);
    int d = static_cast<int>(at.size()) - 1;
    while (d >= 0 && ++at[d] == extents[d]) at[d--] = 0;
    if (d < 0) return offsets;
  }
}

// RunTimeToBoundLayout / RunTimeToCompactLayout (core/graph/ops_tensor.cc): the elements inside
// the extents moved between the compact layout and the bound layout; the rest are zeros.
Tensors MoveBetweenLayouts(const KernelContext& ctx, bool to_bound) {
  const Tensor& x = ctx.in(0);
  const size_t bytes = x.dtype().element_bytes();
  Tensor y = ctx.NewOutput(0);
  std::vector<int64_t> offsets = OffsetsInBounds(ctx.in(1), x.shape(), ctx.node);
  for (size_t k = 0; k < offsets.size(); ++k) {
    const size_t compact = k * bytes, bound = static_cast<size_t>(offsets[k]) * bytes;
    std::memcpy(static_cast<char*>(y.mutable_raw_data()) + (to_bound ? bound : compact),
                static_cast<const char*>(x.raw_data()) + (to_bound ? compact : bound), bytes);
  }
  return {y};
}

// RunTimeSlice: the static Slice with the operands read now (so a bad one is refused by the same
// rule, naming the node), its result at the front of the input-sized output.
Tensors RunTimeSlice(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Node slice = ctx.node;
  slice.op = "Slice";
  const char* names[] = {"", "starts", "ends", "axes", "steps"};
  for (int i = 1; i < 5; ++i)
    if (ctx.has(i)) slice.attrs.Set(names[i], ctx.in(i).ToInts());
  slice.inputs.resize(1);
  slice.outputs.resize(1);
  Tensor result = EvaluateNode(slice, {&x}).at(0);
  Tensor y = ctx.NewOutput(0);
  AGATE_CHECK(result.nbytes() <= y.nbytes()) << ctx.node.Describe() << ": a slice larger than its input";
  if (result.nbytes() != 0) std::memcpy(y.mutable_raw_data(), result.raw_data(), result.nbytes());
  return {y, Tensor::FromInts(DType::Int(64), {result.rank()}, result.shape())};
}

// RunTimeTopK: the static TopK with k read now (refused by the same rule when out of range,
// naming the node); values and indices at the front of their input-sized outputs.
Tensors RunTimeTopK(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Node topk = ctx.node;
  topk.op = "TopK";
  topk.attrs.Set("k", std::vector<int64_t>{ctx.in(1).GetInt(0)});
  topk.inputs.resize(1);
  topk.outputs = {ctx.node.outputs[0], ctx.node.outputs[2]};
  Tensors result = EvaluateNode(topk, {&x});
  Tensors out;
  for (int i = 0; i < 2; ++i) {
    Tensor bounded = ctx.NewOutput(2 * i);
    AGATE_CHECK(result[i].nbytes() <= bounded.nbytes()) << ctx.node.Describe() << ": k past the axis";
    if (result[i].nbytes() != 0) std::memcpy(bounded.mutable_raw_data(), result[i].raw_data(), result[i].nbytes());
    out.push_back(bounded);
    out.push_back(Tensor::FromInts(DType::Int(64), {result[i].rank()}, result[i].shape()));
  }
  return out;
}

// RunTimeSplit: the static Split with the sizes read now (refused by the same rule, naming the
// node); each part at the front of its input-sized output, followed by its extents.
Tensors RunTimeSplit(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Node split = ctx.node;
  split.op = "Split";
  split.attrs.Set("split", ctx.in(1).ToInts());
  split.inputs.resize(1);
  split.outputs.clear();
  for (size_t i = 0; i < ctx.node.outputs.size(); i += 2) split.outputs.push_back(ctx.node.outputs[i]);
  Tensors parts = EvaluateNode(split, {&x});
  Tensors out;
  for (size_t i = 0; i < parts.size(); ++i) {
    Tensor bounded = ctx.NewOutput(static_cast<int>(2 * i));
    if (parts[i].nbytes() != 0) std::memcpy(bounded.mutable_raw_data(), parts[i].raw_data(), parts[i].nbytes());
    out.push_back(bounded);
    out.push_back(Tensor::FromInts(DType::Int(64), {parts[i].rank()}, parts[i].shape()));
  }
  return out;
}

Tensors LayoutTransform(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> strides = RowMajorStrides(x.shape());
  int64_t src_block = x.rank() == 5 ? x.shape()[4] : 0;
  int64_t dst_block = ctx.outputs[0].rank() == 5 ? ctx.outputs[0].shape[4] : 0;
  // The input offset of logical element (n, channel, h, w).
  auto offset = [&](int64_t n, int64_t channel, int64_t h, int64_t w) {
    if (src_block == 0) return n * strides[0] + channel * strides[1] + h * strides[2] + w * strides[3];
    return n * strides[0] + (channel / src_block) * strides[1] + h * strides[2] + w * strides[3] + channel % src_block;
  };
  return {MapIndices(x, ctx.outputs[0], [&](const std::vector<int64_t>& o) {
    int64_t channel = dst_block ? o[1] * dst_block + o[4] : o[1];
    return offset(o[0], channel, o[2], o[3]);
  })};
}

Tensors ShapeKernel(const KernelContext& ctx) {
  const Shape& shape = ctx.in(0).shape();
  int rank = static_cast<int>(shape.size());
  int64_t start = ctx.attrs().GetInt("start", 0);
  if (start < 0) start += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  std::vector<int64_t> dims(shape.begin() + start, shape.begin() + start + ctx.outputs[0].shape[0]);
  return {Tensor::FromInts(DType::Int(64), ctx.outputs[0].shape, dims)};
}

Tensors ConstantOfShape(const KernelContext& ctx) {
  CheckShapeOperand(ctx);
  Tensor out = ctx.NewOutput(0);
  if (ctx.attrs().Has("value")) {
    const Tensor& v = ctx.attrs().GetTensor("value");
    for (int64_t i = 0; i < out.numel(); ++i) {
      if (v.dtype().is_float()) out.SetDouble(i, v.GetDouble(0));
      else out.SetInt(i, v.GetInt(0));
    }
  }
  return {out};
}

Tensors Range(const KernelContext& ctx) {
  Tensor out = ctx.NewOutput(0);
  if (ctx.attrs().Has(kRunTimeOperandAttr)) {  // compiled for the declared length: the values must give it
    double start = ctx.in(0).GetDouble(0), limit = ctx.in(1).GetDouble(0), delta = ctx.in(2).GetDouble(0);
    double count = std::ceil((limit - start) / delta);
    AGATE_REQUIRE(delta != 0 && (out.numel() == 0 ? count <= 0 : count == static_cast<double>(out.numel())),
                  kInvalidArgument)
        << ctx.node.Describe() << ": start " << start << ", limit " << limit << " and delta " << delta << " ('"
        << ctx.node.inputs[0] << "', '" << ctx.node.inputs[1] << "', '" << ctx.node.inputs[2]
        << "') do not give the " << out.numel() << " elements the model declares (and agate compiled for)";
  }
  bool is_float = out.dtype().is_float();
  for (int64_t i = 0; i < out.numel(); ++i) {
    if (is_float) out.SetDouble(i, ctx.in(0).GetDouble(0) + i * ctx.in(2).GetDouble(0));
    else out.SetInt(i, ctx.in(0).GetInt(0) + i * ctx.in(2).GetInt(0));
  }
  return {out};
}

Tensors EyeLike(const KernelContext& ctx) {
  Tensor out = ctx.NewOutput(0);
  int64_t k = ctx.attrs().GetInt("k", 0);
  int64_t cols = out.shape()[1];
  for (int64_t i = 0; i < out.numel(); ++i) out.SetInt(i, (i % cols) - (i / cols) == k ? 1 : 0);
  return {out};
}

Tensors OneHot(const KernelContext& ctx) {
  CheckShapeOperand(ctx);
  const Tensor& indices = ctx.in(0);
  const Tensor& values = ctx.in(1);
  Tensor out = ctx.NewOutput(0);
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", -1), out.rank(), ctx.node.Describe());
  int64_t depth = out.shape()[axis];
  std::vector<int64_t> index_strides = RowMajorStrides(indices.shape());
  ForEachIndex(out.shape(), [&](const std::vector<int64_t>& o, int64_t linear) {
    int64_t flat = 0, j = 0;
    for (int d = 0; d < out.rank(); ++d) {
      if (d == axis) continue;
      flat += o[d] * index_strides[j++];
    }
    int64_t index = static_cast<int64_t>(indices.GetDouble(flat));
    if (index < 0) index += depth;
    int pick = index == o[axis] ? 1 : 0;
    if (out.dtype().is_float()) out.SetDouble(linear, values.GetDouble(pick));
    else out.SetInt(linear, values.GetInt(pick));
  });
  return {out};
}

// Visits every 1-D line along `axis`: fn(offset of the first element, stride).
void ForEachLine(const Shape& shape, int axis, const std::function<void(int64_t, int64_t)>& fn) {
  std::vector<int64_t> strides = RowMajorStrides(shape);
  Shape outer = shape;
  outer[axis] = 1;
  ForEachIndex(outer, [&](const std::vector<int64_t>& idx, int64_t) { fn(Offset(idx, strides), strides[axis]); });
}

Tensors TopK(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", -1), x.rank(), ctx.node.Describe());
  bool largest = ctx.attrs().GetInt("largest", 1) != 0;
  int64_t k = ctx.outputs[0].shape[axis];
  int64_t n = x.shape()[axis];
  std::vector<int64_t> offsets(ctx.outputs[0].numel());
  Tensor indices(DType::Int(64), ctx.outputs[0].shape);  // the node may leave its indices out
  Shape out_shape = ctx.outputs[0].shape;
  std::vector<int64_t> out_strides = RowMajorStrides(out_shape);
  std::vector<int64_t> in_strides = RowMajorStrides(x.shape());
  ForEachIndex([&] { Shape s = x.shape(); s[axis] = 1; return s; }(), [&](const std::vector<int64_t>& idx, int64_t) {
    int64_t in_base = Offset(idx, in_strides), out_base = Offset(idx, out_strides);
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      double va = x.GetDouble(in_base + a * in_strides[axis]), vb = x.GetDouble(in_base + b * in_strides[axis]);
      return largest ? va > vb : va < vb;
    });
    for (int64_t j = 0; j < k; ++j) {
      offsets[out_base + j * out_strides[axis]] = in_base + order[j] * in_strides[axis];
      indices.SetInt(out_base + j * out_strides[axis], order[j]);
    }
  });
  return {GatherByOffsets(x, ctx.outputs[0], offsets), indices};
}

Tensors CumSum(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  // Input 1: the axis at run time.
  int64_t given = ctx.has(1) ? ctx.in(1).GetInt(0) : ctx.attrs().GetSingleInt("axis");
  int axis = NormalizeAxis(given, x.rank(), ctx.node.Describe());
  bool exclusive = ctx.attrs().GetInt("exclusive", 0) != 0, reverse = ctx.attrs().GetInt("reverse", 0) != 0;
  Tensor out = ctx.NewOutput(0);
  int64_t n = x.shape()[axis];
  ForEachLine(x.shape(), axis, [&](int64_t base, int64_t stride) {
    double acc = 0;
    for (int64_t j = 0; j < n; ++j) {
      int64_t e = reverse ? n - 1 - j : j;
      int64_t off = base + e * stride;
      if (exclusive) {
        out.SetDouble(off, acc);
        acc += x.GetDouble(off);
      } else {
        acc += x.GetDouble(off);
        out.SetDouble(off, acc);
      }
    }
  });
  return {out};
}

double Reduce(const std::string& reduction, double old_value, double update) {
  if (reduction == "add") return old_value + update;
  if (reduction == "mul") return old_value * update;
  if (reduction == "max") return std::max(old_value, update);
  if (reduction == "min") return std::min(old_value, update);
  return update;
}

Tensors ScatterElements(const KernelContext& ctx) {
  const Tensor& data = ctx.in(0);
  const Tensor& indices = ctx.in(1);
  const Tensor& updates = ctx.in(2);
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", 0), data.rank(), ctx.node.Describe());
  std::string reduction = ctx.attrs().GetString("reduction", "none");
  Tensor out = data;
  std::vector<int64_t> strides = RowMajorStrides(data.shape());
  ForEachIndex(indices.shape(), [&](const std::vector<int64_t>& idx, int64_t linear) {
    std::vector<int64_t> i = idx;
    i[axis] = WrapIndex(indices.GetInt(linear), data.shape()[axis], ctx.node);
    int64_t off = Offset(i, strides);
    out.SetDouble(off, Reduce(reduction, out.GetDouble(off), updates.GetDouble(linear)));
  });
  return {out};
}

Tensors ScatterND(const KernelContext& ctx) {
  const Tensor& data = ctx.in(0);
  const Tensor& indices = ctx.in(1);
  const Tensor& updates = ctx.in(2);
  std::string reduction = ctx.attrs().GetString("reduction", "none");
  int64_t last = indices.shape().back();
  std::vector<int64_t> strides = RowMajorStrides(data.shape());
  int64_t slice = 1;
  for (int d = last; d < data.rank(); ++d) slice *= data.shape()[d];
  Tensor out = data;
  int64_t tuples = indices.numel() / std::max<int64_t>(last, 1);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (int64_t j = 0; j < last; ++j)
      off += WrapIndex(indices.GetInt(t * last + j), data.shape()[j], ctx.node) * strides[j];
    for (int64_t s = 0; s < slice; ++s)
      out.SetDouble(off + s, Reduce(reduction, out.GetDouble(off + s), updates.GetDouble(t * slice + s)));
  }
  return {out};
}

Tensors Resize(const KernelContext& ctx) {
  CheckShapeOperand(ctx);
  const Tensor& x = ctx.in(0);
  const Shape& out_shape = ctx.outputs[0].shape;
  int rank = x.rank();
  double extrapolation = ctx.attrs().GetFloat("extrapolation_value", 0.0);
  // Scales read at run time decide the coordinate transform as constant ones would.
  Node node = ctx.node;
  if (node.attrs.GetString(kRunTimeOperandAttr, "") == "scales") {
    node.attrs.Set("scales", ctx.in(RunTimeShapeOperandIndex(node)).ToDoubles());
  }
  std::vector<double> scales = ResizeScales(node, x.shape(), out_shape);
  // taps[axis][out coordinate]; `outside[axis][o]` marks tf_crop_and_resize extrapolation.
  std::vector<std::vector<std::vector<ResizeTap>>> taps(rank);
  std::vector<std::vector<bool>> outside(rank);
  for (int d = 0; d < rank; ++d) {
    ResizeAxisTaps axis = ComputeResizeTaps(node, d, rank, x.shape()[d], out_shape[d], scales[d]);
    taps[d] = std::move(axis.taps);
    outside[d] = std::move(axis.outside);
  }
  std::vector<int64_t> strides = RowMajorStrides(x.shape());
  Tensor result = ctx.NewOutput(0);
  ForEachIndex(out_shape, [&](const std::vector<int64_t>& o, int64_t linear) {
    for (int d = 0; d < rank; ++d) {
      if (outside[d][o[d]]) {
        result.SetDouble(linear, extrapolation);
        return;
      }
    }
    // Sum over the product of the per-axis taps.
    double acc = 0;
    std::vector<size_t> k(rank, 0);
    while (true) {
      double w = 1;
      int64_t off = 0;
      for (int d = 0; d < rank; ++d) {
        const ResizeTap& tap = taps[d][o[d]][k[d]];
        w *= tap.weight;
        off += tap.index * strides[d];
      }
      acc += w * x.GetDouble(off);
      int d = rank - 1;
      for (; d >= 0; --d) {
        if (++k[d] < taps[d][o[d]].size()) break;
        k[d] = 0;
      }
      if (d < 0) break;
    }
    result.SetDouble(linear, acc);
  });
  return {result};
}

}  // namespace

void RegisterTensorKernels(KernelRegistry* r) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) r->Register(op, Reshape);
  r->Register("Transpose", Transpose);
  r->Register("Concat", Concat);
  r->Register("Split", Split);
  r->Register("Slice", Slice);
  r->Register("Gather", Gather);
  r->Register("GatherElements", GatherElements);
  r->Register("GatherND", GatherND);
  r->Register("Expand", Expand);
  r->Register("Tile", Tile);
  r->Register("Pad", Pad);
  r->Register("DepthToSpace", DepthToSpace);
  r->Register("SpaceToDepth", SpaceToDepth);
  r->Register("Trilu", Trilu);
  r->Register("RunTimeReshape", RunTimeReshape);
  r->Register("RunTimeSlice", RunTimeSlice);
  r->Register("RunTimeTopK", RunTimeTopK);
  r->Register("RunTimeSplit", RunTimeSplit);
  r->Register("RunTimeRowExtents", RunTimeRowExtents);
  r->Register("RunTimeToBoundLayout", [](const KernelContext& ctx) { return MoveBetweenLayouts(ctx, true); });
  r->Register("RunTimeToCompactLayout", [](const KernelContext& ctx) { return MoveBetweenLayouts(ctx, false); });
  r->Register("LayoutTransform", LayoutTransform);
  r->Register("Resize", Resize);
  r->Register("Shape", ShapeKernel);
  r->Register("Size", [](const KernelContext& ctx) {
    return Tensors{Tensor::FromInts(DType::Int(64), {}, {ctx.in(0).numel()})};
  });
  r->Register("ConstantOfShape", ConstantOfShape);
  r->Register("Range", Range);
  r->Register("EyeLike", EyeLike);
  r->Register("OneHot", OneHot);
  r->Register("TopK", TopK);
  r->Register("CumSum", CumSum);
  r->Register("ScatterElements", ScatterElements);
  r->Register("ScatterND", ScatterND);
}

}  // namespace graph_eval
}  // namespace agate
