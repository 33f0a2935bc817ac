// Reference kernels of signal processing: DFT, STFT, MelWeightMatrix and the window functions.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/graph_eval/kernel.h"
#include "core/graph/run_time_shape_operand.h"
#include "core/graph/shape_inference.h"
#include "core/graph/shape_rules.h"
#include "core/support/error.h"

namespace agate {
namespace graph_eval {

using namespace graph;  // the graph IR is what this layer runs

namespace {

using Tensors = std::vector<Tensor>;

KernelFn Window(const std::string& op) {
  return [op](const KernelContext& ctx) {
    // A size read at run time must be the one the node was compiled for (run_time_shape_operand.h).
    if (RunTimeShapeOperandIndex(ctx.node) == 0) CheckRunTimeShapeOperand(ctx.node, {}, ctx.in(0), ctx.outputs[0].shape);
    Tensor out = ctx.NewOutput(0);
    int64_t n = out.numel();
    double denominator = ctx.attrs().GetInt("periodic", 1) != 0 ? n : n - 1;
    for (int64_t i = 0; i < n; ++i) {
      double a = 2 * M_PI * i / denominator;
      double v;
      if (op == "HannWindow") v = 0.5 - 0.5 * std::cos(a);
      else if (op == "HammingWindow") v = 25.0 / 46 - (1 - 25.0 / 46) * std::cos(a);
      else v = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
      out.SetDouble(i, v);
    }
    return Tensors{out};
  };
}

// Reads element `i` of a signal with a trailing real/imaginary axis of 1 or 2.
struct Complex {
  double re, im;
};

Tensors Dft(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Shape& in = x.shape();
  const Shape& out_shape = ctx.outputs[0].shape;
  int rank = x.rank();
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", 1), rank - 1, ctx.node.Describe());
  bool inverse = ctx.attrs().GetInt("inverse", 0) != 0;
  int64_t length = ctx.attrs().GetInt("dft_length", in[axis]);
  int64_t components = in.back();
  std::vector<int64_t> in_strides = RowMajorStrides(in), out_strides = RowMajorStrides(out_shape);
  Tensor out = ctx.NewOutput(0);
  Shape lines = out_shape;
  lines[axis] = 1;
  lines.back() = 1;
  ForEachIndex(lines, [&](const std::vector<int64_t>& idx, int64_t) {
    int64_t in_base = 0, out_base = 0;
    for (int d = 0; d < rank; ++d) {
      in_base += idx[d] * in_strides[d];
      out_base += idx[d] * out_strides[d];
    }
    for (int64_t k = 0; k < out_shape[axis]; ++k) {
      double re = 0, im = 0;
      for (int64_t n = 0; n < std::min(length, in[axis]); ++n) {  // zero-padded beyond the signal
        int64_t at = in_base + n * in_strides[axis];
        Complex v{x.GetDouble(at), components == 2 ? x.GetDouble(at + 1) : 0.0};
        double angle = (inverse ? 2 : -2) * M_PI * static_cast<double>(k * n % length) / length;
        re += v.re * std::cos(angle) - v.im * std::sin(angle);
        im += v.re * std::sin(angle) + v.im * std::cos(angle);
      }
      if (inverse) {
        re /= length;
        im /= length;
      }
      out.SetDouble(out_base + k * out_strides[axis], re);
      out.SetDouble(out_base + k * out_strides[axis] + 1, im);
    }
  });
  return {out};
}

Tensors Stft(const KernelContext& ctx) {
  const Tensor& signal = ctx.in(0);
  const Shape& out_shape = ctx.outputs[0].shape;
  int64_t step = ctx.attrs().GetInt("frame_step");
  // A frame_step read at run time (the last input) must give the compiled frame count; it places the frames.
  const int operand = RunTimeShapeOperandIndex(ctx.node);
  if (operand >= 0) {
    CheckRunTimeShapeOperand(ctx.node, signal.shape(), ctx.in(operand), out_shape);
    step = ctx.in(operand).GetInt(0);
  }
  const bool windowed = ctx.has(1) && operand != 1;
  int64_t frame = windowed ? ctx.in(1).numel() : ctx.attrs().GetInt("frame_length");
  int64_t length = signal.shape()[1], components = signal.shape()[2];
  Tensor out = ctx.NewOutput(0);
  for (int64_t b = 0; b < out_shape[0]; ++b) {
    for (int64_t f = 0; f < out_shape[1]; ++f) {
      for (int64_t k = 0; k < out_shape[2]; ++k) {
        double re = 0, im = 0;
        for (int64_t n = 0; n < frame; ++n) {
          int64_t at = ((b * length) + f * step + n) * components;
          double w = windowed ? ctx.in(1).GetDouble(n) : 1.0;
          double vr = signal.GetDouble(at) * w, vi = components == 2 ? signal.GetDouble(at + 1) * w : 0.0;
          double angle = -2 * M_PI * static_cast<double>(k * n % frame) / frame;
          re += vr * std::cos(angle) - vi * std::sin(angle);
          im += vr * std::sin(angle) + vi * std::cos(angle);
        }
        int64_t o = ((b * out_shape[1] + f) * out_shape[2] + k) * 2;
        out.SetDouble(o, re);
        out.SetDouble(o + 1, im);
      }
    }
  }
  return {out};
}

// Triangular filters on the mel scale, as the ONNX reference computes them.
Tensors MelWeightMatrix(const KernelContext& ctx) {
  int64_t bins = ctx.attrs().GetInt("num_mel_bins"), dft = ctx.attrs().GetInt("dft_length");
  double rate = static_cast<double>(ctx.attrs().GetInt("sample_rate"));
  double low = ctx.attrs().GetFloat("lower_edge_hertz"), high = ctx.attrs().GetFloat("upper_edge_hertz");
  auto to_mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  double low_mel = to_mel(low), step = (to_mel(high) - low_mel) / static_cast<double>(bins + 2);
  std::vector<int64_t> edges(bins + 2);
  for (int64_t i = 0; i < bins + 2; ++i) {
    double hz = 700 * (std::pow(10.0, (i * step + low_mel) / 2595) - 1);
    edges[i] = static_cast<int64_t>(std::floor((dft + 1) * hz / rate));
  }
  Tensor out = ctx.NewOutput(0);
  int64_t rows = dft / 2 + 1;
  auto set = [&](int64_t row, int64_t col, double v) {
    if (row >= 0 && row < rows) out.SetDouble(row * bins + col, v);
  };
  for (int64_t i = 0; i < bins; ++i) {
    int64_t left = edges[i], center = edges[i + 1], right = edges[i + 2];
    if (center == left) {
      set(center, i, 1.0);
    } else {
      for (int64_t j = left; j <= center; ++j) set(j, i, static_cast<double>(j - left) / (center - left));
    }
    for (int64_t j = center; j < right; ++j) set(j, i, static_cast<double>(right - j) / (right - center));
  }
  return {out};
}

}  // namespace

void RegisterSignalKernels(KernelRegistry* r) {
  r->Register("DFT", Dft);
  r->Register("STFT", Stft);
  r->Register("MelWeightMatrix", MelWeightMatrix);
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) r->Register(op, Window(op));
}

}  // namespace graph_eval
}  // namespace agate
