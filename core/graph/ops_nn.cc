// Neural-network operators: convolutions, matrix products, normalizations,
// pools, softmax family.
#include <algorithm>

#include "core/graph/op_registry.h"
#include "core/graph/shape_rules.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

using Types = std::vector<TensorType>;

void RequireFloat(const InferContext& ctx, int input) {
  AGATE_REQUIRE(ctx.input(input).dtype.is_float(), kUnsupported)
      << Where(ctx) << ": input " << input << " is " << ctx.input(input).dtype << " (only floating point is supported)";
}

// The logical NCHW shape of a possibly blocked activation.
Shape LogicalShape(const Node& node, const Shape& shape) {
  int64_t block = InputLayoutBlock(node);
  if (block == 0) return shape;
  AGATE_REQUIRE(shape.size() == 5 && shape[4] == block, kInvalidArgument)
      << node.Describe() << ": " << ShapeToString(shape) << " is not in layout NCHW" << block << "c";
  return {shape[0], shape[1] * block, shape[2], shape[3]};
}

// The physical shape of a windowed op's output (OutputLayoutBlock).
Shape PhysicalShape(const Node& node, const Shape& logical) {
  int64_t block = OutputLayoutBlock(node);
  if (block == 0) return logical;
  AGATE_REQUIRE(logical[1] % block == 0, kInvalidArgument)
      << node.Describe() << ": " << logical[1] << " channels are not a multiple of the block " << block;
  return {logical[0], logical[1] / block, logical[2], logical[3], block};
}

std::vector<int64_t> KernelOf(const InferContext& ctx, const Shape& weight) {
  std::vector<int64_t> spatial(weight.begin() + 2, weight.end());
  std::vector<int64_t> kernel = ctx.attrs().GetInts("kernel_shape", spatial);
  AGATE_REQUIRE(kernel == spatial, kInvalidArgument)
      << Where(ctx) << ": kernel_shape " << ShapeToString(kernel) << " disagrees with the weight "
      << ShapeToString(weight);
  return kernel;
}

Types ConvInfer(const InferContext& ctx) {
  RequireFloat(ctx, 0);
  Shape x = LogicalShape(ctx.node(), ctx.input(0).shape);
  const Shape& w = ctx.input(1).shape;
  int64_t group = ctx.attrs().GetInt("group", 1);
  AGATE_REQUIRE(w.size() == x.size() && x.size() >= 3, kInvalidArgument)
      << Where(ctx) << ": input " << ShapeToString(x) << " and weight " << ShapeToString(w) << " ranks disagree";
  AGATE_REQUIRE(group > 0 && x[1] % group == 0 && w[0] % group == 0 && w[1] * group == x[1], kInvalidArgument)
      << Where(ctx) << ": input has " << x[1] << " channels but the weight " << ShapeToString(w) << " with group="
      << group << " expects " << w[1] * group;
  if (ctx.has_input(2)) {
    AGATE_REQUIRE(ctx.input(2).shape == Shape{w[0]}, kInvalidArgument)
        << Where(ctx) << ": bias " << ShapeToString(ctx.input(2).shape) << " must be [" << w[0] << "]";
  }
  WindowGeometry g = ComputeWindow(ctx.node(), x, KernelOf(ctx, w));
  Shape out{x[0], w[0]};
  out.insert(out.end(), g.out.begin(), g.out.end());
  return {TensorType{ctx.input(0).dtype, PhysicalShape(ctx.node(), out)}};
}

Types ConvTransposeInfer(const InferContext& ctx) {
  RequireFloat(ctx, 0);
  const Shape& x = ctx.input(0).shape;
  const Shape& w = ctx.input(1).shape;
  int64_t group = ctx.attrs().GetInt("group", 1);
  AGATE_REQUIRE(w.size() == x.size() && x.size() >= 3 && w[0] == x[1] && x[1] % group == 0, kInvalidArgument)
      << Where(ctx) << ": input " << ShapeToString(x) << " and weight " << ShapeToString(w) << " disagree";
  WindowGeometry g = ComputeTransposedWindow(ctx.node(), x, KernelOf(ctx, w));
  Shape out{x[0], w[1] * group};
  out.insert(out.end(), g.out.begin(), g.out.end());
  return {TensorType{ctx.input(0).dtype, out}};
}

Types GemmInfer(const InferContext& ctx) {
  const Shape& a = ctx.input(0).shape;
  const Shape& b = ctx.input(1).shape;
  AGATE_REQUIRE(a.size() == 2 && b.size() == 2, kInvalidArgument)
      << Where(ctx) << ": A and B must be matrices, got " << ShapeToString(a) << " and " << ShapeToString(b);
  bool ta = ctx.attrs().GetInt("transA", 0) != 0, tb = ctx.attrs().GetInt("transB", 0) != 0;
  int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1];
  int64_t kb = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
  AGATE_REQUIRE(k == kb, kInvalidArgument) << Where(ctx) << ": inner dimensions " << k << " and " << kb << " differ";
  Shape out{m, n};
  if (ctx.has_input(2)) {
    AGATE_REQUIRE(BroadcastShapes(ctx.input(2).shape, out, Where(ctx)) == out, kInvalidArgument)
        << Where(ctx) << ": C " << ShapeToString(ctx.input(2).shape) << " does not broadcast to " << ShapeToString(out);
  }
  return {TensorType{ctx.input(0).dtype, out}};
}

Types MatMulInfer(const InferContext& ctx) {
  AGATE_REQUIRE(ctx.input(0).dtype == ctx.input(1).dtype, kInvalidArgument) << Where(ctx) << ": dtypes differ";
  return {TensorType{ctx.input(0).dtype, MatMulShape(ctx.input(0).shape, ctx.input(1).shape, Where(ctx))}};
}

Types BatchNormInfer(const InferContext& ctx) {
  RequireFloat(ctx, 0);
  bool training = ctx.attrs().GetInt("training_mode", 0) != 0;
  AGATE_REQUIRE(training || ctx.num_outputs() == 1, kUnsupported)
      << Where(ctx) << ": running statistics outputs need training_mode=1";
  const Shape& x = ctx.input(0).shape;
  AGATE_REQUIRE(x.size() >= 2, kInvalidArgument) << Where(ctx) << ": input rank must be >= 2";
  for (int i = 1; i < 5; ++i) {
    AGATE_REQUIRE(ctx.input(i).shape == Shape{x[1]}, kInvalidArgument)
        << Where(ctx) << ": input " << i << " is " << ShapeToString(ctx.input(i).shape) << ", expected [" << x[1]
        << "] (one value per channel)";
  }
  // Training mode: Y, then the updated running mean and variance.
  Types out{ctx.input(0)};
  for (int i = 1; i < ctx.num_outputs(); ++i) out.push_back(ctx.input(i + 2));
  return out;
}

Types InstanceNormInfer(const InferContext& ctx) {
  RequireFloat(ctx, 0);
  const Shape& x = ctx.input(0).shape;
  AGATE_REQUIRE(x.size() >= 3, kInvalidArgument) << Where(ctx) << ": input rank must be >= 3";
  for (int i = 1; i < 3; ++i) {
    AGATE_REQUIRE(ctx.input(i).shape == Shape{x[1]}, kInvalidArgument)
        << Where(ctx) << ": input " << i << " must be [" << x[1] << "]";
  }
  return {ctx.input(0)};
}

// With `data_layout` (set by the layout pass for channels-last blocks computed in the layout of
// the convolutions around them): the input is a 4-D NCHW activation in that layout and each pixel
// is normalized over its channels (axis 1), scale and bias [C]; the output has the input's layout.
Types ChannelLayerNormInfer(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  Shape logical = LogicalShape(ctx.node(), x.shape);
  AGATE_REQUIRE(logical.size() == 4 && ctx.attrs().GetInt("axis", 1) == 1 && ctx.num_outputs() == 1, kInvalidArgument)
      << Where(ctx) << ": with data_layout the input must be a 4-D activation normalized over its channels (axis=1) "
      << "with one output";
  for (int i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    AGATE_REQUIRE(ctx.input(i).shape == Shape{logical[1]}, kInvalidArgument)
        << Where(ctx) << ": input " << i << " " << ShapeToString(ctx.input(i).shape) << " must be [" << logical[1] << "]";
  }
  return {x};
}

Types LayerNormInfer(const InferContext& ctx) {
  RequireFloat(ctx, 0);
  if (ctx.attrs().Has("data_layout")) return ChannelLayerNormInfer(ctx);
  const TensorType& x = ctx.input(0);
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", -1), x.rank(), Where(ctx));
  Shape normalized(x.shape.begin() + axis, x.shape.end());
  for (int i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    AGATE_REQUIRE(BroadcastShapes(ctx.input(i).shape, normalized, Where(ctx)) == normalized, kInvalidArgument)
        << Where(ctx) << ": input " << i << " " << ShapeToString(ctx.input(i).shape) << " does not broadcast to "
        << ShapeToString(normalized);
  }
  Types out{x};
  Shape stat = x.shape;
  for (int i = axis; i < x.rank(); ++i) stat[i] = 1;
  DType stash = ctx.attrs().GetInt("stash_type", 1) == 1 ? DType::Float(32) : x.dtype;
  for (int i = 1; i < ctx.num_outputs(); ++i) out.push_back(TensorType{stash, stat});
  return out;
}

// RMSNormalization (ONNX opset 23): X / sqrt(mean(X^2 over axes [axis, rank)) + epsilon) * scale.
Types RmsNormInfer(const InferContext& ctx) {
  RequireFloat(ctx, 0);
  const TensorType& x = ctx.input(0);
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", -1), x.rank(), Where(ctx));
  Shape normalized(x.shape.begin() + axis, x.shape.end());
  AGATE_REQUIRE(BroadcastShapes(ctx.input(1).shape, normalized, Where(ctx)) == normalized, kInvalidArgument)
      << Where(ctx) << ": scale " << ShapeToString(ctx.input(1).shape) << " does not broadcast to "
      << ShapeToString(normalized);
  return {x};
}

// Attention (ONNX opset 23), the 4-D form: Q [B, H, Sq, D], K [B, Hk, Skv, D], V [B, Hk, Skv, Dv] with
// H a multiple of Hk (grouped-query attention: query head h reads key/value head h / (H / Hk)), an
// optional mask (bool: true attends; float: added to the scores) broadcastable to [B, H, Sq, Skv].
// Y [B, H, Sq, Dv] = softmax(Q K^T * scale + mask, causal when is_causal) V. The 3-D (packed heads)
// form, past key/value caches, softcap and the extra outputs are not supported.
Types AttentionInfer(const InferContext& ctx) {
  RequireFloat(ctx, 0);
  const Shape &q = ctx.input(0).shape, &k = ctx.input(1).shape, &v = ctx.input(2).shape;
  AGATE_REQUIRE(q.size() == 4 && k.size() == 4 && v.size() == 4, kUnsupported)
      << Where(ctx) << ": Q, K, V are " << ShapeToString(q) << ", " << ShapeToString(k) << ", " << ShapeToString(v)
      << "; only the 4-D form [batch, heads, sequence, head size] is supported";
  for (int i = 1; i < 3; ++i) {
    AGATE_REQUIRE(ctx.input(i).dtype == ctx.input(0).dtype, kInvalidArgument)
        << Where(ctx) << ": input " << i << " is " << ctx.input(i).dtype << " but Q is " << ctx.input(0).dtype;
  }
  AGATE_REQUIRE(k[0] == q[0] && v[0] == q[0] && k[1] == v[1] && k[1] > 0 && q[1] % k[1] == 0 && k[3] == q[3] &&
                    v[2] == k[2],
                kInvalidArgument)
      << Where(ctx) << ": Q " << ShapeToString(q) << ", K " << ShapeToString(k) << " and V " << ShapeToString(v)
      << " disagree (batch, heads a multiple of the key/value heads, head size of Q and K, sequence of K and V)";
  Shape scores{q[0], q[1], q[2], k[2]};
  if (ctx.has_input(3)) {
    const TensorType& mask = ctx.input(3);
    AGATE_REQUIRE(mask.dtype.is_bool() || mask.dtype == ctx.input(0).dtype, kInvalidArgument)
        << Where(ctx) << ": the mask is " << mask.dtype << "; it must be bool or " << ctx.input(0).dtype;
    // Checked here rather than by BroadcastShapes, whose error would not say that the mask is the operand at fault.
    bool broadcasts = mask.rank() <= 4;
    for (size_t i = 0; broadcasts && i < mask.shape.size(); ++i) {
      int64_t m = mask.shape[mask.shape.size() - 1 - i], s = scores[scores.size() - 1 - i];
      broadcasts = m == 1 || m == s;
    }
    AGATE_REQUIRE(broadcasts, kInvalidArgument)
        << Where(ctx) << ": mask " << ShapeToString(mask.shape) << " does not broadcast to the scores "
        << ShapeToString(scores);
  }
  AGATE_REQUIRE(ctx.num_outputs() == 1, kUnsupported)
      << Where(ctx) << ": " << ctx.num_outputs() << " outputs; only Y is supported (no present key/value)";
  return {TensorType{ctx.input(0).dtype, {q[0], q[1], q[2], v[3]}}};
}

std::string AttentionCheck(const Node& node) {
  if (node.attrs.GetFloat("softcap", 0.0) != 0.0) return "softcap";
  if (node.attrs.GetInt("qk_matmul_output_mode", 0) != 0) return "qk_matmul_output_mode";
  int64_t causal = node.attrs.GetInt("is_causal", 0);
  if (causal != 0 && causal != 1) return "is_causal=" + std::to_string(causal);
  return "";
}

Types PoolInfer(const InferContext& ctx) {
  Shape x = LogicalShape(ctx.node(), ctx.input(0).shape);
  WindowGeometry g = ComputeWindow(ctx.node(), x, ctx.attrs().GetInts("kernel_shape"));
  Shape out{x[0], x[1]};
  out.insert(out.end(), g.out.begin(), g.out.end());
  Types types{TensorType{ctx.input(0).dtype, PhysicalShape(ctx.node(), out)}};
  // Only MaxPool has a second output (Indices); other pools with one are refused by inference.
  if (ctx.node().op == "MaxPool" && ctx.num_outputs() > 1) types.push_back(TensorType{DType::Int(64), out});
  return types;
}

Types GlobalPoolInfer(const InferContext& ctx) {
  Shape x = LogicalShape(ctx.node(), ctx.input(0).shape);
  AGATE_REQUIRE(x.size() >= 3, kInvalidArgument) << Where(ctx) << ": input rank must be >= 3";
  Shape out(x.size(), 1);
  out[0] = x[0];
  out[1] = x[1];
  return {TensorType{ctx.input(0).dtype, PhysicalShape(ctx.node(), out)}};
}

Types SoftmaxInfer(const InferContext& ctx) {
  NormalizeAxis(ctx.attrs().GetInt("axis", -1), ctx.input(0).rank(), Where(ctx));
  return {ctx.input(0)};
}

Types SameAsFirst(const InferContext& ctx) { return {ctx.input(0)}; }


}  // namespace

void RegisterNnOps(OpRegistry* r) {
  const std::vector<std::string> window = {"kernel_shape", "strides", "dilations", "pads", "auto_pad"};
  auto with = [](std::vector<std::string> base, std::vector<std::string> more) {
    base.insert(base.end(), more.begin(), more.end());
    return base;
  };
  r->Register(Def("Conv", OpKind::kOutEWiseFusable, 2, 3, with(window, {"group", "data_layout", "out_layout"}), ConvInfer));
  r->Register(Def("ConvTranspose", OpKind::kOutEWiseFusable, 2, 3,
                  with(window, {"group", "output_padding", "output_shape"}), ConvTransposeInfer));
  r->Register(Def("Gemm", OpKind::kOutEWiseFusable, 2, 3, {"alpha", "beta", "transA", "transB"}, GemmInfer));
  r->Register(Def("MatMul", OpKind::kOutEWiseFusable, 2, 2, {}, MatMulInfer));
  OpDef batch_norm = Def("BatchNormalization", OpKind::kBroadcast, 5, 5,
                         {"epsilon", "momentum", "training_mode", "spatial"}, BatchNormInfer);
  // In training mode the statistics are reductions over the batch: not an elementwise op any more.
  batch_norm.node_kind = [](const Node& node) {
    return node.attrs.GetInt("training_mode", 0) != 0 ? OpKind::kOpaque : OpKind::kBroadcast;
  };
  r->Register(batch_norm);
  r->Register(Def("InstanceNormalization", OpKind::kOpaque, 3, 3, {"epsilon"}, InstanceNormInfer));
  r->Register(Def("LayerNormalization", OpKind::kOpaque, 2, 3, {"axis", "epsilon", "stash_type", "data_layout"},
                  LayerNormInfer));
  r->Register(Def("RMSNormalization", OpKind::kOpaque, 2, 2, {"axis", "epsilon", "stash_type"}, RmsNormInfer));
  OpDef attention = Def("Attention", OpKind::kOpaque, 3, 4,
                        {"is_causal", "scale", "q_num_heads", "kv_num_heads", "softcap", "qk_matmul_output_mode",
                         "softmax_precision"},
                        AttentionInfer);
  attention.check = AttentionCheck;
  r->Register(attention);
  OpDef max_pool = Def("MaxPool", OpKind::kOutEWiseFusable, 1, 1,
                       with(window, {"ceil_mode", "storage_order", "data_layout"}), PoolInfer);
  r->Register(max_pool);
  r->Register(Def("AveragePool", OpKind::kOutEWiseFusable, 1, 1,
                  with(window, {"ceil_mode", "count_include_pad", "data_layout"}), PoolInfer));
  // LpPool-18 added ceil_mode (the window geometry is shared with the other pools).
  r->Register(Def("LpPool", OpKind::kOutEWiseFusable, 1, 1, with(window, {"p", "ceil_mode"}), PoolInfer));
  r->Register(Def("GlobalAveragePool", OpKind::kOutEWiseFusable, 1, 1, {"data_layout"}, GlobalPoolInfer));
  r->Register(Def("GlobalMaxPool", OpKind::kOutEWiseFusable, 1, 1, {"data_layout"}, GlobalPoolInfer));
  r->Register(Def("LRN", OpKind::kOpaque, 1, 1, {"alpha", "beta", "bias", "size"}, SameAsFirst));
  // `coerce_2d` marks the opset < 13 semantics (flatten to 2-D at axis) set by the frontend.
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    r->Register(Def(op, OpKind::kOpaque, 1, 1, {"axis", "coerce_2d"}, SoftmaxInfer));
  }
  r->Register(Def("MeanVarianceNormalization", OpKind::kOpaque, 1, 1, {"axes"}, SameAsFirst));
}

}  // namespace graph
}  // namespace agate
