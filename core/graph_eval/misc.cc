// Reference kernels of the losses, window functions, quantization, Compress and ReverseSequence.
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

// loss[n, d...] = -scores[n, target, d...] * weight[target], reduced as asked.
Tensor NllLoss(const KernelContext& ctx, const Tensor& log_prob) {
  const Tensor& target = ctx.in(1);
  const Shape& s = log_prob.shape();
  int64_t classes = s[1];
  int64_t inner = NumElements(Shape(s.begin() + 2, s.end()));
  bool has_ignore = ctx.attrs().Has("ignore_index");
  int64_t ignore = ctx.attrs().GetInt("ignore_index", 0);
  std::string reduction = ctx.attrs().GetString("reduction", "mean");
  std::vector<double> loss(target.numel());
  double total = 0, weight_sum = 0;
  for (int64_t i = 0; i < target.numel(); ++i) {
    int64_t n = i / std::max<int64_t>(inner, 1), d = i % std::max<int64_t>(inner, 1);
    int64_t t = target.GetInt(i);
    if (has_ignore && t == ignore) continue;
    AGATE_REQUIRE(t >= 0 && t < classes, kOutOfRange) << ctx.node.Describe() << ": target " << t << " out of range";
    double w = ctx.has(2) ? ctx.in(2).GetDouble(t) : 1.0;
    loss[i] = -log_prob.GetDouble((n * classes + t) * inner + d) * w;
    total += loss[i];
    weight_sum += w;
  }
  if (reduction == "none") return Tensor::FromDoubles(ctx.outputs[0].dtype, ctx.outputs[0].shape, loss);
  double value = reduction == "sum" ? total : total / weight_sum;
  return Tensor::FromDoubles(ctx.outputs[0].dtype, {}, {value});
}

Tensors NegativeLogLikelihood(const KernelContext& ctx) { return {NllLoss(ctx, ctx.in(0))}; }

Tensors SoftmaxCrossEntropy(const KernelContext& ctx) {
  const Tensor& scores = ctx.in(0);
  const Shape& s = scores.shape();
  int64_t classes = s[1], inner = NumElements(Shape(s.begin() + 2, s.end()));
  Tensor log_prob(scores.dtype(), s);
  for (int64_t n = 0; n < s[0]; ++n) {
    for (int64_t d = 0; d < inner; ++d) {
      auto at = [&](int64_t c) { return (n * classes + c) * inner + d; };
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, scores.GetDouble(at(c)));
      for (int64_t c = 0; c < classes; ++c) sum += std::exp(scores.GetDouble(at(c)) - mx);
      for (int64_t c = 0; c < classes; ++c) log_prob.SetDouble(at(c), scores.GetDouble(at(c)) - mx - std::log(sum));
    }
  }
  Tensors out{NllLoss(ctx, log_prob)};
  if (ctx.outputs.size() > 1) out.push_back(log_prob);
  return out;
}

KernelFn Window(const std::string& op) {
  return [op](const KernelContext& ctx) {
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

// Index into a per-axis parameter (or 0 for per-tensor ones).
int64_t ParamIndex(const KernelContext& ctx, const Tensor& param, int64_t i) {
  if (param.numel() == 1) return 0;
  const Shape& x = ctx.in(0).shape();
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", 1), static_cast<int>(x.size()), ctx.node.Describe());
  int64_t inner = NumElements(Shape(x.begin() + axis + 1, x.end()));
  return (i / inner) % x[axis];
}

double Saturate(double v, DType dtype) {
  double lo = dtype == DType::Int(8) ? -128 : 0, hi = dtype == DType::Int(8) ? 127 : 255;
  return std::min(hi, std::max(lo, v));
}

Tensors Quantize(const KernelContext& ctx) {
  Tensor out = ctx.NewOutput(0);
  for (int64_t i = 0; i < out.numel(); ++i) {
    double scale = ctx.in(1).GetDouble(ParamIndex(ctx, ctx.in(1), i));
    double zero = ctx.has(2) ? ctx.in(2).GetDouble(ParamIndex(ctx, ctx.in(2), i)) : 0.0;
    out.SetDouble(i, Saturate(std::nearbyint(ctx.in(0).GetDouble(i) / scale) + zero, out.dtype()));
  }
  return {out};
}

Tensors Dequantize(const KernelContext& ctx) {
  Tensor out = ctx.NewOutput(0);
  for (int64_t i = 0; i < out.numel(); ++i) {
    double scale = ctx.in(1).GetDouble(ParamIndex(ctx, ctx.in(1), i));
    double zero = ctx.has(2) ? ctx.in(2).GetDouble(ParamIndex(ctx, ctx.in(2), i)) : 0.0;
    out.SetDouble(i, (ctx.in(0).GetDouble(i) - zero) * scale);
  }
  return {out};
}

Tensors DynamicQuantize(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  double lo = 0, hi = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    lo = std::min(lo, x.GetDouble(i));
    hi = std::max(hi, x.GetDouble(i));
  }
  // float32 arithmetic, as the operator's definition computes it.
  float scale = (static_cast<float>(hi) - static_cast<float>(lo)) / 255.0f;
  double zero = Saturate(std::nearbyint(-static_cast<float>(lo) / scale), DType::UInt(8));
  Tensor y = ctx.NewOutput(0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    float q = static_cast<float>(x.GetDouble(i)) / scale;
    y.SetDouble(i, Saturate(std::nearbyint(q) + zero, DType::UInt(8)));
  }
  return {y, Tensor::Scalar(DType::Float(32), scale), Tensor::Scalar(DType::UInt(8), zero)};
}

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

Tensors Einsum(const KernelContext& ctx) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) shapes.push_back(ctx.in(i).shape());
  EinsumSpec spec = ParseEinsum(ctx.attrs().GetString("equation"), shapes, ctx.node.Describe());
  // Loop over every label: output labels first, then the summed ones.
  std::string labels = spec.output;
  for (const auto& [c, extent] : spec.extents)
    if (labels.find(c) == std::string::npos) labels += c;
  Shape loop;
  for (char c : labels) loop.push_back(spec.extents.at(c));
  std::vector<std::vector<int64_t>> strides(ctx.inputs.size());  // per input, per loop label
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    std::vector<int64_t> row_major = RowMajorStrides(shapes[i]);
    strides[i].assign(labels.size(), 0);
    for (size_t a = 0; a < spec.inputs[i].size(); ++a)
      if (shapes[i][a] != 1) strides[i][labels.find(spec.inputs[i][a])] += row_major[a];
  }
  std::vector<double> out(ctx.outputs[0].numel(), 0.0);
  int64_t summed = 1;
  for (size_t k = spec.output.size(); k < loop.size(); ++k) summed *= loop[k];
  ForEachIndex(loop, [&](const std::vector<int64_t>& idx, int64_t linear) {
    double product = 1;
    for (size_t i = 0; i < ctx.inputs.size(); ++i) {
      int64_t off = 0;
      for (size_t k = 0; k < idx.size(); ++k) off += idx[k] * strides[i][k];
      product *= ctx.in(i).GetDouble(off);
    }
    out[linear / summed] += product;
  });
  return {Tensor::FromDoubles(ctx.outputs[0].dtype, ctx.outputs[0].shape, out)};
}

Tensors Det(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t n = x.shape().back();
  Tensor out = ctx.NewOutput(0);
  for (int64_t b = 0; b < out.numel(); ++b) {
    std::vector<double> a(n * n);
    for (int64_t i = 0; i < n * n; ++i) a[i] = x.GetDouble(b * n * n + i);
    double det = 1;
    for (int64_t col = 0; col < n; ++col) {  // Gaussian elimination with partial pivoting
      int64_t pivot = col;
      for (int64_t r = col + 1; r < n; ++r)
        if (std::fabs(a[r * n + col]) > std::fabs(a[pivot * n + col])) pivot = r;
      if (a[pivot * n + col] == 0) {
        det = 0;
        break;
      }
      if (pivot != col) {
        for (int64_t k = 0; k < n; ++k) std::swap(a[pivot * n + k], a[col * n + k]);
        det = -det;
      }
      det *= a[col * n + col];
      for (int64_t r = col + 1; r < n; ++r) {
        double f = a[r * n + col] / a[col * n + col];
        for (int64_t k = col; k < n; ++k) a[r * n + k] -= f * a[col * n + k];
      }
    }
    out.SetDouble(b, det);
  }
  return {out};
}

// Indices address the default unpooled shape; an explicit larger output_shape pads at the end.
Tensors MaxUnpool(const KernelContext& ctx) {
  Tensor out = ctx.NewOutput(0);
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> kernel = ctx.attrs().GetInts("kernel_shape");
  size_t n = kernel.size();
  std::vector<int64_t> strides = ctx.attrs().GetInts("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = ctx.attrs().GetInts("pads", std::vector<int64_t>(2 * n, 0));
  Shape natural{x.shape()[0], x.shape()[1]};
  for (size_t i = 0; i < n; ++i) natural.push_back((x.shape()[i + 2] - 1) * strides[i] - pads[i] - pads[i + n] + kernel[i]);
  std::vector<int64_t> out_strides = RowMajorStrides(out.shape());
  int64_t natural_count = NumElements(natural);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t index = ctx.in(1).GetInt(i);
    AGATE_REQUIRE(index >= 0 && index < natural_count, kOutOfRange)
        << ctx.node.Describe() << ": index " << index << " outside the unpooled shape " << ShapeToString(natural);
    int64_t offset = 0;
    for (int d = static_cast<int>(natural.size()) - 1; d >= 0; --d) {
      int64_t coordinate = index % natural[d];
      index /= natural[d];
      AGATE_REQUIRE(coordinate < out.shape()[d], kOutOfRange) << ctx.node.Describe() << ": output_shape too small";
      offset += coordinate * out_strides[d];
    }
    out.SetDouble(offset, x.GetDouble(i));
  }
  return {out};
}

// (t - zero_point) as float64; the zero point is per tensor or per `axis` slice.
Tensor Centered(const Tensor& t, const Tensor* zero_point, int axis) {
  Tensor out(DType::Float(64), t.shape());
  int64_t inner = axis < 0 ? 1 : NumElements(Shape(t.shape().begin() + axis + 1, t.shape().end()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    double zp = 0;
    if (zero_point != nullptr) zp = zero_point->GetDouble(zero_point->numel() == 1 ? 0 : (i / inner) % zero_point->numel());
    out.SetDouble(i, t.GetDouble(i) - zp);
  }
  return out;
}

// Runs `op` (Conv or MatMul) with this node's attributes on float64 operands.
Tensor RunFloat(const KernelContext& ctx, const std::string& op, const Tensor& a, const Tensor& b) {
  Node node = ctx.node;
  node.op = op;
  node.inputs = {"a", "b"};
  node.outputs = {"y"};
  std::vector<const Tensor*> args{&a, &b};
  std::map<std::string, TensorType> types{{"a", {a.dtype(), a.shape()}}, {"b", {b.dtype(), b.shape()}}};
  KernelContext inner{node, args, InferNodeTypes(node, types, {})};
  return (*KernelRegistry::Global().Find(op))(inner)[0];
}

Tensors ConvInteger(const KernelContext& ctx) {
  Tensor y = RunFloat(ctx, "Conv", Centered(ctx.in(0), ctx.has(2) ? &ctx.in(2) : nullptr, -1),
                      Centered(ctx.in(1), ctx.has(3) ? &ctx.in(3) : nullptr, 0));
  Tensor out = ctx.NewOutput(0);
  for (int64_t i = 0; i < out.numel(); ++i) out.SetInt(i, static_cast<int64_t>(std::llround(y.GetDouble(i))));
  return {out};
}

Tensors MatMulInteger(const KernelContext& ctx) {
  int b_axis = ctx.in(1).rank() - 1;
  Tensor y = RunFloat(ctx, "MatMul", Centered(ctx.in(0), ctx.has(2) ? &ctx.in(2) : nullptr, -1),
                      Centered(ctx.in(1), ctx.has(3) ? &ctx.in(3) : nullptr, b_axis));
  Tensor out = ctx.NewOutput(0);
  for (int64_t i = 0; i < out.numel(); ++i) out.SetInt(i, static_cast<int64_t>(std::llround(y.GetDouble(i))));
  return {out};
}

// y = saturate(round(real / y_scale) + y_zero_point).
Tensor Requantize(const KernelContext& ctx, const Tensor& real) {
  Tensor out = ctx.NewOutput(0);
  double y_scale = ctx.in(6).GetDouble(0), y_zero = ctx.in(7).GetDouble(0);
  for (int64_t i = 0; i < out.numel(); ++i) {
    out.SetDouble(i, Saturate(std::nearbyint(real.GetDouble(i) / y_scale) + y_zero, out.dtype()));
  }
  return out;
}

Tensors QLinearMatMul(const KernelContext& ctx) {
  Tensor a = Centered(ctx.in(0), &ctx.in(2), -1), b = Centered(ctx.in(3), &ctx.in(5), ctx.in(3).rank() - 1);
  double scale = ctx.in(1).GetDouble(0) * ctx.in(4).GetDouble(0);
  Tensor y = RunFloat(ctx, "MatMul", a, b);
  for (int64_t i = 0; i < y.numel(); ++i) y.SetDouble(i, y.GetDouble(i) * scale);
  return {Requantize(ctx, y)};
}

Tensors QLinearConv(const KernelContext& ctx) {
  Tensor x = Centered(ctx.in(0), &ctx.in(2), -1), w = Centered(ctx.in(3), &ctx.in(5), 0);
  Tensor y = RunFloat(ctx, "Conv", x, w);
  const Shape& s = y.shape();
  int64_t channels = s[1], inner = NumElements(Shape(s.begin() + 2, s.end()));
  double x_scale = ctx.in(1).GetDouble(0);
  const Tensor& w_scale = ctx.in(4);
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t c = (i / inner) % channels;
    double scale = x_scale * w_scale.GetDouble(w_scale.numel() == 1 ? 0 : c);
    double bias = ctx.has(8) ? ctx.in(8).GetDouble(c) : 0.0;
    y.SetDouble(i, (y.GetDouble(i) + bias) * scale);
  }
  return {Requantize(ctx, y)};
}

// Keys' cubic convolution weights (a = -0.75) of the taps at -1, 0, 1, 2 for a fraction t.
std::vector<double> CubicCoefficients(double t) {
  const double a = -0.75;
  auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };
  auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

// GridSample, after PyTorch's grid_sampler (which ONNX's GridSample follows).
struct GridSampler {
  bool align_corners;
  std::string padding;

  double Unnormalize(double c, int64_t size) const {
    return align_corners ? (c + 1) / 2 * (size - 1) : ((c + 1) * size - 1) / 2;
  }
  static double Reflect(double x, double twice_low, double twice_high) {
    if (twice_low == twice_high) return 0;
    double low = twice_low / 2, span = (twice_high - twice_low) / 2;
    x = std::fabs(x - low);
    double extra = std::fmod(x, span);
    int64_t flips = static_cast<int64_t>(std::floor(x / span));
    return flips % 2 == 0 ? extra + low : span - extra + low;
  }
  // Border and reflection padding move the coordinate inside the image.
  double Pad(double x, int64_t size) const {
    if (padding == "border") return std::clamp(x, 0.0, static_cast<double>(size - 1));
    if (padding == "reflection") {
      x = align_corners ? Reflect(x, 0, 2.0 * (size - 1)) : Reflect(x, -1, 2.0 * size - 1);
      return std::clamp(x, 0.0, static_cast<double>(size - 1));
    }
    return x;
  }
};

Tensors GridSample(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& grid = ctx.in(1);
  GridSampler s{ctx.attrs().GetInt("align_corners", 0) != 0, ctx.attrs().GetString("padding_mode", "zeros")};
  std::string mode = ctx.attrs().GetString("mode", "bilinear");
  int64_t n_batch = x.shape()[0], channels = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  int64_t ho = grid.shape()[1], wo = grid.shape()[2];
  Tensor out = ctx.NewOutput(0);
  for (int64_t n = 0; n < n_batch; ++n) {
    for (int64_t oy = 0; oy < ho; ++oy) {
      for (int64_t ox = 0; ox < wo; ++ox) {
        int64_t g = ((n * ho + oy) * wo + ox) * 2;
        double fx = s.Unnormalize(grid.GetDouble(g), w), fy = s.Unnormalize(grid.GetDouble(g + 1), h);
        for (int64_t c = 0; c < channels; ++c) {
          int64_t plane = (n * channels + c) * h * w;
          auto pixel = [&](int64_t ix, int64_t iy) {
            return ix >= 0 && ix < w && iy >= 0 && iy < h ? x.GetDouble(plane + iy * w + ix) : 0.0;
          };
          double v = 0;
          if (mode == "nearest") {
            v = pixel(static_cast<int64_t>(std::nearbyint(s.Pad(fx, w))),
                      static_cast<int64_t>(std::nearbyint(s.Pad(fy, h))));
          } else if (mode == "bilinear") {
            double px = s.Pad(fx, w), py = s.Pad(fy, h);
            int64_t x0 = static_cast<int64_t>(std::floor(px)), y0 = static_cast<int64_t>(std::floor(py));
            double tx = px - x0, ty = py - y0;
            v = pixel(x0, y0) * (1 - tx) * (1 - ty) + pixel(x0 + 1, y0) * tx * (1 - ty) +
                pixel(x0, y0 + 1) * (1 - tx) * ty + pixel(x0 + 1, y0 + 1) * tx * ty;
          } else {  // bicubic: each tap is padded on its own
            int64_t x0 = static_cast<int64_t>(std::floor(fx)), y0 = static_cast<int64_t>(std::floor(fy));
            std::vector<double> wx = CubicCoefficients(fx - x0), wy = CubicCoefficients(fy - y0);
            for (int j = 0; j < 4; ++j) {
              for (int i = 0; i < 4; ++i) {
                double tx = s.Pad(static_cast<double>(x0 - 1 + i), w), ty = s.Pad(static_cast<double>(y0 - 1 + j), h);
                v += wx[i] * wy[j] * pixel(static_cast<int64_t>(tx), static_cast<int64_t>(ty));
              }
            }
          }
          out.SetDouble(((n * channels + c) * ho + oy) * wo + ox, v);
        }
      }
    }
  }
  return {out};
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
  int64_t frame = ctx.has(1) ? ctx.in(1).numel() : ctx.attrs().GetInt("frame_length");
  int64_t length = signal.shape()[1], components = signal.shape()[2];
  Tensor out = ctx.NewOutput(0);
  for (int64_t b = 0; b < out_shape[0]; ++b) {
    for (int64_t f = 0; f < out_shape[1]; ++f) {
      for (int64_t k = 0; k < out_shape[2]; ++k) {
        double re = 0, im = 0;
        for (int64_t n = 0; n < frame; ++n) {
          int64_t at = ((b * length) + f * step + n) * components;
          double w = ctx.has(1) ? ctx.in(1).GetDouble(n) : 1.0;
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

// RoiAlign: each output bin averages (or maxes) bilinear samples on a regular grid inside it.
Tensors RoiAlign(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& rois = ctx.in(1);
  int64_t channels = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  int64_t oh = ctx.outputs[0].shape[2], ow = ctx.outputs[0].shape[3];
  bool half_pixel = ctx.attrs().GetString("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  bool is_max = ctx.attrs().GetString("mode", "avg") == "max";
  double scale = ctx.attrs().GetFloat("spatial_scale", 1.0);
  int64_t ratio = ctx.attrs().GetInt("sampling_ratio", 0);
  Tensor out = ctx.NewOutput(0);
  for (int64_t r = 0; r < rois.shape()[0]; ++r) {
    int64_t n = ctx.in(2).GetInt(r);
    AGATE_REQUIRE(n >= 0 && n < x.shape()[0], kOutOfRange) << ctx.node.Describe() << ": batch index " << n;
    double offset = half_pixel ? 0.5 : 0.0;
    double x0 = rois.GetDouble(r * 4) * scale - offset, y0 = rois.GetDouble(r * 4 + 1) * scale - offset;
    double roi_w = rois.GetDouble(r * 4 + 2) * scale - offset - x0;
    double roi_h = rois.GetDouble(r * 4 + 3) * scale - offset - y0;
    if (!half_pixel) {
      roi_w = std::max(roi_w, 1.0);
      roi_h = std::max(roi_h, 1.0);
    }
    double bin_h = roi_h / oh, bin_w = roi_w / ow;
    int64_t grid_h = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(roi_h / oh));
    int64_t grid_w = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(roi_w / ow));
    double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
    for (int64_t c = 0; c < channels; ++c) {
      auto v = [&](int64_t yy, int64_t xx) { return x.GetDouble(((n * channels + c) * h + yy) * w + xx); };
      for (int64_t ph = 0; ph < oh; ++ph) {
        for (int64_t pw = 0; pw < ow; ++pw) {
          double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
          for (int64_t iy = 0; iy < grid_h; ++iy) {
            for (int64_t ix = 0; ix < grid_w; ++ix) {
              double yy = y0 + ph * bin_h + (iy + 0.5) * bin_h / grid_h;
              double xx = x0 + pw * bin_w + (ix + 0.5) * bin_w / grid_w;
              if (yy < -1.0 || yy > h || xx < -1.0 || xx > w) {
                if (is_max) acc = std::max(acc, 0.0);
                continue;
              }
              yy = std::max(yy, 0.0);
              xx = std::max(xx, 0.0);
              int64_t y_low = static_cast<int64_t>(yy), x_low = static_cast<int64_t>(xx), y_high, x_high;
              if (y_low >= h - 1) {
                y_high = y_low = h - 1;
                yy = static_cast<double>(y_low);
              } else {
                y_high = y_low + 1;
              }
              if (x_low >= w - 1) {
                x_high = x_low = w - 1;
                xx = static_cast<double>(x_low);
              } else {
                x_high = x_low + 1;
              }
              double ly = yy - y_low, lx = xx - x_low, hy = 1 - ly, hx = 1 - lx;
              double a = hy * hx * v(y_low, x_low), b = hy * lx * v(y_low, x_high);
              double cc = ly * hx * v(y_high, x_low), d = ly * lx * v(y_high, x_high);
              // Max mode takes the largest weighted corner, as onnxruntime (ONNX's reference for it) does.
              acc = is_max ? std::max({acc, a, b, cc, d}) : acc + a + b + cc + d;
            }
          }
          out.SetDouble(((r * channels + c) * oh + ph) * ow + pw, is_max ? acc : acc / count);
        }
      }
    }
  }
  return {out};
}

}  // namespace

void RegisterMiscKernels(KernelRegistry* r) {
  r->Register("RoiAlign", RoiAlign);
  r->Register("DFT", Dft);
  r->Register("STFT", Stft);
  r->Register("MelWeightMatrix", MelWeightMatrix);
  r->Register("GridSample", GridSample);
  r->Register("Einsum", Einsum);
  r->Register("Det", Det);
  r->Register("MaxUnpool", MaxUnpool);
  r->Register("ConvInteger", ConvInteger);
  r->Register("MatMulInteger", MatMulInteger);
  r->Register("QLinearMatMul", QLinearMatMul);
  r->Register("QLinearConv", QLinearConv);
  r->Register("NegativeLogLikelihoodLoss", NegativeLogLikelihood);
  r->Register("SoftmaxCrossEntropyLoss", SoftmaxCrossEntropy);
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) r->Register(op, Window(op));
  r->Register("QuantizeLinear", Quantize);
  r->Register("DequantizeLinear", Dequantize);
  r->Register("DynamicQuantizeLinear", DynamicQuantize);
  r->Register("Compress", Compress);
  r->Register("ReverseSequence", ReverseSequence);
}

}  // namespace graph_eval
}  // namespace agate
