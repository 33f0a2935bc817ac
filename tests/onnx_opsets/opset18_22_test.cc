// Node tests for the ONNX opset 18-22 forms, in the style of ONNX's backend node tests (Debian's
// libonnx-testdata stops at opset 17 and there is no Python onnx here): each case builds a
// one-node model at the new opset in C++, and its expected output is computed from the spec text
// with plain loops or written out by hand, never taken from agate. Every case runs through the
// reference interpreter (core/graph_eval) and the compiled path (compiler -> module -> minimal
// runtime, as tests/onnx_conformance/compiled_executor does). Forms agate cannot express are
// refused naming the node, the operator and the attribute.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/support/error.h"
#include "frontends/onnx/importer.h"
#include "frontends/onnx/model_builder.h"
#include "tests/onnx_conformance/compiled_executor.h"
#include "tests/onnx_conformance/conformance.h"

namespace agate {
namespace {

using graph::Tensor;
using onnx_frontend::ModelBuilder;
using Ints = std::vector<int64_t>;
using Floats = std::vector<double>;
constexpr int kFloat = onnx::TensorProto::FLOAT;

Tensor F32(graph::Shape shape, std::vector<double> values) {
  return Tensor::FromDoubles(ir::DType::Float(32), std::move(shape), values);
}
Tensor I64(graph::Shape shape, std::vector<int64_t> values) {
  return Tensor::FromInts(ir::DType::Int(64), std::move(shape), values);
}

void ExpectNear(const Tensor& expected, const Tensor& actual, const std::string& what) {
  ASSERT_EQ(expected.dtype(), actual.dtype()) << what;
  ASSERT_EQ(expected.shape(), actual.shape()) << what;
  std::vector<double> e = expected.ToDoubles(), a = actual.ToDoubles();
  for (size_t i = 0; i < e.size(); ++i) {
    EXPECT_NEAR(e[i], a[i], 1e-5 + 1e-4 * std::fabs(e[i])) << what << " element " << i;
  }
}

// Imports the model, then checks `expected` on the reference interpreter and the compiled path.
// `targets` are the compiler targets to run besides the interpreter (the host's LLVM by default).
void ExpectBothPaths(const ModelBuilder& b, const std::map<std::string, Tensor>& inputs,
                     const std::map<std::string, Tensor>& expected,
                     const std::vector<std::string>& targets = {"llvm"}) {
  graph::Graph g = onnx_frontend::ImportOnnxModel(b.Build());
  std::map<std::string, Tensor> reference = conformance::InterpretGraph(g, inputs).outputs;
  for (const auto& [name, value] : expected) ExpectNear(value, reference.at(name), "interpreter: " + name);
  for (const std::string& target : targets) {
    conformance::Executor compiled = conformance::CompiledExecutor(fusion::FusionPolicy::kRule, target);
    std::map<std::string, Tensor> outputs = compiled.run(compiled.transform(g), inputs).outputs;
    for (const auto& [name, value] : expected) ExpectNear(value, outputs.at(name), target + ": " + name);
  }
}

// The reference interpreter only: for operators the operator library has no kernel for yet
// (DFT; the compiled conformance report lists them as unsupported).
void ExpectInterpreter(const ModelBuilder& b, const std::map<std::string, Tensor>& inputs,
                       const std::map<std::string, Tensor>& expected) {
  graph::Graph g = onnx_frontend::ImportOnnxModel(b.Build());
  std::map<std::string, Tensor> reference = conformance::InterpretGraph(g, inputs).outputs;
  for (const auto& [name, value] : expected) ExpectNear(value, reference.at(name), "interpreter: " + name);
}

// The import error's message (the test fails when the model imports).
std::string ImportError(const ModelBuilder& b) {
  try {
    onnx_frontend::ImportOnnxModel(b.Build());
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported) << e.message();
    return e.message();
  }
  ADD_FAILURE() << "the model imported";
  return "";
}

// ---- Opset range

TEST(OpsetRange, Opset22AcceptedAnd23RefusedByNumber) {
  for (int opset : {18, 19, 20, 21, 22}) {
    ModelBuilder b(opset);
    b.Input("x", kFloat, {2}).Node("Relu", {"x"}, {"y"}).Output("y");
    ExpectBothPaths(b, {{"x", F32({2}, {-1, 2})}}, {{"y", F32({2}, {0, 2})}});
  }
  ModelBuilder b(23);
  b.Input("x", kFloat, {2}).Node("Relu", {"x"}, {"y"}).Output("y");
  std::string message = ImportError(b);
  EXPECT_NE(message.find("opset 23"), std::string::npos) << message;
  EXPECT_NE(message.find("1 to 22"), std::string::npos) << message;
}

// ---- Opset 18

// Reduce*-18 take `axes` as an optional input. x is [2, 3, 2]; axes = [1]; keepdims = 1.
TEST(Opset18, ReduceOpsTakeAxesAsInput) {
  std::vector<double> x = {1, 2, 3, 4, 5, 6, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5};
  // The spec's formula for each reduction over the three values v of one (i, k) column.
  std::map<std::string, std::function<double(const std::vector<double>&)>> reduce = {
      {"ReduceMax", [](const std::vector<double>& v) { return std::max({v[0], v[1], v[2]}); }},
      {"ReduceMin", [](const std::vector<double>& v) { return std::min({v[0], v[1], v[2]}); }},
      {"ReduceMean", [](const std::vector<double>& v) { return (v[0] + v[1] + v[2]) / 3; }},
      {"ReduceProd", [](const std::vector<double>& v) { return v[0] * v[1] * v[2]; }},
      {"ReduceL1", [](const std::vector<double>& v) { return std::fabs(v[0]) + std::fabs(v[1]) + std::fabs(v[2]); }},
      {"ReduceL2", [](const std::vector<double>& v) { return std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }},
      {"ReduceLogSum", [](const std::vector<double>& v) { return std::log(v[0] + v[1] + v[2]); }},
      {"ReduceLogSumExp",
       [](const std::vector<double>& v) { return std::log(std::exp(v[0]) + std::exp(v[1]) + std::exp(v[2])); }},
      {"ReduceSumSquare", [](const std::vector<double>& v) { return v[0] * v[0] + v[1] * v[1] + v[2] * v[2]; }},
  };
  for (const auto& [op, fn] : reduce) {
    std::vector<double> expected;
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 2; ++k) expected.push_back(fn({x[i * 6 + k], x[i * 6 + 2 + k], x[i * 6 + 4 + k]}));
    ModelBuilder b(18);
    b.Input("x", kFloat, {2, 3, 2}).Initializer("axes", I64({1}, {1})).Node(op, {"x", "axes"}, {"y"}).Output("y");
    SCOPED_TRACE(op);
    ExpectBothPaths(b, {{"x", F32({2, 3, 2}, x)}}, {{"y", F32({2, 1, 2}, expected)}});
  }
}

// noop_with_empty_axes=1 and no axes: the input passes through; without it every axis reduces.
TEST(Opset18, ReduceNoopWithEmptyAxes) {
  ModelBuilder b(18);
  b.Input("x", kFloat, {2, 2})
      .Node("ReduceMax", {"x"}, {"same"}, {{"noop_with_empty_axes", int64_t{1}}})
      .Node("ReduceMax", {"x"}, {"all"}, {{"keepdims", int64_t{0}}})
      .Output("same")
      .Output("all");
  ExpectBothPaths(b, {{"x", F32({2, 2}, {3, -1, 7, 2})}},
                  {{"same", F32({2, 2}, {3, -1, 7, 2})}, {"all", F32({}, {7})}});
}

// Split-18 num_outputs: 7 elements in 3 chunks of ceil(7/3) = 3: [3, 3, 1].
TEST(Opset18, SplitNumOutputsUnevenLastChunk) {
  ModelBuilder b(18);
  b.Input("x", kFloat, {7})
      .Node("Split", {"x"}, {"a", "b", "c"}, {{"num_outputs", int64_t{3}}})
      .Output("a")
      .Output("b")
      .Output("c");
  ExpectBothPaths(b, {{"x", F32({7}, {0, 1, 2, 3, 4, 5, 6})}},
                  {{"a", F32({3}, {0, 1, 2})}, {"b", F32({3}, {3, 4, 5})}, {"c", F32({1}, {6})}});
}

TEST(Opset18, SplitNumOutputsDisagreeingWithOutputsIsRefused) {
  ModelBuilder b(18);
  b.Input("x", kFloat, {6}).Node("Split", {"x"}, {"a", "b"}, {{"num_outputs", int64_t{3}}}, "split0");
  b.Output("a").Output("b");
  std::string message = ImportError(b);
  EXPECT_NE(message.find("'split0' (Split, opset 18)"), std::string::npos) << message;
  EXPECT_NE(message.find("num_outputs=3"), std::string::npos) << message;
}

// Pad-18 `axes` input: pads [1, 2] apply to axis 1 only (begin 1, end 2), constant 0.
TEST(Opset18, PadAxesInput) {
  ModelBuilder b(18);
  b.Input("x", kFloat, {2, 2})
      .Initializer("pads", I64({2}, {1, 2}))
      .Initializer("value", F32({}, {9}))
      .Initializer("axes", I64({1}, {-1}))
      .Node("Pad", {"x", "pads", "value", "axes"}, {"y"})
      .Output("y");
  ExpectBothPaths(b, {{"x", F32({2, 2}, {1, 2, 3, 4})}},
                  {{"y", F32({2, 5}, {9, 1, 2, 9, 9, 9, 3, 4, 9, 9})}});
}

// Resize-18 `axes`: scales name axes 2 and 3 only. Nearest (half_pixel, round_prefer_floor)
// doubling repeats each pixel in a 2x2 block.
TEST(Opset18, ResizeAxesAttribute) {
  ModelBuilder b(18);
  b.Input("x", kFloat, {1, 1, 2, 2})
      .Initializer("scales", F32({2}, {2, 2}))
      .Node("Resize", {"x", "", "scales"}, {"y"}, {{"axes", Ints{2, 3}}, {"mode", std::string("nearest")}})
      .Output("y");
  ExpectBothPaths(b, {{"x", F32({1, 1, 2, 2}, {1, 2, 3, 4})}},
                  {{"y", F32({1, 1, 4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4})}});
}

// antialias only changes linear/cubic when downscaling: upscaling with it is plain linear.
// half_pixel linear 2 -> 4 samples x at -0.25, 0.25, 0.75, 1.25 (clamped at the edges).
TEST(Opset18, ResizeAntialiasWhenUpscalingIsPlainLinear) {
  ModelBuilder b(18);
  b.Input("x", kFloat, {1, 2})
      .Initializer("sizes", I64({1}, {4}))
      .Node("Resize", {"x", "", "", "sizes"}, {"y"},
            {{"axes", Ints{1}}, {"mode", std::string("linear")}, {"antialias", int64_t{1}},
             {"keep_aspect_ratio_policy", std::string("stretch")}})
      .Output("y");
  ExpectBothPaths(b, {{"x", F32({1, 2}, {0, 4})}}, {{"y", F32({1, 4}, {0, 1, 3, 4})}});
}

// Resize-18 antialias, linear, 8 -> 4 (scale 0.5, half_pixel): the triangle filter is stretched
// to support 1 / 0.5 = 2, so output o (source s = 2o + 0.5) reads j = 2o-1 .. 2o+2 with weights
// 1 - |j - s| * 0.5 = 0.25, 0.75, 0.75, 0.25, renormalised to 1/8, 3/8, 3/8, 1/8 (edge
// positions clamp). x = squares 0..49:
//   o=0: (0 + 3*0 + 3*1 + 4) / 8 = 0.875   o=1: (1 + 3*4 + 3*9 + 16) / 8 = 7
//   o=2: (9 + 3*16 + 3*25 + 36) / 8 = 21   o=3: (25 + 3*36 + 3*49 + 49) / 8 = 41.125
// (plain linear would give 0.5, 6.5, 20.5, 42.5).
TEST(Opset18, ResizeAntialiasLinearDownscale) {
  ModelBuilder b(18);
  b.Input("x", kFloat, {1, 8})
      .Initializer("sizes", I64({1}, {4}))
      .Node("Resize", {"x", "", "", "sizes"}, {"y"},
            {{"axes", Ints{1}}, {"mode", std::string("linear")}, {"antialias", int64_t{1}}})
      .Output("y");
  ExpectBothPaths(b, {{"x", F32({1, 8}, {0, 1, 4, 9, 16, 25, 36, 49})}},
                  {{"y", F32({1, 4}, {0.875, 7, 21, 41.125})}});
}

// The spec's antialiased 1-D resize, written out: source coordinate s (half_pixel), taps
// j = ceil(s) - 1 + k for k in [start, 2 - start), start = floor(-support / scale) + 1, weight
// kernel((j - s) * scale) renormalised, positions clamped to the input.
std::vector<double> AntialiasResize1D(const std::vector<double>& x, int64_t out, bool linear) {
  double scale = static_cast<double>(out) / x.size(), support = linear ? 1 : 2, a = -0.75;
  auto kernel = [&](double d) {
    d = std::fabs(d);
    if (linear) return std::max(0.0, 1 - d);
    if (d <= 1) return (a + 2) * d * d * d - (a + 3) * d * d + 1;
    if (d < 2) return a * d * d * d - 5 * a * d * d + 8 * a * d - 4 * a;
    return 0.0;
  };
  std::vector<double> y;
  for (int64_t o = 0; o < out; ++o) {
    double s = (o + 0.5) / scale - 0.5, sum = 0, total = 0;
    int64_t start = static_cast<int64_t>(std::floor(-support / scale)) + 1;
    for (int64_t k = start; k < 2 - start; ++k) {
      int64_t j = static_cast<int64_t>(std::ceil(s)) - 1 + k;
      double w = kernel((j - s) * scale);
      sum += w * x[std::clamp<int64_t>(j, 0, static_cast<int64_t>(x.size()) - 1)];
      total += w;
    }
    y.push_back(sum / total);
  }
  return y;
}

// Cubic antialias, 12 -> 5 (scale 5/12: 10 taps per output) on a non-polynomial signal.
TEST(Opset18, ResizeAntialiasCubicDownscale) {
  std::vector<double> x;
  for (int i = 0; i < 12; ++i) x.push_back(std::sin(0.9 * i) * 3 + (i % 3));
  ModelBuilder b(18);
  b.Input("x", kFloat, {1, 1, 12})
      .Initializer("sizes", I64({3}, {1, 1, 5}))
      .Node("Resize", {"x", "", "", "sizes"}, {"y"}, {{"mode", std::string("cubic")}, {"antialias", int64_t{1}}})
      .Output("y");
  ExpectBothPaths(b, {{"x", F32({1, 1, 12}, x)}}, {{"y", F32({1, 1, 5}, AntialiasResize1D(x, 5, false))}});
}

// Linear antialias in 2-D, 6x8 -> 3x3: separable, rows first then columns, as the spec's N-D
// interpolation (one 1-D interpolation per axis).
TEST(Opset18, ResizeAntialiasLinear2D) {
  std::vector<double> x;
  for (int i = 0; i < 48; ++i) x.push_back((i * 37) % 11 - 3.5);
  std::vector<double> rows;  // [6][3]
  for (int h = 0; h < 6; ++h) {
    std::vector<double> r = AntialiasResize1D(std::vector<double>(x.begin() + h * 8, x.begin() + h * 8 + 8), 3, true);
    rows.insert(rows.end(), r.begin(), r.end());
  }
  std::vector<double> y(9);
  for (int w = 0; w < 3; ++w) {
    std::vector<double> column;
    for (int h = 0; h < 6; ++h) column.push_back(rows[h * 3 + w]);
    std::vector<double> c = AntialiasResize1D(column, 3, true);
    for (int h = 0; h < 3; ++h) y[h * 3 + w] = c[h];
  }
  ModelBuilder b(18);
  b.Input("x", kFloat, {1, 1, 6, 8})
      .Initializer("sizes", I64({4}, {1, 1, 3, 3}))
      .Node("Resize", {"x", "", "", "sizes"}, {"y"}, {{"mode", std::string("linear")}, {"antialias", int64_t{1}}})
      .Output("y");
  ExpectBothPaths(b, {{"x", F32({1, 1, 6, 8}, x)}}, {{"y", F32({1, 1, 3, 3}, y)}});
}

// keep_aspect_ratio_policy=not_larger, x [1,1,2,4], sizes {3,3} on axes 2,3: ratios 1.5 and
// 0.75, scale = min = 0.75, output round_half_up(0.75 * 2) = 2, round_half_up(0.75 * 4) = 3.
// The resize uses 0.75 on both axes (not out/in = 1 on H): half_pixel coordinates
// H: (o + 0.5) / 0.75 - 0.5 = 1/6, 1.5 -> clamped 1;  W: 1/6, 1.5, 17/6.
// x[h][w] = 4h + w is linear, so y = 4 * H + W.
TEST(Opset18, ResizeKeepAspectRatioNotLarger) {
  ModelBuilder b(18);
  b.Input("x", kFloat, {1, 1, 2, 4})
      .Initializer("sizes", I64({2}, {3, 3}))
      .Node("Resize", {"x", "", "", "sizes"}, {"y"},
            {{"axes", Ints{2, 3}}, {"mode", std::string("linear")}, {"keep_aspect_ratio_policy", std::string("not_larger")}})
      .Output("y");
  double h0 = 1.0 / 6, w2 = 17.0 / 6;
  ExpectBothPaths(b, {{"x", F32({1, 1, 2, 4}, {0, 1, 2, 3, 4, 5, 6, 7})}},
                  {{"y", F32({1, 1, 2, 3}, {4 * h0 + h0, 4 * h0 + 1.5, 4 * h0 + w2, 4 + h0, 4 + 1.5, 4 + w2})}});
}

// not_smaller: scale = max(1.5, 0.75) = 1.5, output 3 x 6. Coordinates (o + 0.5) / 1.5 - 0.5:
// H: -1/6 -> 0, 0.5, 7/6 -> 1;  W: 0, 0.5, 7/6, 11/6, 2.5, 19/6 -> 3.
TEST(Opset18, ResizeKeepAspectRatioNotSmaller) {
  ModelBuilder b(18);
  b.Input("x", kFloat, {1, 1, 2, 4})
      .Initializer("sizes", I64({2}, {3, 3}))
      .Node("Resize", {"x", "", "", "sizes"}, {"y"},
            {{"axes", Ints{2, 3}}, {"mode", std::string("linear")}, {"keep_aspect_ratio_policy", std::string("not_smaller")}})
      .Output("y");
  std::vector<double> hs = {0, 0.5, 1}, ws = {0, 0.5, 7.0 / 6, 11.0 / 6, 2.5, 3}, y;
  for (double h : hs)
    for (double w : ws) y.push_back(4 * h + w);
  ExpectBothPaths(b, {{"x", F32({1, 1, 2, 4}, {0, 1, 2, 3, 4, 5, 6, 7})}}, {{"y", F32({1, 1, 3, 6}, y)}});
}

// ScatterElements/ScatterND-18 reduction max/min: duplicates fold together with the data value.
TEST(Opset18, ScatterReductionMaxMin) {
  for (const char* reduction : {"max", "min"}) {
    bool max = std::string(reduction) == "max";
    ModelBuilder b(18);
    b.Input("data", kFloat, {5})
        .Initializer("indices", I64({3}, {1, 1, 3}))
        .Input("updates", kFloat, {3})
        .Node("ScatterElements", {"data", "indices", "updates"}, {"y"}, {{"reduction", std::string(reduction)}})
        .Initializer("nd_indices", I64({3, 1}, {1, 1, 3}))
        .Node("ScatterND", {"data", "nd_indices", "updates"}, {"z"}, {{"reduction", std::string(reduction)}})
        .Output("y")
        .Output("z");
    // data [1, 2, 3, 4, 5]; updates 7 and 0 land on index 1, 2 on index 3.
    Tensor expected = max ? F32({5}, {1, 7, 3, 4, 5}) : F32({5}, {1, 0, 3, 2, 5});
    SCOPED_TRACE(reduction);
    ExpectBothPaths(b, {{"data", F32({5}, {1, 2, 3, 4, 5})}, {"updates", F32({3}, {7, 0, 2})}},
                    {{"y", expected}, {"z", expected}});
  }
}

// LpPool-18 ceil_mode: kernel 2, stride 2 over 5 values gives ceil(3/2)+1 = 3 windows, the
// last one holding x[4] only; p = 2.
TEST(Opset18, LpPoolCeilMode) {
  ModelBuilder b(18);
  b.Input("x", kFloat, {1, 1, 5})
      .Node("LpPool", {"x"}, {"y"},
            {{"kernel_shape", Ints{2}}, {"strides", Ints{2}}, {"ceil_mode", int64_t{1}}, {"p", int64_t{2}}})
      .Output("y");
  ExpectBothPaths(b, {{"x", F32({1, 1, 5}, {3, 4, 6, 8, 5})}}, {{"y", F32({1, 1, 3}, {5, 10, 5})}});
}

// Mish(x) = x * tanh(softplus(x)) = x * tanh(ln(1 + e^x)).
TEST(Opset18, Mish) {
  std::vector<double> x = {-3, -1, -0.25, 0, 0.5, 2, 6};
  std::vector<double> y;
  for (double v : x) y.push_back(v * std::tanh(std::log1p(std::exp(v))));
  ModelBuilder b(18);
  b.Input("x", kFloat, {7}).Node("Mish", {"x"}, {"y"}).Output("y");
  ExpectBothPaths(b, {{"x", F32({7}, x)}}, {{"y", F32({7}, y)}});
}

// GroupNormalization, x [N=2, C=4, 3], 2 groups of 2 channels: each (n, group) is normalized
// over its 6 values (biased variance), then scaled. Opset 18: scale/bias per group [G];
// opset 21: per channel [C].
std::vector<double> GroupNormReference(const std::vector<double>& x, const std::vector<double>& scale,
                                       const std::vector<double>& bias, bool per_channel) {
  const int n = 2, c = 4, s = 3, groups = 2, cg = c / groups;
  std::vector<double> y(x.size());
  for (int b = 0; b < n; ++b) {
    for (int g = 0; g < groups; ++g) {
      double mean = 0, var = 0;
      for (int i = 0; i < cg * s; ++i) mean += x[(b * c + g * cg) * s + i];
      mean /= cg * s;
      for (int i = 0; i < cg * s; ++i) var += std::pow(x[(b * c + g * cg) * s + i] - mean, 2);
      var /= cg * s;
      for (int ch = g * cg; ch < (g + 1) * cg; ++ch) {
        int p = per_channel ? ch : g;
        for (int i = 0; i < s; ++i) {
          int at = (b * c + ch) * s + i;
          y[at] = (x[at] - mean) / std::sqrt(var + 1e-5) * scale[p] + bias[p];
        }
      }
    }
  }
  return y;
}

TEST(Opset18, GroupNormalizationPerGroupScale) {
  std::vector<double> x;
  for (int i = 0; i < 24; ++i) x.push_back(std::sin(i * 0.7) * 3 + i * 0.1);
  std::vector<double> scale = {2, -0.5}, bias = {0.25, 1};
  ModelBuilder b(18);
  b.Input("x", kFloat, {2, 4, 3})
      .Initializer("scale", F32({2}, scale))
      .Initializer("bias", F32({2}, bias))
      .Node("GroupNormalization", {"x", "scale", "bias"}, {"y"}, {{"num_groups", int64_t{2}}})
      .Output("y");
  ExpectBothPaths(b, {{"x", F32({2, 4, 3}, x)}}, {{"y", F32({2, 4, 3}, GroupNormReference(x, scale, bias, false))}});
}

TEST(Opset21, GroupNormalizationPerChannelScale) {
  std::vector<double> x;
  for (int i = 0; i < 24; ++i) x.push_back(std::cos(i * 1.3) * 2 - i * 0.05);
  std::vector<double> scale = {2, -0.5, 1, 3}, bias = {0.25, 1, -2, 0};
  ModelBuilder b(21);
  b.Input("x", kFloat, {2, 4, 3})
      .Input("scale", kFloat, {4})
      .Initializer("bias", F32({4}, bias))
      .Node("GroupNormalization", {"x", "scale", "bias"}, {"y"},
            {{"num_groups", int64_t{2}}, {"epsilon", 1e-5}, {"stash_type", int64_t{1}}})
      .Output("y");
  ExpectBothPaths(b, {{"x", F32({2, 4, 3}, x)}, {"scale", F32({4}, scale)}},
                  {{"y", F32({2, 4, 3}, GroupNormReference(x, scale, bias, true))}});
}

// CenterCropPad: axis 0 crops 4 -> 2 (start (4-2)/2 = 1), axis 1 pads 2 -> 5 (begin
// floor(3/2) = 1, end 2), with zeros.
TEST(Opset18, CenterCropPad) {
  ModelBuilder b(18);
  b.Input("x", kFloat, {4, 2})
      .Initializer("shape", I64({2}, {2, 5}))
      .Node("CenterCropPad", {"x", "shape"}, {"y"})
      .Output("y");
  ExpectBothPaths(b, {{"x", F32({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}},
                  {{"y", F32({2, 5}, {0, 3, 4, 0, 0, 0, 5, 6, 0, 0})}});
}

// CenterCropPad with `axes`: only axis 1 (5 -> 2, odd difference: start rounds down to 1).
TEST(Opset18, CenterCropPadAxes) {
  ModelBuilder b(18);
  b.Input("x", kFloat, {1, 5})
      .Initializer("shape", I64({1}, {2}))
      .Node("CenterCropPad", {"x", "shape"}, {"y"}, {{"axes", Ints{-1}}})
      .Output("y");
  ExpectBothPaths(b, {{"x", F32({1, 5}, {10, 11, 12, 13, 14})}}, {{"y", F32({1, 2}, {11, 12})}});
}

// BitwiseAnd/Or/Xor/Not-18 on two's-complement integers: 12 & 10 = 8, -7 (...11111001) & 3 = 1,
// -7 | 3 = ...11111011 = -5, -7 ^ 3 = ...11111010 = -6, ~x = -x - 1; uint8 ~5 = 250.
TEST(Opset18, BitwiseOperators) {
  auto i32 = [](std::vector<int64_t> v) { return Tensor::FromInts(ir::DType::Int(32), {4}, v); };
  ModelBuilder b(18);
  b.Input("a", onnx::TensorProto::INT32, {4})
      .Input("b", onnx::TensorProto::INT32, {4})
      .Input("u", onnx::TensorProto::UINT8, {3})
      .Initializer("mask", Tensor::FromInts(ir::DType::UInt(8), {}, {0x0F}))
      .Node("BitwiseAnd", {"a", "b"}, {"and"})
      .Node("BitwiseOr", {"a", "b"}, {"or"})
      .Node("BitwiseXor", {"a", "b"}, {"xor"})
      .Node("BitwiseNot", {"a"}, {"not"})
      .Node("BitwiseNot", {"u"}, {"unot"})
      .Node("BitwiseAnd", {"u", "mask"}, {"uand"})
      .Output("and")
      .Output("or")
      .Output("xor")
      .Output("not")
      .Output("unot")
      .Output("uand");
  ExpectBothPaths(b,
                  {{"a", i32({12, -7, 0, 255})},
                   {"b", i32({10, 3, -1, 15})},
                   {"u", Tensor::FromInts(ir::DType::UInt(8), {3}, {0, 5, 255})}},
                  {{"and", i32({8, 1, 0, 15})},
                   {"or", i32({14, -5, -1, 255})},
                   {"xor", i32({6, -6, -1, 240})},
                   {"not", i32({-13, 6, -1, -256})},
                   {"unot", Tensor::FromInts(ir::DType::UInt(8), {3}, {255, 250, 0})},
                   {"uand", Tensor::FromInts(ir::DType::UInt(8), {3}, {0, 5, 15})}});
}

TEST(Opset18, BitwiseOnFloatIsAnError) {
  ModelBuilder b(18);
  b.Input("x", kFloat, {2}).Node("BitwiseNot", {"x"}, {"y"}, {}, "flip").Output("y");
  try {
    onnx_frontend::ImportOnnxModel(b.Build());
    ADD_FAILURE() << "imported";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("flip"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("takes integers"), std::string::npos) << e.message();
  }
}

// A crop shape or pad axes given as graph inputs (as ONNX's node tests do) are reported as
// static operands, so a caller binds them as compile-time values.
TEST(Opset18, StaticOperandInputsOfNewForms) {
  ModelBuilder b(18);
  b.Input("x", kFloat, {4, 2})
      .Input("shape", onnx::TensorProto::INT64, {2})
      .Input("pads", onnx::TensorProto::INT64, {2})
      .Input("axes", onnx::TensorProto::INT64, {1})
      .Node("CenterCropPad", {"x", "shape"}, {"c"})
      .Node("Pad", {"c", "pads", "", "axes"}, {"y"})
      .Output("y");
  EXPECT_EQ(onnx_frontend::StaticOperandInputs(b.Build()), (std::set<std::string>{"shape", "pads", "axes"}));
  onnx_frontend::ImportOptions options;
  options.input_values = {{"shape", I64({2}, {2, 2})}, {"pads", I64({2}, {0, 1})}, {"axes", I64({1}, {0})}};
  graph::Graph g = onnx_frontend::ImportOnnxModel(b.Build(), options);
  std::map<std::string, Tensor> out = conformance::InterpretGraph(g, {{"x", F32({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}}).outputs;
  ExpectNear(F32({3, 2}, {3, 4, 5, 6, 0, 0}), out.at("y"), "crop rows 1-2, then one zero row after");
}

// Col2Im-18: x [1, 4, 4] holds the 2x2 blocks (column b = (r0, r1), block l = (q0, q1)) of a 3x3
// image; x[b][l] = 1 + 4b + l adds into pixel (q0 + r0, q1 + r1). Worked by hand: pixel (1, 1) is
// covered by all four blocks: 13 + 10 + 7 + 4 = 34.
TEST(Opset18, Col2Im) {
  std::vector<double> x(16);
  for (int i = 0; i < 16; ++i) x[i] = 1 + i;
  ModelBuilder b(18);
  b.Input("x", kFloat, {1, 4, 4})
      .Initializer("image_shape", I64({2}, {3, 3}))
      .Initializer("block_shape", I64({2}, {2, 2}))
      .Node("Col2Im", {"x", "image_shape", "block_shape"}, {"y"}, {}, "col2im")
      .Output("y");
  ExpectBothPaths(b, {{"x", F32({1, 4, 4}, x)}}, {{"y", F32({1, 1, 3, 3}, {1, 7, 6, 12, 34, 22, 11, 27, 16})}});
}

// Col2Im-18 with a block count that does not match image_shape is refused naming node and shapes.
TEST(Opset18, Col2ImWrongBlockCountIsRefused) {
  ModelBuilder b(18);
  b.Input("x", kFloat, {1, 4, 5})
      .Initializer("image_shape", I64({2}, {3, 3}))
      .Initializer("block_shape", I64({2}, {2, 2}))
      .Node("Col2Im", {"x", "image_shape", "block_shape"}, {"y"}, {}, "col2im")
      .Output("y");
  try {
    onnx_frontend::ImportOnnxModel(b.Build());
    ADD_FAILURE() << "the model imported";
  } catch (const Error& e) {
    std::string m = e.message();
    EXPECT_NE(m.find("'col2im'"), std::string::npos) << m;
    EXPECT_NE(m.find("input [1,4,5] has 5 blocks but image_shape [3,3] with block_shape [2,2] gives 4"),
              std::string::npos)
        << m;
  }
}

// ---- Opset 19

// AveragePool-19 dilations: kernel 2 with dilation 2 over 5 values averages x[i] and x[i+2].
TEST(Opset19, AveragePoolDilations) {
  ModelBuilder b(19);
  b.Input("x", kFloat, {1, 1, 5})
      .Node("AveragePool", {"x"}, {"y"}, {{"kernel_shape", Ints{2}}, {"dilations", Ints{2}}})
      .Output("y");
  ExpectBothPaths(b, {{"x", F32({1, 1, 5}, {1, 2, 5, 8, 9})}}, {{"y", F32({1, 1, 3}, {3, 5, 7})}});
}

// Pad-19 mode=wrap: the input repeats as if its edges were joined. x = [[1, 2, 3], [4, 5, 6]],
// pads: axis 0 begin 1, axis 1 begin 2 and end 1; row -1 is row 1, columns -2, -1 are 1, 2 and
// column 3 is column 0.
TEST(Opset19, PadWrap) {
  ModelBuilder b(19);
  b.Input("x", kFloat, {2, 3})
      .Initializer("pads", I64({4}, {1, 2, 0, 1}))
      .Node("Pad", {"x", "pads"}, {"y"}, {{"mode", std::string("wrap")}})
      .Output("y");
  ExpectBothPaths(b, {{"x", F32({2, 3}, {1, 2, 3, 4, 5, 6})}},
                  {{"y", F32({3, 6}, {5, 6, 4, 5, 6, 4, 2, 3, 1, 2, 3, 1, 5, 6, 4, 5, 6, 4})}});
}

// Resize-19 half_pixel_symmetric: x = [1, 2, 3, 4], scale 0.6 -> output_width 2.4, 2 outputs;
// adjustment 2 / 2.4, offset = 4/2 (1 - adjustment) = 1/3; x_ori = 1/3 + (x + 0.5) / 0.6 - 0.5 =
// 2/3 and 7/3, linearly interpolated: 1 + 2/3 and 3 + 1/3.
TEST(Opset19, ResizeHalfPixelSymmetric) {
  ModelBuilder b(19);
  b.Input("x", kFloat, {1, 1, 1, 4})
      .Initializer("scales", F32({4}, {1, 1, 1, 0.6}))
      .Node("Resize", {"x", "", "scales"}, {"y"},
            {{"mode", std::string("linear")},
             {"coordinate_transformation_mode", std::string("half_pixel_symmetric")}})
      .Output("y");
  ExpectBothPaths(b, {{"x", F32({1, 1, 1, 4}, {1, 2, 3, 4})}}, {{"y", F32({1, 1, 1, 2}, {5.0 / 3, 10.0 / 3})}});
}

// Cast-19 saturate only affects float8 targets; for others the default 1 is accepted.
TEST(Opset19, CastSaturateToNonFloat8) {
  ModelBuilder b(19);
  b.Input("x", kFloat, {3})
      .Node("Cast", {"x"}, {"y"}, {{"to", int64_t{onnx::TensorProto::INT32}}, {"saturate", int64_t{1}}})
      .Output("y");
  ExpectBothPaths(b, {{"x", F32({3}, {-2.75, 0.5, 3.25})}},
                  {{"y", Tensor::FromInts(ir::DType::Int(32), {3}, {-2, 0, 3})}});
}

TEST(Opset19, Float8IsRefusedByName) {
  ModelBuilder cast(19);
  cast.Input("x", kFloat, {3}).Node("Cast", {"x"}, {"y"}, {{"to", int64_t{17}}}, "to_f8").Output("y");
  std::string message = ImportError(cast);
  EXPECT_NE(message.find("'to_f8' (Cast, opset 19)"), std::string::npos) << message;
  EXPECT_NE(message.find("FLOAT8E4M3FN"), std::string::npos) << message;
}

// DeformConv-19: x = 1..9 in a 3x3 image, a 2x2 kernel of ones, no padding. Without offsets each
// output is its 2x2 window's sum (12, 16, 24, 28). Output (0, 0)'s tap (0, 0) moves down half a
// pixel (offset channel 0): it reads (1 + 4) / 2 = 2.5 instead of 1, giving 13.5. Output (1, 1)'s
// tap (1, 1) moves one pixel right (channel 2 * 3 + 1 = 7) to column 3, outside: 0 instead of 9,
// giving 19.
TEST(Opset19, DeformConv) {
  std::vector<double> x, offset(8 * 4, 0.0);
  for (int i = 1; i <= 9; ++i) x.push_back(i);
  offset[0 * 4 + 0] = 0.5;  // channel 0, (y, x) = (0, 0)
  offset[7 * 4 + 3] = 1.0;  // channel 7, (y, x) = (1, 1)
  ModelBuilder b(19);
  b.Input("x", kFloat, {1, 1, 3, 3})
      .Initializer("w", F32({1, 1, 2, 2}, {1, 1, 1, 1}))
      .Input("offset", kFloat, {1, 8, 2, 2})
      .Node("DeformConv", {"x", "w", "offset"}, {"y"}, {{"kernel_shape", Ints{2, 2}}}, "deform")
      .Output("y");
  ExpectBothPaths(b, {{"x", F32({1, 1, 3, 3}, x)}, {"offset", F32({1, 8, 2, 2}, offset)}},
                  {{"y", F32({1, 1, 2, 2}, {13.5, 16, 24, 19})}});
}

// ---- Opset 20

// Gelu-20: approximate=none is x/2 (1 + erf(x/sqrt 2)); tanh is
// x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
TEST(Opset20, Gelu) {
  std::vector<double> x = {-3, -1, -0.5, 0, 0.5, 1, 2.5};
  std::vector<double> exact, approx;
  for (double v : x) {
    exact.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
    approx.push_back(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
  }
  ModelBuilder b(20);
  b.Input("x", kFloat, {7})
      .Node("Gelu", {"x"}, {"exact"})
      .Node("Gelu", {"x"}, {"approx"}, {{"approximate", std::string("tanh")}})
      .Output("exact")
      .Output("approx");
  ExpectBothPaths(b, {{"x", F32({7}, x)}}, {{"exact", F32({7}, exact)}, {"approx", F32({7}, approx)}});
}

// ReduceMax/ReduceMin-20 accept bool: max is "any", min is "all".
TEST(Opset20, ReduceMaxMinOnBool) {
  auto bools = [](graph::Shape shape, std::vector<int64_t> v) {
    return Tensor::FromInts(ir::DType::Bool(), std::move(shape), v);
  };
  ModelBuilder b(20);
  b.Input("x", onnx::TensorProto::BOOL, {3, 2})
      .Initializer("axes", I64({1}, {0}))
      .Node("ReduceMax", {"x", "axes"}, {"any"}, {{"keepdims", int64_t{0}}})
      .Node("ReduceMin", {"x", "axes"}, {"all"}, {{"keepdims", int64_t{0}}})
      .Output("any")
      .Output("all");
  ExpectBothPaths(b, {{"x", bools({3, 2}, {1, 0, 1, 0, 1, 1})}},
                  {{"any", bools({2}, {1, 1})}, {"all", bools({2}, {1, 0})}});
}

// DFT-20: `axis` is an input (default -2, counted over the whole rank). The DFT of the real
// signal [1, 2, 3, 4] is [10, -2+2i, -2, -2-2i].
TEST(Opset20, DftAxisInput) {
  Tensor x = F32({1, 4, 1}, {1, 2, 3, 4});
  Tensor expected = F32({1, 4, 2}, {10, 0, -2, 2, -2, 0, -2, -2});
  ModelBuilder with_axis(20);
  with_axis.Input("x", kFloat, {1, 4, 1})
      .Initializer("axis", I64({}, {1}))
      .Node("DFT", {"x", "", "axis"}, {"y"})
      .Output("y");
  ExpectInterpreter(with_axis, {{"x", x}}, {{"y", expected}});
  ModelBuilder default_axis(20);
  default_axis.Input("x", kFloat, {1, 4, 1}).Node("DFT", {"x"}, {"y"}).Output("y");
  ExpectInterpreter(default_axis, {{"x", x}}, {{"y", expected}});
}

// GridSample-20 names the 4-D bilinear mode "linear". With align_corners=1, grid points -1, 0, 1
// (x) and -1, 1 (y) are exactly the pixel centers, so the output is the input.
TEST(Opset20, GridSampleLinearMode) {
  std::vector<double> grid;
  for (double y : {-1.0, 1.0})
    for (double x : {-1.0, 0.0, 1.0}) grid.insert(grid.end(), {x, y});
  Tensor image = F32({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  ModelBuilder b(20);
  b.Input("x", kFloat, {1, 1, 2, 3})
      .Input("grid", kFloat, {1, 2, 3, 2})
      .Node("GridSample", {"x", "grid"}, {"y"}, {{"mode", std::string("linear")}, {"align_corners", int64_t{1}}})
      .Output("y");
  ExpectBothPaths(b, {{"x", image}, {"grid", F32({1, 2, 3, 2}, grid)}}, {{"y", image}});
}

// GridSample-20 over three spatial axes (X [1, 1, 2, 2, 2], grid [..., (x, y, z)]), mode linear,
// align_corners=0: the unnormalized coordinate of g is ((g + 1) * 2 - 1) / 2 = g + 0.5, so grid
// point (0, 0, 0) is the center of the cube (the mean of the 8 voxels), (-0.5, -0.5, -0.5) is
// voxel (0, 0, 0), (0.5, -0.5, -0.5) is voxel x = 1, and (-1, -0.5, -0.5) lies half a pixel left of
// voxel (0, 0, 0): with zeros padding half its value.
TEST(Opset20, GridSampleThreeSpatialAxes) {
  Tensor volume = F32({1, 1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});  // value at (z, y, x) = 1 + 4z + 2y + x
  ModelBuilder b(20);
  b.Input("x", kFloat, {1, 1, 2, 2, 2})
      .Input("grid", kFloat, {1, 1, 1, 4, 3})
      .Node("GridSample", {"x", "grid"}, {"y"}, {{"mode", std::string("linear")}})
      .Output("y");
  Tensor grid = F32({1, 1, 1, 4, 3}, {0, 0, 0, -0.5, -0.5, -0.5, 0.5, -0.5, -0.5, -1, -0.5, -0.5});
  ExpectBothPaths(b, {{"x", volume}, {"grid", grid}}, {{"y", F32({1, 1, 1, 1, 4}, {4.5, 1, 2, 0.5})}});
}

// A grid whose last axis does not match X's spatial rank is refused naming node, operand and shapes.
TEST(Opset20, GridSampleWrongGridShapeIsRefused) {
  ModelBuilder b(20);
  b.Input("x", kFloat, {1, 1, 4, 4})
      .Input("grid", kFloat, {1, 2, 2, 3})
      .Node("GridSample", {"x", "grid"}, {"y"}, {}, "sampler")
      .Output("y");
  try {
    onnx_frontend::ImportOnnxModel(b.Build());
    ADD_FAILURE() << "the model imported";
  } catch (const Error& e) {
    std::string m = e.message();
    EXPECT_NE(m.find("'sampler'"), std::string::npos) << m;
    EXPECT_NE(m.find("grid's last axis must hold 2 coordinates"), std::string::npos) << m;
    EXPECT_NE(m.find("float32[1,2,2,3]"), std::string::npos) << m;
  }
}

// AffineGrid-20 (2-D and 3-D, both align_corners): the base grid is linspace(-1, 1) over the
// corner pixels' centers (align_corners=1) or (2i + 1) / size - 1 (align_corners=0), innermost axis
// first, and each grid point is theta @ (x, y[, z], 1).
TEST(Opset20, AffineGrid) {
  for (int64_t align : {0, 1}) {
    for (int k : {2, 3}) {
      std::vector<int64_t> size = k == 2 ? std::vector<int64_t>{1, 1, 2, 3} : std::vector<int64_t>{1, 1, 2, 2, 3};
      std::vector<double> theta;
      for (int i = 0; i < k * (k + 1); ++i) theta.push_back(0.25 * i - 1);
      auto base = [&](int64_t i, int64_t n) {
        return align ? -1 + 2.0 * i / (n - 1) : (2.0 * i + 1) / n - 1;
      };
      graph::Shape spatial(size.begin() + 2, size.end());
      graph::Shape out_shape{1};
      out_shape.insert(out_shape.end(), spatial.begin(), spatial.end());
      out_shape.push_back(k);
      std::vector<double> expected;
      int64_t points = graph::NumElements(spatial);
      for (int64_t p = 0; p < points; ++p) {
        std::vector<double> v(k + 1, 1.0);  // (x, y[, z], 1)
        int64_t rest = p;
        for (int d = k - 1; d >= 0; --d) {
          v[k - 1 - d] = base(rest % spatial[d], spatial[d]);
          rest /= spatial[d];
        }
        for (int j = 0; j < k; ++j) {
          double g = 0;
          for (int i = 0; i <= k; ++i) g += theta[j * (k + 1) + i] * v[i];
          expected.push_back(g);
        }
      }
      ModelBuilder b(20);
      b.Input("theta", kFloat, {1, k, k + 1})
          .Initializer("size", I64({static_cast<int64_t>(size.size())}, size))
          .Node("AffineGrid", {"theta", "size"}, {"grid"}, {{"align_corners", align}})
          .Output("grid");
      SCOPED_TRACE("k=" + std::to_string(k) + " align_corners=" + std::to_string(align));
      ExpectBothPaths(b, {{"theta", F32({1, k, k + 1}, theta)}}, {{"grid", F32(out_shape, expected)}});
    }
  }
}

// ---- Opset 21

// QuantizeLinear-21 `output_dtype` gives the type when there is no zero point:
// y = saturate(round_half_even(x / scale)) in int8; block_size 0 is per-tensor.
TEST(Opset21, QuantizeLinearOutputDtype) {
  ModelBuilder b(21);
  b.Input("x", kFloat, {5})
      .Initializer("scale", F32({}, {0.5}))
      .Node("QuantizeLinear", {"x", "scale"}, {"q"},
            {{"output_dtype", int64_t{onnx::TensorProto::INT8}}, {"block_size", int64_t{0}}, {"saturate", int64_t{1}}})
      .Node("DequantizeLinear", {"q", "scale"}, {"y"}, {{"block_size", int64_t{0}}})
      .Output("q")
      .Output("y");
  // x / 0.5 = -200 -> -128 (saturated), -1.5 -> -2 (half to even), 0.625 -> 1, 2.5 -> 2 (half to
  // even), 140 -> 127 (saturated); DequantizeLinear gives q * 0.5 back.
  ExpectBothPaths(b, {{"x", F32({5}, {-100, -0.75, 0.3125, 1.25, 70})}},
                  {{"q", Tensor::FromInts(ir::DType::Int(8), {5}, {-128, -2, 1, 2, 127})},
                   {"y", F32({5}, {-64, -1, 0.5, 1, 63.5})}});
}

// QuantizeLinear / DequantizeLinear-21 with block_size 2 along axis 1 of x [2, 5]: scale and zero
// point are [2, ceil(5 / 2) = 3], entry (r, b) serving columns 2b and 2b + 1 of row r (the last block
// holds one column). Worked by hand: q = saturate(round_half_even(x / scale) + zero_point), e.g.
// x[0][4] = 5 with scale 2 -> 2.5 -> 2, + zero point -1 -> 1; y = (q - zero_point) * scale.
TEST(Opset21, BlockedQuantization) {
  ModelBuilder b(21);
  b.Input("x", kFloat, {2, 5})
      .Initializer("scale", F32({2, 3}, {0.5, 1, 2, 0.25, 0.5, 4}))
      .Initializer("zero", Tensor::FromInts(ir::DType::Int(8), {2, 3}, {0, 1, -1, 2, 0, 3}))
      .Node("QuantizeLinear", {"x", "scale", "zero"}, {"q"}, {{"axis", int64_t{1}}, {"block_size", int64_t{2}}})
      .Node("DequantizeLinear", {"q", "scale", "zero"}, {"y"}, {{"axis", int64_t{1}}, {"block_size", int64_t{2}}})
      .Output("q")
      .Output("y");
  ExpectBothPaths(b, {{"x", F32({2, 5}, {1, 2, 3, 4, 5, -1, -2, -3, -4, -5})}},
                  {{"q", Tensor::FromInts(ir::DType::Int(8), {2, 5}, {2, 4, 4, 5, 1, -2, -6, -6, -8, 2})},
                   {"y", F32({2, 5}, {1, 2, 3, 4, 4, -1, -2, -3, -4, -4})}});
}

// A blocked scale whose shape does not match the blocks is refused naming node, tensor and shapes.
TEST(Opset21, BlockedScaleOfTheWrongShapeAndInt4AreRefused) {
  ModelBuilder blocked(21);
  blocked.Input("x", kFloat, {2, 5})
      .Initializer("scale", F32({2, 2}, {1, 1, 1, 1}))
      .Node("QuantizeLinear", {"x", "scale"}, {"q"}, {{"axis", int64_t{1}}, {"block_size", int64_t{2}}}, "blockq")
      .Output("q");
  try {
    onnx_frontend::ImportOnnxModel(blocked.Build());
    ADD_FAILURE() << "the model imported";
  } catch (const Error& e) {
    std::string m = e.message();
    EXPECT_NE(m.find("'blockq'"), std::string::npos) << m;
    EXPECT_NE(m.find("scale 'scale' must be [2,3] for input 'x' float32[2,5]"), std::string::npos) << m;
    EXPECT_NE(m.find("got float32[2,2]"), std::string::npos) << m;
  }

  ModelBuilder int4(21);
  int4.Input("x", 22, {4}).Node("Identity", {"x"}, {"y"}).Output("y");
  std::string message = ImportError(int4);
  EXPECT_NE(message.find("INT4"), std::string::npos) << message;
}

}  // namespace
}  // namespace agate
