// Signal processing: DFT, STFT, MelWeightMatrix and the window functions (Hann, Hamming,
// Blackman).
#include <algorithm>

#include "core/graph/op_registry.h"
#include "core/graph/run_time_shape_operand.h"
#include "core/graph/shape_rules.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

using Types = std::vector<TensorType>;

Types WindowInfer(const InferContext& ctx) {
  int64_t size = ctx.attrs().GetInt("size");
  AGATE_REQUIRE(size >= 0, kInvalidArgument) << Where(ctx) << ": negative window size " << size;
  DType dtype = DType::Parse(ctx.attrs().GetString("output_datatype", "float32"));
  return {TensorType{dtype, {size}}};
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
  // Input 1 is the window unless it is a frame_step read at run time.
  const bool windowed = ctx.has_input(1) && RunTimeShapeOperandIndex(ctx.node()) != 1;
  int64_t frame = windowed ? ctx.input(1).numel() : ctx.attrs().GetInt("frame_length", -1);
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

}  // namespace

void RegisterSignalOps(OpRegistry* r) {
  r->Register(Def("DFT", OpKind::kOpaque, 1, 1, {"axis", "inverse", "onesided", "dft_length"}, DftInfer,
                  {{1, "dft_length", false, true}}));
  // STFT(signal, frame_step, window, frame_length): the window stays an input; a frame_step read
  // at run time (run_time_shape_operand.h) is the last.
  r->Register(Def("STFT", OpKind::kOpaque, 1, 3, {"onesided", "frame_step", "frame_length", kRunTimeOperandAttr}, StftInfer,
                  {{1, "frame_step", false, true}, {3, "frame_length", false, true}}));
  r->Register(Def("MelWeightMatrix", OpKind::kOpaque, 0, 0,
                  {"num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz",
                   "output_datatype"},
                  MelWeightMatrixInfer,
                  {{0, "num_mel_bins", false, true}, {1, "dft_length", false, true}, {2, "sample_rate", false, true},
                   {3, "lower_edge_hertz", true, true}, {4, "upper_edge_hertz", true, true}}));
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    // A size read at run time (run_time_shape_operand.h) is input 0.
    r->Register(Def(op, OpKind::kOpaque, 0, 1, {"size", "periodic", "output_datatype", kRunTimeOperandAttr}, WindowInfer,
                    {{0, "size", false, true}}));
  }
}

}  // namespace graph
}  // namespace agate
