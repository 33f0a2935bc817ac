#include "core/graph/shape_rules.h"

#include <algorithm>
#include <cmath>

#include "core/support/error.h"

namespace agate {
namespace graph {

Shape BroadcastShapes(const Shape& a, const Shape& b, const std::string& where) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    AGATE_REQUIRE(da == db || da == 1 || db == 1, kInvalidArgument)
        << where << ": shapes " << ShapeToString(a) << " and " << ShapeToString(b) << " do not broadcast (axis " << i
        << ": " << da << " vs " << db << ")";
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape MatMulShape(const Shape& a_shape, const Shape& b_shape, const std::string& where) {
  AGATE_REQUIRE(!a_shape.empty() && !b_shape.empty(), kInvalidArgument)
      << where << ": operands " << ShapeToString(a_shape) << " and " << ShapeToString(b_shape)
      << " must not be scalars";
  Shape a = a_shape, b = b_shape;
  bool a_vector = a.size() == 1, b_vector = b.size() == 1;
  if (a_vector) a.insert(a.begin(), 1);
  if (b_vector) b.push_back(1);
  AGATE_REQUIRE(a.back() == b[b.size() - 2], kInvalidArgument)
      << where << ": inner dimensions of " << ShapeToString(a_shape) << " and " << ShapeToString(b_shape) << " differ";
  Shape out = BroadcastShapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2), where);
  if (!a_vector) out.push_back(a[a.size() - 2]);
  if (!b_vector) out.push_back(b.back());
  return out;
}

int NormalizeAxis(int64_t axis, int rank, const std::string& where) {
  // A scalar has no axis: ONNX's range [-r, r - 1] is empty for r = 0 (the compiler-ABI
  // fuzzer's ArgMax of a scalar passed here with axis 0 and its kernel read shape[0]).
  AGATE_REQUIRE(axis >= -rank && axis < rank, kInvalidArgument)
      << where << ": axis " << axis << " is out of range for rank " << rank << (rank == 0 ? " (a scalar has no axis)" : "");
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

std::vector<int> NormalizeAxes(const std::vector<int64_t>& axes, int rank, const std::string& where) {
  std::vector<int> out;
  for (int64_t a : axes) out.push_back(NormalizeAxis(a, rank, where));
  return out;
}

namespace {

std::vector<int64_t> PerDim(const Attributes& attrs, const std::string& name, size_t n, int64_t fallback) {
  std::vector<int64_t> v = attrs.GetInts(name, std::vector<int64_t>(n, fallback));
  return v;
}

void RequireSize(const Node& node, const std::string& what, size_t got, size_t want) {
  AGATE_REQUIRE(got == want, kInvalidArgument)
      << node.Describe() << ": " << what << " has " << got << " values, expected " << want;
}

}  // namespace

int64_t ParseLayoutBlock(const std::string& layout, const std::string& where) {
  if (layout == "NCHW") return 0;
  bool digits = layout.size() > 5 && layout.compare(0, 4, "NCHW") == 0 && layout.back() == 'c' &&
                layout.find_first_not_of("0123456789", 4) == layout.size() - 1;
  AGATE_REQUIRE(digits && layout.size() < 12, kUnsupported)
      << where << ": layout '" << layout << "' (supported: NCHW, NCHW<n>c)";
  int64_t block = std::stoll(layout.substr(4, layout.size() - 5));
  AGATE_REQUIRE(block > 0, kUnsupported) << where << ": layout '" << layout << "' has an empty block";
  return block;
}

int64_t InputLayoutBlock(const Node& node) {
  return ParseLayoutBlock(node.attrs.GetString("data_layout", "NCHW"), node.Describe());
}

int64_t OutputLayoutBlock(const Node& node) {
  if (!node.attrs.Has("out_layout")) return InputLayoutBlock(node);
  return ParseLayoutBlock(node.attrs.GetString("out_layout"), node.Describe());
}

namespace {

// `out` is the unrounded resized length in * scale, as in ONNX's reference; `out_int` the
// output's actual length.
double SourceCoordinate(const std::string& mode, double x, double scale, int64_t in, double out, int64_t out_int,
                        double roi_start, double roi_end) {
  if (mode == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (mode == "half_pixel_symmetric") {
    // Resize-19: keeps the input's center on the output's when in * scale is fractional.
    double adjustment = out > 0 ? static_cast<double>(out_int) / out : 1.0;
    double offset = in / 2.0 * (1 - adjustment);
    return offset + (x + 0.5) / scale - 0.5;
  }
  if (mode == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") return out == 1 ? 0.0 : x * (in - 1) / static_cast<double>(out - 1);
  if (mode == "asymmetric") return x / scale;
  if (mode == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  // tf_crop_and_resize
  return out > 1 ? roi_start * (in - 1) + x * (roi_end - roi_start) * (in - 1) / static_cast<double>(out - 1)
                 : 0.5 * (roi_start + roi_end) * (in - 1);
}

int64_t NearestIndex(const std::string& mode, double x) {
  if (mode == "floor") return static_cast<int64_t>(std::floor(x));
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  double f = std::floor(x);
  if (x - f == 0.5) return static_cast<int64_t>(mode == "round_prefer_ceil" ? f + 1 : f);
  return static_cast<int64_t>(std::round(x));
}

std::vector<double> CubicWeights(double t, double a) {
  auto w = [a](double d) {
    d = std::fabs(d);
    if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
    if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
    return 0.0;
  };
  return {w(t + 1), w(t), w(1 - t), w(2 - t)};
}

// Resize-18 antialias when downscaling (scale < 1): the linear (support 1) or cubic (support 2)
// kernel is stretched by 1/scale over the input, so each output averages every input position
// within support/scale of its source coordinate s; the weights are renormalised to sum to 1.
// Following the spec's reference: the taps are base + k for k in [start, 2 - start), where
// base = ceil(s) - 1 (so s - base lies in (0, 1]) and start = floor(-support / scale) + 1;
// tap j weighs kernel((j - s) * scale); positions outside the input take the edge value, or no
// weight with exclude_outside.
std::vector<ResizeTap> AntialiasTaps(bool linear, double s, double scale, int64_t in, double a,
                                     bool exclude_outside) {
  double support = linear ? 1.0 : 2.0;
  int64_t start = static_cast<int64_t>(std::floor(-support / scale)) + 1;
  int64_t base = static_cast<int64_t>(std::ceil(s)) - 1;
  std::vector<ResizeTap> taps;
  double total = 0;
  for (int64_t k = start; k < 2 - start; ++k) {
    int64_t j = base + k;
    double x = std::fabs((static_cast<double>(j) - s) * scale);
    double w = linear ? std::max(0.0, 1.0 - x) : CubicWeights(x, a)[1];
    if (exclude_outside && (j < 0 || j >= in)) w = 0;
    total += w;
    taps.push_back({std::clamp<int64_t>(j, 0, in - 1), w});
  }
  for (ResizeTap& tap : taps) tap.weight = total != 0 ? tap.weight / total : 0.0;
  return taps;
}

}  // namespace

ResizeAxisTaps ComputeResizeTaps(const Node& node, int axis, int rank, int64_t in, int64_t out, double scale) {
  std::string mode = node.attrs.GetString("mode", "nearest");
  std::string ct = node.attrs.GetString("coordinate_transformation_mode", "half_pixel");
  std::string nearest_mode = node.attrs.GetString("nearest_mode", "round_prefer_floor");
  double a = node.attrs.GetFloat("cubic_coeff_a", -0.75);
  bool exclude_outside = node.attrs.GetInt("exclude_outside", 0) != 0;
  std::vector<double> roi = node.attrs.GetFloats("roi", {});
  double rs = roi.size() == static_cast<size_t>(2 * rank) ? roi[axis] : 0.0;
  double re = roi.size() == static_cast<size_t>(2 * rank) ? roi[axis + rank] : 1.0;
  bool antialias = node.attrs.GetInt("antialias", 0) != 0 && mode != "nearest" && scale < 1.0;
  // The table has a row per output coordinate, whatever the other axes hold: an output with an
  // empty axis (no elements to compute) could otherwise ask for a table of any length.
  AGATE_REQUIRE(out <= kMaxResizeExtent, kUnsupported)
      << node.Describe() << ": resizing axis " << axis << " to " << out << " positions; agate's tap tables hold at most "
      << kMaxResizeExtent << " per axis";
  ResizeAxisTaps result;
  result.taps.reserve(out);
  result.outside.reserve(out);
  for (int64_t o = 0; o < out; ++o) {
    double s = SourceCoordinate(ct, static_cast<double>(o), scale, in, in * scale, out, rs, re);
    std::vector<ResizeTap> t;
    result.outside.push_back(ct == "tf_crop_and_resize" && (s < 0 || s > in - 1));
    if (antialias) {
      t = AntialiasTaps(mode == "linear", s, scale, in, a, exclude_outside);
    } else if (mode == "nearest") {
      t.push_back({std::clamp<int64_t>(NearestIndex(nearest_mode, s), 0, in - 1), 1.0});
    } else if (mode == "linear") {
      double c = std::clamp(s, 0.0, static_cast<double>(in - 1));
      int64_t i0 = static_cast<int64_t>(std::floor(c));
      int64_t i1 = std::min(i0 + 1, in - 1);
      double w1 = c - i0;
      t.push_back({i0, 1.0 - w1});
      t.push_back({i1, w1});
    } else {  // cubic
      double f = std::floor(s);
      std::vector<double> w = CubicWeights(s - f, a);
      double total = 0;
      for (int k = 0; k < 4; ++k) {
        int64_t i = static_cast<int64_t>(f) - 1 + k;
        if (exclude_outside && (i < 0 || i >= in)) w[k] = 0;
        total += w[k];
      }
      for (int k = 0; k < 4; ++k) {
        int64_t i = std::clamp<int64_t>(static_cast<int64_t>(f) - 1 + k, 0, in - 1);
        t.push_back({i, exclude_outside ? w[k] / total : w[k]});
      }
    }
    result.taps.push_back(t);
  }
  return result;
}

namespace {

// What every window starts from, checked: the spatial input extents, the kernel, strides and
// dilations (one per spatial axis) and the explicit pads (begins, then ends); the output and
// the resolved pads are sized for the caller to fill.
WindowGeometry WindowPrologue(const Node& node, const Shape& input, const std::vector<int64_t>& kernel,
                              std::vector<int64_t>* pads) {
  AGATE_REQUIRE(input.size() >= 3, kInvalidArgument)
      << node.Describe() << ": input must be N x C x spatial..., got " << ShapeToString(input);
  size_t n = input.size() - 2;
  WindowGeometry g;
  g.kernel = kernel;
  RequireSize(node, "kernel_shape", g.kernel.size(), n);
  g.strides = PerDim(node.attrs, "strides", n, 1);
  g.dilations = PerDim(node.attrs, "dilations", n, 1);
  RequireSize(node, "strides", g.strides.size(), n);
  RequireSize(node, "dilations", g.dilations.size(), n);
  *pads = node.attrs.GetInts("pads", std::vector<int64_t>(2 * n, 0));
  RequireSize(node, "pads", pads->size(), 2 * n);
  g.in.assign(input.begin() + 2, input.end());
  g.pad_begin.resize(n);
  g.pad_end.resize(n);
  g.out.resize(n);
  return g;
}

}  // namespace

WindowGeometry ComputeWindow(const Node& node, const Shape& input, const std::vector<int64_t>& kernel) {
  std::vector<int64_t> pads;
  WindowGeometry g = WindowPrologue(node, input, kernel, &pads);
  size_t n = g.in.size();
  std::string auto_pad = node.attrs.GetString("auto_pad", "NOTSET");
  bool ceil_mode = node.attrs.GetInt("ceil_mode", 0) != 0;
  for (size_t i = 0; i < n; ++i) {
    AGATE_REQUIRE(g.strides[i] > 0 && g.dilations[i] > 0 && g.kernel[i] > 0, kInvalidArgument)
        << node.Describe() << ": kernel, strides and dilations must be positive";
    int64_t extent = (g.kernel[i] - 1) * g.dilations[i] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      g.out[i] = (g.in[i] + g.strides[i] - 1) / g.strides[i];
      int64_t total = std::max<int64_t>(0, (g.out[i] - 1) * g.strides[i] + extent - g.in[i]);
      g.pad_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pad_end[i] = total - g.pad_begin[i];
    } else if (auto_pad == "VALID") {
      g.pad_begin[i] = g.pad_end[i] = 0;
      g.out[i] = (g.in[i] - extent) / g.strides[i] + 1;
    } else {
      AGATE_REQUIRE(auto_pad == "NOTSET", kUnsupported) << node.Describe() << ": auto_pad=" << auto_pad;
      g.pad_begin[i] = pads[i];
      g.pad_end[i] = pads[i + n];
      int64_t span = g.in[i] + g.pad_begin[i] + g.pad_end[i] - extent;
      AGATE_REQUIRE(span >= 0, kInvalidArgument) << node.Describe() << ": window of extent " << extent
                                                 << " is larger than the padded input along spatial axis " << i;
      g.out[i] = (ceil_mode ? (span + g.strides[i] - 1) / g.strides[i] : span / g.strides[i]) + 1;
      // A window may not start inside the end padding only (the rule of the ONNX reference and PyTorch).
      if (ceil_mode && (g.out[i] - 1) * g.strides[i] >= g.in[i] + g.pad_begin[i]) --g.out[i];
    }
    AGATE_REQUIRE(g.out[i] > 0, kInvalidArgument) << node.Describe() << ": empty output along spatial axis " << i;
  }
  return g;
}

WindowGeometry ComputeTransposedWindow(const Node& node, const Shape& input, const std::vector<int64_t>& kernel) {
  std::vector<int64_t> pads;
  WindowGeometry g = WindowPrologue(node, input, kernel, &pads);
  size_t n = g.in.size();
  std::vector<int64_t> output_padding = PerDim(node.attrs, "output_padding", n, 0);
  RequireSize(node, "output_padding", output_padding.size(), n);
  std::string auto_pad = node.attrs.GetString("auto_pad", "NOTSET");
  std::vector<int64_t> output_shape = node.attrs.GetInts("output_shape", {});
  if (output_shape.size() > n) output_shape.erase(output_shape.begin(), output_shape.end() - n);
  for (size_t i = 0; i < n; ++i) {
    int64_t extent = (g.kernel[i] - 1) * g.dilations[i] + 1;
    int64_t full = g.strides[i] * (g.in[i] - 1) + output_padding[i] + extent;
    if (!output_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      g.out[i] = !output_shape.empty() ? output_shape[i] : g.in[i] * g.strides[i];
      int64_t total = std::max<int64_t>(0, full - g.out[i]);
      if (auto_pad == "SAME_UPPER") {
        g.pad_begin[i] = total / 2;
        g.pad_end[i] = total - total / 2;
      } else {
        g.pad_begin[i] = total - total / 2;
        g.pad_end[i] = total / 2;
      }
    } else {
      g.pad_begin[i] = auto_pad == "VALID" ? 0 : pads[i];
      g.pad_end[i] = auto_pad == "VALID" ? 0 : pads[i + n];
      g.out[i] = full - g.pad_begin[i] - g.pad_end[i];
    }
    AGATE_REQUIRE(g.out[i] > 0, kInvalidArgument) << node.Describe() << ": empty output along spatial axis " << i;
  }
  return g;
}

Shape ResizeOutputShape(const Node& node, const Shape& input) {
  std::vector<int64_t> sizes = node.attrs.GetInts("sizes", {});
  if (!sizes.empty()) {
    AGATE_REQUIRE(sizes.size() == input.size(), kInvalidArgument)
        << node.Describe() << ": sizes has " << sizes.size() << " values for rank " << input.size();
    return sizes;
  }
  std::vector<double> scales = node.attrs.GetFloats("scales", {});
  AGATE_REQUIRE(scales.size() == input.size(), kInvalidArgument)
      << node.Describe() << ": needs scales or sizes with one value per axis (rank " << input.size() << ")";
  Shape out(input.size());
  for (size_t i = 0; i < input.size(); ++i) {
    double extent = std::floor(static_cast<double>(input[i]) * scales[i] + 1e-9);
    // Checked before the cast: a corrupt model's scale (1e30, inf, nan) must not reach int64.
    AGATE_REQUIRE(scales[i] > 0 && std::isfinite(scales[i]), kInvalidArgument)
        << node.Describe() << ": scale " << scales[i] << " on axis " << i << " must be positive and finite";
    AGATE_REQUIRE(extent <= static_cast<double>(kMaxResizeExtent), kUnsupported)
        << node.Describe() << ": scale " << scales[i] << " resizes axis " << i << " from " << input[i] << " to " << extent
        << " positions; agate resizes an axis to at most " << kMaxResizeExtent;
    out[i] = static_cast<int64_t>(extent);
  }
  return out;
}

std::vector<double> ResizeScales(const Node& node, const Shape& input, const Shape& output) {
  std::vector<double> scales = node.attrs.GetFloats("scales", {});
  if (scales.size() == input.size()) return scales;
  std::vector<double> out(input.size());
  for (size_t i = 0; i < input.size(); ++i) out[i] = static_cast<double>(output[i]) / static_cast<double>(input[i]);
  return out;
}

SliceSpec ComputeSlice(const Node& node, const Shape& input) {
  int rank = static_cast<int>(input.size());
  std::vector<int64_t> starts = node.attrs.GetInts("starts");
  std::vector<int64_t> ends = node.attrs.GetInts("ends");
  std::vector<int64_t> axes = node.attrs.GetInts("axes", {});
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  std::vector<int64_t> steps = node.attrs.GetInts("steps", std::vector<int64_t>(starts.size(), 1));
  AGATE_REQUIRE(ends.size() == starts.size() && axes.size() == starts.size() && steps.size() == starts.size(),
                kInvalidArgument)
      << node.Describe() << ": starts, ends, axes and steps must have equal lengths";
  SliceSpec spec;
  spec.start.assign(rank, 0);
  spec.step.assign(rank, 1);
  spec.out = input;
  for (size_t i = 0; i < starts.size(); ++i) {
    int axis = NormalizeAxis(axes[i], rank, node.Describe());
    int64_t dim = input[axis];
    int64_t step = steps[i];
    AGATE_REQUIRE(step != 0, kInvalidArgument) << node.Describe() << ": step 0 on axis " << axis;
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      spec.out[axis] = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      spec.out[axis] = start > end ? (start - end + (-step) - 1) / (-step) : 0;
    }
    spec.start[axis] = start;
    spec.step[axis] = step;
  }
  return spec;
}

std::vector<int> ReduceAxes(const Node& node, int rank) {
  std::vector<int64_t> axes = node.attrs.GetInts("axes", {});
  std::vector<int> out;
  if (axes.empty()) {
    if (node.attrs.GetInt("noop_with_empty_axes", 0) != 0) return out;
    for (int i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  out = NormalizeAxes(axes, rank, node.Describe());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Shape ReducedShape(const Shape& input, const std::vector<int>& axes, bool keepdims) {
  Shape out;
  for (int i = 0; i < static_cast<int>(input.size()); ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced) out.push_back(input[i]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

EinsumSpec ParseEinsum(const std::string& equation, const std::vector<Shape>& shapes, const std::string& where) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  size_t start = 0;
  for (size_t comma; (comma = lhs.find(',', start)) != std::string::npos; start = comma + 1)
    terms.push_back(lhs.substr(start, comma - start));
  terms.push_back(lhs.substr(start));
  AGATE_REQUIRE(terms.size() == shapes.size(), kInvalidArgument)
      << where << ": equation '" << equation << "' has " << terms.size() << " operands, got " << shapes.size();
  // Ellipsis axes get the labels 'A', 'B', ... right-aligned across operands (numpy broadcasting).
  int ellipsis_rank = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    size_t dots = terms[i].find("...");
    if (dots == std::string::npos) continue;
    int explicit_labels = static_cast<int>(terms[i].size()) - 3;
    ellipsis_rank = std::max(ellipsis_rank, static_cast<int>(shapes[i].size()) - explicit_labels);
  }
  auto ellipsis_labels = [](int n) {
    std::string labels;
    for (int k = 0; k < n; ++k) labels += static_cast<char>('A' + k);
    return labels;
  };
  EinsumSpec spec;
  for (size_t i = 0; i < terms.size(); ++i) {
    std::string labels = terms[i];
    size_t dots = labels.find("...");
    if (dots != std::string::npos) {
      int n = static_cast<int>(shapes[i].size()) - (static_cast<int>(labels.size()) - 3);
      AGATE_REQUIRE(n >= 0, kInvalidArgument) << where << ": operand " << i << " has too few axes";
      labels.replace(dots, 3, ellipsis_labels(ellipsis_rank).substr(ellipsis_rank - n));
    }
    AGATE_REQUIRE(labels.size() == shapes[i].size(), kInvalidArgument)
        << where << ": operand " << i << " has rank " << shapes[i].size() << " but '" << terms[i] << "' labels "
        << labels.size() << " axes";
    for (size_t a = 0; a < labels.size(); ++a) {
      int64_t& extent = spec.extents.emplace(labels[a], shapes[i][a]).first->second;
      if (extent == 1) extent = shapes[i][a];
      AGATE_REQUIRE(shapes[i][a] == extent || shapes[i][a] == 1, kInvalidArgument)
          << where << ": label '" << labels[a] << "' has extents " << extent << " and " << shapes[i][a];
    }
    spec.inputs.push_back(labels);
  }
  if (arrow != std::string::npos) {
    spec.output = eq.substr(arrow + 2);
    size_t dots = spec.output.find("...");
    if (dots != std::string::npos) spec.output.replace(dots, 3, ellipsis_labels(ellipsis_rank));
  } else {  // implicit mode: ellipsis labels, then labels used once, alphabetically
    spec.output = ellipsis_labels(ellipsis_rank);
    std::map<char, int> uses;
    for (const std::string& labels : spec.inputs)
      for (char c : labels) ++uses[c];
    for (const auto& [c, n] : uses)
      if (n == 1 && c >= 'a') spec.output += c;
  }
  for (char c : spec.output)
    AGATE_REQUIRE(spec.extents.count(c), kInvalidArgument) << where << ": output label '" << c << "' is unknown";
  return spec;
}

Col2ImSpec ComputeCol2Im(const Node& node, const Shape& input) {
  std::string where = node.Describe();
  Col2ImSpec spec;
  spec.image = node.attrs.GetInts("image_shape", {});
  spec.block = node.attrs.GetInts("block_shape", {});
  size_t k = spec.image.size();
  AGATE_REQUIRE(k >= 1 && spec.block.size() == k, kInvalidArgument)
      << where << ": image_shape " << ShapeToString(spec.image) << " and block_shape " << ShapeToString(spec.block)
      << " must list the same number (at least 1) of spatial extents";
  spec.dilations = node.attrs.GetInts("dilations", std::vector<int64_t>(k, 1));
  spec.strides = node.attrs.GetInts("strides", std::vector<int64_t>(k, 1));
  spec.pads = node.attrs.GetInts("pads", std::vector<int64_t>(2 * k, 0));
  AGATE_REQUIRE(spec.dilations.size() == k && spec.strides.size() == k && spec.pads.size() == 2 * k, kInvalidArgument)
      << where << ": dilations " << ShapeToString(spec.dilations) << ", strides " << ShapeToString(spec.strides)
      << " and pads " << ShapeToString(spec.pads) << " must have " << k << ", " << k << " and " << 2 * k
      << " values for image_shape " << ShapeToString(spec.image);
  AGATE_REQUIRE(input.size() == 3, kInvalidArgument)
      << where << ": input must be [N, C * prod(block_shape), L], got " << ShapeToString(input);
  int64_t block_size = 1, block_count = 1;
  for (size_t d = 0; d < k; ++d) {
    AGATE_REQUIRE(spec.image[d] > 0 && spec.block[d] > 0 && spec.dilations[d] > 0 && spec.strides[d] > 0 &&
                      spec.pads[d] >= 0 && spec.pads[d + k] >= 0,
                  kInvalidArgument)
        << where << ": image_shape " << ShapeToString(spec.image) << ", block_shape " << ShapeToString(spec.block)
        << ", dilations, strides (positive) or pads (non-negative) out of range on axis " << d;
    int64_t span = spec.dilations[d] * (spec.block[d] - 1) + 1;
    int64_t padded = spec.image[d] + spec.pads[d] + spec.pads[d + k];
    AGATE_REQUIRE(padded >= span, kInvalidArgument)
        << where << ": block_shape " << ShapeToString(spec.block) << " (dilated extent " << span << ") exceeds the padded "
        << "image extent " << padded << " on axis " << d;
    spec.blocks.push_back((padded - span) / spec.strides[d] + 1);
    block_size *= spec.block[d];
    block_count *= spec.blocks.back();
  }
  AGATE_REQUIRE(input[1] % block_size == 0, kInvalidArgument)
      << where << ": input " << ShapeToString(input) << " has " << input[1]
      << " channels, not a multiple of prod(block_shape " << ShapeToString(spec.block) << ") = " << block_size;
  AGATE_REQUIRE(input[2] == block_count, kInvalidArgument)
      << where << ": input " << ShapeToString(input) << " has " << input[2] << " blocks but image_shape "
      << ShapeToString(spec.image) << " with block_shape " << ShapeToString(spec.block) << " gives " << block_count;
  spec.channels = input[1] / block_size;
  return spec;
}

}  // namespace graph
}  // namespace agate
