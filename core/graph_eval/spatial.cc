// Reference kernels of spatial sampling: RoiAlign, GridSample, AffineGrid, Col2Im, DeformConv and MaxUnpool.
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

// Indices address the default unpooled shape; an explicit larger output_shape pads at the end.
Tensors MaxUnpool(const KernelContext& ctx) {
  Tensor out = ctx.NewOutput(0);
  const Tensor& x = ctx.in(0);
  // An output_shape read at run time must be the declared one the node was compiled for.
  const int operand = RunTimeShapeOperandIndex(ctx.node);
  if (operand >= 0) CheckRunTimeShapeOperand(ctx.node, x.shape(), ctx.in(operand), out.shape());
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

// One spatial axis' taps for one sampling point: source coordinates (-1 where the tap falls
// outside with zeros padding) and their weights.
struct AxisTaps {
  std::vector<int64_t> index;
  std::vector<double> weight;
};

AxisTaps TapsOf(const GridSampler& s, const std::string& mode, double grid_value, int64_t size) {
  double f = s.Unnormalize(grid_value, size);
  auto inside = [size](double c) { return c >= 0 && c <= static_cast<double>(size - 1) ? static_cast<int64_t>(c) : -1; };
  AxisTaps taps;
  if (mode == "nearest") {
    taps.index = {inside(std::nearbyint(s.Pad(f, size)))};
    taps.weight = {1.0};
  } else if (mode == "bilinear") {
    double p = s.Pad(f, size), low = std::floor(p);
    taps.index = {inside(low), inside(low + 1)};
    taps.weight = {1 - (p - low), p - low};
  } else {  // bicubic: each tap is padded on its own
    double low = std::floor(f);
    taps.weight = CubicCoefficients(f - low);
    for (int i = 0; i < 4; ++i) taps.index.push_back(inside(s.Pad(low - 1 + i, size)));
  }
  return taps;
}

// Any spatial rank k: X [N, C, D1..Dk], grid [N, O1..Ok, k] with grid[..., 0] addressing Dk.
Tensors GridSample(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& grid = ctx.in(1);
  GridSampler s{ctx.attrs().GetInt("align_corners", 0) != 0, ctx.attrs().GetString("padding_mode", "zeros")};
  std::string mode = ctx.attrs().GetString("mode", "bilinear");
  int k = x.rank() - 2;
  int64_t n_batch = x.shape()[0], channels = x.shape()[1];
  Shape in_spatial(x.shape().begin() + 2, x.shape().end());
  Tensor out = ctx.NewOutput(0);
  Shape out_spatial(out.shape().begin() + 2, out.shape().end());
  int64_t in_points = NumElements(in_spatial), out_points = NumElements(out_spatial);
  std::vector<int64_t> in_strides = RowMajorStrides(in_spatial);
  for (int64_t n = 0; n < n_batch; ++n) {
    for (int64_t o = 0; o < out_points; ++o) {
      std::vector<AxisTaps> axes(k);
      for (int d = 0; d < k; ++d) {
        double g = grid.GetDouble((n * out_points + o) * k + (k - 1 - d));
        axes[d] = TapsOf(s, mode, g, in_spatial[d]);
      }
      // Every combination of one tap per axis: its source offset (or -1) and weight.
      std::vector<std::pair<int64_t, double>> combos{{0, 1.0}};
      for (int d = 0; d < k; ++d) {
        std::vector<std::pair<int64_t, double>> next;
        for (const auto& [offset, weight] : combos) {
          for (size_t t = 0; t < axes[d].index.size(); ++t) {
            int64_t i = axes[d].index[t];
            next.push_back({offset < 0 || i < 0 ? -1 : offset + i * in_strides[d], weight * axes[d].weight[t]});
          }
        }
        combos = std::move(next);
      }
      for (int64_t c = 0; c < channels; ++c) {
        int64_t plane = (n * channels + c) * in_points;
        double v = 0;
        for (const auto& [offset, weight] : combos) {
          if (offset >= 0) v += weight * x.GetDouble(plane + offset);
        }
        out.SetDouble((n * channels + c) * out_points + o, v);
      }
    }
  }
  return {out};
}

// The normalized coordinate of point i of an axis of `size` points (AffineGrid's base grid):
// with align_corners -1 and 1 are the corner pixels' centers, else the image's edges. A single
// point sits at 0 either way (PyTorch's affine_grid).
double BaseCoordinate(int64_t i, int64_t size, bool align_corners) {
  if (size == 1) return 0;
  return align_corners ? -1 + 2.0 * i / (size - 1) : (2.0 * i + 1) / size - 1;
}

// grid[n, p..., j] = sum_i theta[n, j, i] * base[i] with base = (x, y[, z], 1): x the innermost axis.
Tensors AffineGrid(const KernelContext& ctx) {
  const Tensor& theta = ctx.in(0);
  bool align = ctx.attrs().GetInt("align_corners", 0) != 0;
  Tensor out = ctx.NewOutput(0);
  int64_t k = out.shape().back(), n_batch = out.shape()[0];
  Shape spatial(out.shape().begin() + 1, out.shape().end() - 1);
  int64_t points = NumElements(spatial);
  for (int64_t n = 0; n < n_batch; ++n) {
    for (int64_t p = 0; p < points; ++p) {
      std::vector<double> base(k + 1, 1.0);
      int64_t rest = p;
      for (int64_t d = k - 1; d >= 0; --d) {  // spatial axis d is base entry k - 1 - d
        base[k - 1 - d] = BaseCoordinate(rest % spatial[d], spatial[d], align);
        rest /= spatial[d];
      }
      for (int64_t j = 0; j < k; ++j) {
        double v = 0;
        for (int64_t i = 0; i <= k; ++i) v += theta.GetDouble((n * k + j) * (k + 1) + i) * base[i];
        out.SetDouble((n * points + p) * k + j, v);
      }
    }
  }
  return {out};
}

// Col2Im: every input column (channel c, kernel offset b, block l) adds into the image pixel it
// was taken from; pixels in the padding are dropped.
Tensors Col2Im(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Col2ImSpec spec = ComputeCol2Im(ctx.node, x.shape());
  Tensor out = ctx.NewOutput(0);
  size_t k = spec.image.size();
  int64_t n_batch = x.shape()[0], block_size = NumElements(spec.block), blocks = x.shape()[2];
  int64_t pixels = NumElements(spec.image);
  std::vector<double> acc(out.numel(), 0.0);
  for (int64_t n = 0; n < n_batch; ++n) {
    for (int64_t c = 0; c < spec.channels; ++c) {
      for (int64_t b = 0; b < block_size; ++b) {
        for (int64_t l = 0; l < blocks; ++l) {
          int64_t pixel = 0, rb = b, rl = l;
          bool inside = true;
          std::vector<int64_t> position(k);
          for (size_t d = k; d-- > 0;) {
            int64_t offset = rb % spec.block[d], block = rl % spec.blocks[d];
            rb /= spec.block[d];
            rl /= spec.blocks[d];
            position[d] = block * spec.strides[d] + offset * spec.dilations[d] - spec.pads[d];
            inside = inside && position[d] >= 0 && position[d] < spec.image[d];
          }
          if (!inside) continue;
          for (size_t d = 0; d < k; ++d) pixel = pixel * spec.image[d] + position[d];
          acc[(n * spec.channels + c) * pixels + pixel] +=
              x.GetDouble((n * spec.channels * block_size + c * block_size + b) * blocks + l);
        }
      }
    }
  }
  for (int64_t i = 0; i < out.numel(); ++i) out.SetDouble(i, acc[i]);
  return {out};
}

// Bilinear sample of plane `plane` of x at (h, w); corners outside the image count 0.
double SampleBilinear(const Tensor& x, int64_t plane, int64_t height, int64_t width, double h, double w) {
  double h0 = std::floor(h), w0 = std::floor(w);
  double value = 0;
  for (int dy = 0; dy < 2; ++dy) {
    for (int dx = 0; dx < 2; ++dx) {
      double y = h0 + dy, xx = w0 + dx;
      if (!(y >= 0 && y < height && xx >= 0 && xx < width)) continue;
      double weight = (dy ? h - h0 : 1 - (h - h0)) * (dx ? w - w0 : 1 - (w - w0));
      value += weight * x.GetDouble(plane + static_cast<int64_t>(y) * width + static_cast<int64_t>(xx));
    }
  }
  return value;
}

// DeformConv-19: each kernel tap (i, j) of output (oh, ow) reads the input bilinearly at its
// regular position plus the learned offset of its offset group, scaled by the mask.
Tensors DeformConv(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& weight = ctx.in(1);
  const Tensor& offset = ctx.in(2);
  bool has_bias = ctx.has(3), has_mask = ctx.has(4);
  int64_t group = ctx.attrs().GetInt("group", 1), offset_group = ctx.attrs().GetInt("offset_group", 1);
  int64_t n_batch = x.shape()[0], channels = x.shape()[1], height = x.shape()[2], width = x.shape()[3];
  int64_t out_channels = weight.shape()[0], group_in = weight.shape()[1], kh = weight.shape()[2], kw = weight.shape()[3];
  WindowGeometry g = ComputeWindow(ctx.node, x.shape(), {kh, kw});
  int64_t oh = g.out[0], ow = g.out[1], taps = kh * kw;
  int64_t group_out = out_channels / group, offset_channels = channels / offset_group;
  Tensor out = ctx.NewOutput(0);
  for (int64_t n = 0; n < n_batch; ++n) {
    for (int64_t oc = 0; oc < out_channels; ++oc) {
      int64_t gi = oc / group_out;
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t xo = 0; xo < ow; ++xo) {
          double acc = has_bias ? ctx.in(3).GetDouble(oc) : 0.0;
          for (int64_t ci = 0; ci < group_in; ++ci) {
            int64_t c = gi * group_in + ci, og = c / offset_channels;
            for (int64_t i = 0; i < kh; ++i) {
              for (int64_t j = 0; j < kw; ++j) {
                int64_t tap = i * kw + j;
                auto at = [&](int64_t channel) { return ((n * offset.shape()[1] + channel) * oh + y) * ow + xo; };
                double dh = offset.GetDouble(at(og * 2 * taps + 2 * tap));
                double dw = offset.GetDouble(at(og * 2 * taps + 2 * tap + 1));
                double h = static_cast<double>(y * g.strides[0] - g.pad_begin[0] + i * g.dilations[0]) + dh;
                double w = static_cast<double>(xo * g.strides[1] - g.pad_begin[1] + j * g.dilations[1]) + dw;
                double m = has_mask ? ctx.in(4).GetDouble(((n * offset_group * taps + og * taps + tap) * oh + y) * ow + xo)
                                    : 1.0;
                double v = SampleBilinear(x, (n * channels + c) * height * width, height, width, h, w);
                acc += weight.GetDouble(((oc * group_in + ci) * kh + i) * kw + j) * m * v;
              }
            }
          }
          out.SetDouble(((n * out_channels + oc) * oh + y) * ow + xo, acc);
        }
      }
    }
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

void RegisterSpatialKernels(KernelRegistry* r) {
  r->Register("RoiAlign", RoiAlign);
  r->Register("GridSample", GridSample);
  r->Register("AffineGrid", AffineGrid);
  r->Register("Col2Im", Col2Im);
  r->Register("DeformConv", DeformConv);
  r->Register("MaxUnpool", MaxUnpool);
}

}  // namespace graph_eval
}  // namespace agate
