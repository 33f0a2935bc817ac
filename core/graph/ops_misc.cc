// Losses (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss), window functions,
// linear quantization, Compress and ReverseSequence.
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

Types WindowInfer(const InferContext& ctx) {
  int64_t size = ctx.attrs().GetInt("size");
  AGATE_REQUIRE(size >= 0, kInvalidArgument) << Where(ctx) << ": negative window size " << size;
  DType dtype = DType::Parse(ctx.attrs().GetString("output_datatype", "float32"));
  return {TensorType{dtype, {size}}};
}

// Per-tensor or per-axis quantization parameters must fit the input.
void CheckQuantParams(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const TensorType& scale = ctx.input(1);
  if (scale.numel() == 1 && scale.rank() <= 1) return;
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", 1), x.rank(), Where(ctx));
  AGATE_REQUIRE(scale.rank() == 1 && scale.shape[0] == x.shape[axis], kInvalidArgument)
      << Where(ctx) << ": scale " << ShapeToString(scale.shape) << " must be a scalar or [" << x.shape[axis] << "]";
}

Types QuantizeInfer(const InferContext& ctx) {
  CheckQuantParams(ctx);
  DType dtype = ctx.has_input(2) ? ctx.input(2).dtype : DType::UInt(8);
  return {TensorType{dtype, ctx.input(0).shape}};
}

Types DequantizeInfer(const InferContext& ctx) {
  CheckQuantParams(ctx);
  return {TensorType{ctx.input(1).dtype, ctx.input(0).shape}};
}

Types DynamicQuantizeInfer(const InferContext& ctx) {
  return {TensorType{DType::UInt(8), ctx.input(0).shape}, TensorType{DType::Float(32), {}},
          TensorType{DType::UInt(8), {}}};
}

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

Types MaxUnpoolInfer(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  AGATE_REQUIRE(ctx.input(1).shape == x.shape, kInvalidArgument) << Where(ctx) << ": indices must match X";
  std::vector<int64_t> output_shape = ctx.attrs().GetInts("output_shape", {});
  if (!output_shape.empty()) return {TensorType{x.dtype, output_shape}};
  std::vector<int64_t> kernel = ctx.attrs().GetInts("kernel_shape");
  size_t n = kernel.size();
  std::vector<int64_t> strides = ctx.attrs().GetInts("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = ctx.attrs().GetInts("pads", std::vector<int64_t>(2 * n, 0));
  AGATE_REQUIRE(x.rank() == static_cast<int>(n) + 2 && strides.size() == n && pads.size() == 2 * n, kInvalidArgument)
      << Where(ctx) << ": kernel_shape, strides and pads disagree with the input rank";
  Shape out{x.shape[0], x.shape[1]};
  for (size_t i = 0; i < n; ++i) out.push_back((x.shape[i + 2] - 1) * strides[i] - pads[i] - pads[i + n] + kernel[i]);
  return {TensorType{x.dtype, out}};
}

// ConvInteger / QLinearConv: Conv geometry, integer output.
Types IntegerConvInfer(const InferContext& ctx, int w_input, DType dtype) {
  const Shape& x = ctx.input(0).shape;
  const Shape& w = ctx.input(w_input).shape;
  int64_t group = ctx.attrs().GetInt("group", 1);
  AGATE_REQUIRE(w.size() == x.size() && x.size() >= 3 && w[1] * group == x[1], kInvalidArgument)
      << Where(ctx) << ": input " << ShapeToString(x) << " and weight " << ShapeToString(w) << " disagree";
  WindowGeometry g = ComputeWindow(ctx.node(), x, Shape(w.begin() + 2, w.end()));
  Shape out{x[0], w[0]};
  out.insert(out.end(), g.out.begin(), g.out.end());
  return {TensorType{dtype, out}};
}

Types MatMulShape(const InferContext& ctx, int a_input, int b_input, DType dtype) {
  Shape a = ctx.input(a_input).shape, b = ctx.input(b_input).shape;
  bool a_vector = a.size() == 1, b_vector = b.size() == 1;
  if (a_vector) a.insert(a.begin(), 1);
  if (b_vector) b.push_back(1);
  AGATE_REQUIRE(a.back() == b[b.size() - 2], kInvalidArgument) << Where(ctx) << ": inner dimensions differ";
  Shape out = BroadcastShapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2), Where(ctx));
  if (!a_vector) out.push_back(a[a.size() - 2]);
  if (!b_vector) out.push_back(b.back());
  return {TensorType{dtype, out}};
}

Types GridSampleInfer(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const TensorType& grid = ctx.input(1);
  AGATE_REQUIRE(x.rank() == 4 && grid.rank() == 4 && grid.shape[0] == x.shape[0] && grid.shape[3] == 2,
                kInvalidArgument)
      << Where(ctx) << ": expects X [N,C,H,W] and grid [N,Ho,Wo,2], got " << x.ToString() << " and "
      << grid.ToString();
  return {TensorType{x.dtype, {x.shape[0], x.shape[1], grid.shape[1], grid.shape[2]}}};
}

std::string GridSampleCheck(const Node& node) {
  std::string mode = node.attrs.GetString("mode", "bilinear");
  std::string padding = node.attrs.GetString("padding_mode", "zeros");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") return "mode=" + mode;
  if (padding != "zeros" && padding != "border" && padding != "reflection") return "padding_mode=" + padding;
  return "";
}

// Spectral ops keep complex numbers as a trailing axis of 2 (real, imaginary).
Types DftInfer(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  AGATE_REQUIRE(x.rank() >= 3 && (x.shape.back() == 1 || x.shape.back() == 2), kInvalidArgument)
      << Where(ctx) << ": expects [batch, ..., 1 or 2], got " << ShapeToString(x.shape);
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", 1), x.rank() - 1, Where(ctx));
  AGATE_REQUIRE(axis > 0, kInvalidArgument) << Where(ctx) << ": axis 0 is the batch";
  Shape out = x.shape;
  int64_t length = ctx.attrs().GetInt("dft_length", x.shape[axis]);
  bool onesided = ctx.attrs().GetInt("onesided", 0) != 0;
  AGATE_REQUIRE(!(onesided && ctx.attrs().GetInt("inverse", 0) != 0), kUnsupported)
      << Where(ctx) << ": onesided inverse DFT";
  out[axis] = onesided ? length / 2 + 1 : length;
  out.back() = 2;
  return {TensorType{x.dtype, out}};
}

Types StftInfer(const InferContext& ctx) {
  const TensorType& signal = ctx.input(0);
  AGATE_REQUIRE(signal.rank() == 3 && (signal.shape[2] == 1 || signal.shape[2] == 2), kInvalidArgument)
      << Where(ctx) << ": signal must be [batch, length, 1 or 2], got " << ShapeToString(signal.shape);
  int64_t step = ctx.attrs().GetInt("frame_step");
  int64_t frame = ctx.has_input(1) ? ctx.input(1).numel() : ctx.attrs().GetInt("frame_length", -1);
  AGATE_REQUIRE(frame > 0 && step > 0 && frame <= signal.shape[1], kInvalidArgument)
      << Where(ctx) << ": needs a window or frame_length in [1, " << signal.shape[1] << "] and a positive frame_step";
  int64_t frames = (signal.shape[1] - frame) / step + 1;
  int64_t bins = ctx.attrs().GetInt("onesided", 1) != 0 ? frame / 2 + 1 : frame;
  return {TensorType{signal.dtype, {signal.shape[0], frames, bins, 2}}};
}

Types MelWeightMatrixInfer(const InferContext& ctx) {
  int64_t bins = ctx.attrs().GetInt("num_mel_bins"), dft = ctx.attrs().GetInt("dft_length");
  AGATE_REQUIRE(bins > 0 && dft > 0, kInvalidArgument) << Where(ctx) << ": num_mel_bins and dft_length must be positive";
  DType dtype = DType::Parse(ctx.attrs().GetString("output_datatype", "float32"));
  return {TensorType{dtype, {dft / 2 + 1, bins}}};
}

Types RoiAlignInfer(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const TensorType& rois = ctx.input(1);
  AGATE_REQUIRE(x.rank() == 4 && rois.rank() == 2 && rois.shape[1] == 4 && ctx.input(2).shape == Shape{rois.shape[0]},
                kInvalidArgument)
      << Where(ctx) << ": expects X [N,C,H,W], rois [R,4] and batch_indices [R]";
  return {TensorType{x.dtype, {rois.shape[0], x.shape[1], ctx.attrs().GetInt("output_height", 1),
                               ctx.attrs().GetInt("output_width", 1)}}};
}

}  // namespace

void RegisterMiscOps(OpRegistry* r) {
  OpDef roi_align = Def("RoiAlign", OpKind::kOpaque, 3, 3,
                        {"coordinate_transformation_mode", "mode", "output_height", "output_width", "sampling_ratio",
                         "spatial_scale"},
                        RoiAlignInfer);
  roi_align.check = [](const Node& node) -> std::string {
    std::string mode = node.attrs.GetString("mode", "avg");
    std::string ct = node.attrs.GetString("coordinate_transformation_mode", "half_pixel");
    if (mode != "avg" && mode != "max") return "mode=" + mode;
    if (ct != "half_pixel" && ct != "output_half_pixel") return "coordinate_transformation_mode=" + ct;
    return "";
  };
  r->Register(roi_align);
  r->Register(Def("DFT", OpKind::kOpaque, 1, 1, {"axis", "inverse", "onesided", "dft_length"}, DftInfer,
                  {{1, "dft_length", false, true}}));
  // STFT(signal, frame_step, window, frame_length): the window stays an input.
  r->Register(Def("STFT", OpKind::kOpaque, 1, 2, {"onesided", "frame_step", "frame_length"}, StftInfer,
                  {{1, "frame_step", false, true}, {3, "frame_length", false, true}}));
  r->Register(Def("MelWeightMatrix", OpKind::kOpaque, 0, 0,
                  {"num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz",
                   "output_datatype"},
                  MelWeightMatrixInfer,
                  {{0, "num_mel_bins", false, true}, {1, "dft_length", false, true}, {2, "sample_rate", false, true},
                   {3, "lower_edge_hertz", true, true}, {4, "upper_edge_hertz", true, true}}));
  OpDef grid_sample = Def("GridSample", OpKind::kOpaque, 2, 2, {"align_corners", "mode", "padding_mode"},
                          GridSampleInfer);
  grid_sample.check = GridSampleCheck;
  r->Register(grid_sample);
  r->Register(Def("Einsum", OpKind::kOpaque, 1, -1, {"equation"}, EinsumInfer));
  r->Register(Def("Det", OpKind::kOpaque, 1, 1, {}, DetInfer));
  r->Register(Def("MaxUnpool", OpKind::kOpaque, 2, 2, {"kernel_shape", "strides", "pads", "output_shape"},
                  MaxUnpoolInfer, {{2, "output_shape"}}));
  const std::vector<std::string> conv_attrs{"kernel_shape", "strides", "dilations", "pads", "auto_pad", "group"};
  r->Register(Def("ConvInteger", OpKind::kOutEWiseFusable, 2, 4, conv_attrs, [](const InferContext& ctx) {
    return IntegerConvInfer(ctx, 1, DType::Int(32));
  }));
  r->Register(Def("QLinearConv", OpKind::kOutEWiseFusable, 8, 9, conv_attrs, [](const InferContext& ctx) {
    return IntegerConvInfer(ctx, 3, ctx.input(7).dtype);
  }));
  r->Register(Def("MatMulInteger", OpKind::kOutEWiseFusable, 2, 4, {}, [](const InferContext& ctx) {
    return MatMulShape(ctx, 0, 1, DType::Int(32));
  }));
  r->Register(Def("QLinearMatMul", OpKind::kOutEWiseFusable, 8, 8, {}, [](const InferContext& ctx) {
    return MatMulShape(ctx, 0, 3, ctx.input(7).dtype);
  }));
  r->Register(Def("NegativeLogLikelihoodLoss", OpKind::kOpaque, 2, 3, {"reduction", "ignore_index"}, LossInfer));
  r->Register(Def("SoftmaxCrossEntropyLoss", OpKind::kOpaque, 2, 3, {"reduction", "ignore_index"}, LossInfer));
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    r->Register(Def(op, OpKind::kOpaque, 0, 0, {"size", "periodic", "output_datatype"}, WindowInfer,
                    {{0, "size", false, true}}));
  }
  r->Register(Def("QuantizeLinear", OpKind::kElemWise, 2, 3, {"axis"}, QuantizeInfer));
  r->Register(Def("DequantizeLinear", OpKind::kElemWise, 2, 3, {"axis"}, DequantizeInfer));
  r->Register(Def("DynamicQuantizeLinear", OpKind::kOpaque, 1, 1, {}, DynamicQuantizeInfer));
  r->Register(Def("Compress", OpKind::kInjective, 1, 1, {"axis", "condition"}, CompressInfer, {{1, "condition"}}));
  r->Register(Def("ReverseSequence", OpKind::kOpaque, 2, 2, {"batch_axis", "time_axis"}, ReverseSequenceInfer));
}

}  // namespace graph
}  // namespace agate
