// Reference kernels of spatial sampling: RoiAlign, GridSample and MaxUnpool.
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
  r->Register("MaxUnpool", MaxUnpool);
}

}  // namespace graph_eval
}  // namespace agate
