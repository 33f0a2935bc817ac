#include "frontends/onnx/opset_forms.h"

#include <cmath>
#include <sstream>

#include "core/graph/shape_rules.h"
#include "core/support/error.h"
#include "frontends/onnx/tensor_proto.h"

namespace agate {
namespace onnx_frontend {

using graph::Node;

namespace {

std::string Str(int64_t v) { return std::to_string(v); }

// Split-18: `num_outputs` names the number of equal chunks (the last one smaller when the
// extent does not divide); the graph IR derives the chunks from the output count, with the
// same ceil-division rule, so the attribute only has to agree with the outputs.
std::string TranslateSplit(const onnx::NodeProto& proto, Node* node) {
  if (!node->attrs.Has("num_outputs")) return "";
  int64_t n = node->attrs.GetInt("num_outputs");
  if (n != proto.output_size()) return "num_outputs=" + Str(n) + " but the node has " + Str(proto.output_size()) + " outputs";
  if (proto.input_size() > 1 && !proto.input(1).empty()) return "num_outputs together with a split input";
  node->attrs.Erase("num_outputs");
  return "";
}

// QuantizeLinear-19/21, DequantizeLinear-21: `saturate` only concerns float8 outputs (which
// agate refuses by type); `block_size` > 0 (blocked quantization) is kept for the graph IR, 0 (per
// tensor or per axis) is dropped.
std::string TranslateQuantize(Node* node) {
  node->attrs.Erase("saturate");
  if (node->attrs.Has("block_size") && node->attrs.GetInt("block_size") == 0) node->attrs.Erase("block_size");
  return "";
}

// GridSample-20 renamed the 4-D modes bilinear/bicubic to linear/cubic (for N-D sampling).
void TranslateGridSample(int opset, Node* node) {
  if (opset < 20 || !node->attrs.Has("mode")) return;
  std::string mode = node->attrs.GetString("mode");
  if (mode == "linear") node->attrs.Set("mode", "bilinear");
  if (mode == "cubic") node->attrs.Set("mode", "bicubic");
}

std::vector<int> NormalizedAxes(const Node& node, int rank, const std::string& where) {
  return graph::NormalizeAxes(node.attrs.GetInts("axes"), rank, where);
}

// Pad-18: `pads` lists begin/end values for `axes` only; the others are not padded.
void NormalizePad(const std::string& where, Node* node, const graph::Graph& g) {
  if (!node->attrs.Has("axes")) return;
  int rank = g.TypeOf(node->inputs[0]).rank();
  std::vector<int> axes = NormalizedAxes(*node, rank, where);
  std::vector<int64_t> pads = node->attrs.GetInts("pads");
  int k = static_cast<int>(axes.size());
  AGATE_REQUIRE(static_cast<int>(pads.size()) == 2 * k, kInvalidArgument)
      << where << ": pads has " << pads.size() << " values for " << k << " axes";
  std::vector<int64_t> full(2 * rank, 0);
  for (int i = 0; i < k; ++i) {
    full[axes[i]] = pads[i];
    full[axes[i] + rank] = pads[i + k];
  }
  node->attrs.Set("pads", full);
  node->attrs.Erase("axes");
}

// Resize-18 `axes`: roi, scales and sizes name only those axes; the others keep their extent
// (scale 1, roi [0, 1]).
void ExpandResizeAxes(const std::string& where, Node* node, const graph::Shape& in) {
  if (!node->attrs.Has("axes")) return;
  int rank = static_cast<int>(in.size());
  std::vector<int> axes = NormalizedAxes(*node, rank, where);
  size_t k = axes.size();
  std::vector<double> scales = node->attrs.GetFloats("scales", {});
  std::vector<int64_t> sizes = node->attrs.GetInts("sizes", {});
  std::vector<double> roi = node->attrs.GetFloats("roi", {});
    AGATE_REQUIRE(scales.empty() || scales.size() == k, kInvalidArgument)
      << where << ": scales has " << scales.size() << " values for " << k << " axes";
  AGATE_REQUIRE(sizes.empty() || sizes.size() == k, kInvalidArgument)
      << where << ": sizes has " << sizes.size() << " values for " << k << " axes";
  AGATE_REQUIRE(roi.empty() || roi.size() == 2 * k, kInvalidArgument)
      << where << ": roi has " << roi.size() << " values for " << k << " axes";
  if (!scales.empty()) {
    std::vector<double> full(rank, 1.0);
    for (size_t i = 0; i < k; ++i) full[axes[i]] = scales[i];
    node->attrs.Set("scales", full);
  }
  if (!sizes.empty()) {
    std::vector<int64_t> full(in.begin(), in.end());
    for (size_t i = 0; i < k; ++i) full[axes[i]] = sizes[i];
    node->attrs.Set("sizes", full);
  }
  if (!roi.empty()) {
    std::vector<double> full(2 * rank, 0.0);
    for (int d = 0; d < rank; ++d) full[d + rank] = 1.0;
    for (size_t i = 0; i < k; ++i) {
      full[axes[i]] = roi[i];
      full[axes[i] + rank] = roi[i + k];
    }
    node->attrs.Set("roi", full);
  }
  node->attrs.Erase("axes");
}

// The axes a Resize-18 node's sizes/scales name (all of them without `axes`), read before
// ExpandResizeAxes rewrites them to full rank.
std::vector<int> ResizeAxes(const std::string& where, const Node& node, int rank) {
  if (node.attrs.Has("axes")) return NormalizedAxes(node, rank, where);
  std::vector<int> all(rank);
  for (int d = 0; d < rank; ++d) all[d] = d;
  return all;
}

// Resize-18 `keep_aspect_ratio_policy` (only meaningful with sizes): not_larger / not_smaller
// take one scale for the named axes, the min / max of sizes[d] / in[d], and the output extents
// round_half_up(scale * in[d]); the resize then uses that scale (not out/in) on those axes and
// 1 elsewhere. Mapped onto the graph IR's Resize as full-rank sizes (the output shape) plus
// scales (the coordinate transform), which ResizeScales prefers when both are given.
void ApplyAspectRatioPolicy(const std::string& where, Node* node, const graph::Shape& in,
                            const std::vector<int>& axes) {
  std::string policy = node->attrs.GetString("keep_aspect_ratio_policy", "stretch");
  node->attrs.Erase("keep_aspect_ratio_policy");
  std::vector<int64_t> sizes = node->attrs.GetInts("sizes", {});
  if (policy == "stretch" || sizes.empty()) return;
  AGATE_REQUIRE(policy == "not_larger" || policy == "not_smaller", kInvalidArgument)
      << where << ": keep_aspect_ratio_policy=" << policy << " (expected stretch, not_larger or not_smaller)";
  AGATE_REQUIRE(sizes.size() == in.size() && !axes.empty(), kInvalidArgument)
      << where << ": sizes has " << sizes.size() << " values for rank " << in.size();
  double scale = 0;
  for (size_t i = 0; i < axes.size(); ++i) {
    int d = axes[i];
    AGATE_REQUIRE(in[d] > 0 && sizes[d] > 0, kInvalidArgument)
        << where << ": keep_aspect_ratio_policy=" << policy << " with extent " << in[d] << " -> " << sizes[d]
        << " on axis " << d;
    double ratio = static_cast<double>(sizes[d]) / static_cast<double>(in[d]);
    if (i == 0 || (policy == "not_larger" ? ratio < scale : ratio > scale)) scale = ratio;
  }
  std::vector<double> scales(in.size(), 1.0);
  for (int d : axes) {
    scales[d] = scale;
    sizes[d] = static_cast<int64_t>(std::floor(scale * static_cast<double>(in[d]) + 0.5));
    AGATE_REQUIRE(sizes[d] > 0, kInvalidArgument) << where << ": keep_aspect_ratio_policy=" << policy
                                                  << " gives an empty axis " << d;
  }
  node->attrs.Set("sizes", sizes);
  node->attrs.Set("scales", scales);
}

// Resize-18 `antialias`: only linear/cubic downscaling changes (graph::ComputeResizeTaps
// stretches the filter there); for nearest it means nothing and is dropped.
void NormalizeAntialias(Node* node) {
  int64_t antialias = node->attrs.GetInt("antialias", 0);
  std::string mode = node->attrs.GetString("mode", "nearest");
  if (antialias == 0 || mode == "nearest") {
    node->attrs.Erase("antialias");
  } else {
    node->attrs.Set("antialias", int64_t{1});
  }
}

// QuantizeLinear-21 `output_dtype`: the quantized type when no zero point gives it.
void NormalizeQuantizeOutputType(const std::string& where, Node* node, graph::Graph* g) {
  if (!node->attrs.Has("output_dtype")) return;
  int64_t code = node->attrs.GetInt("output_dtype");
  node->attrs.Erase("output_dtype");
  if (code == 0) return;
  ir::DType dtype = DTypeFromOnnx(static_cast<int>(code), where + ": output_dtype");
  bool has_zero_point = node->inputs.size() > 2 && !node->inputs[2].empty();
  if (has_zero_point) {
    ir::DType zp = g->TypeOf(node->inputs[2]).dtype;
    AGATE_REQUIRE(zp == dtype, kInvalidArgument)
        << where << ": output_dtype " << dtype << " differs from the zero point's type " << zp;
    return;
  }
  const graph::TensorType& scale = g->TypeOf(node->inputs[1]);
  std::string zero = g->FreshName(node->name + "_zero_point");
  g->AddConstant(zero, graph::Tensor::FromDoubles(dtype, scale.shape, std::vector<double>(scale.numel(), 0.0)));
  node->inputs.resize(3);
  node->inputs[2] = zero;
}

// DFT-20: `axis` is an input (default -2), counted over the whole rank including the trailing
// real/imaginary axis; the graph IR takes a non-negative axis.
void NormalizeDftAxis(Node* node, const graph::Graph& g) {
  int rank = g.TypeOf(node->inputs[0]).rank();
  int64_t axis = node->attrs.GetInt("axis", -2);
  if (axis < 0) axis += rank;
  node->attrs.Set("axis", axis);
}

}  // namespace

std::string TranslateOpsetForm(const onnx::NodeProto& proto, int opset, Node* node) {
  const std::string& op = proto.op_type();
  if (op == "Split") return TranslateSplit(proto, node);
  if (op == "QuantizeLinear" || op == "DequantizeLinear") return TranslateQuantize(node);
  if (op == "GridSample") TranslateGridSample(opset, node);
  return "";
}

bool IsDeferredAttribute(const std::string& op, const std::string& attribute) {
  if (op == "Resize") return attribute == "axes" || attribute == "antialias" || attribute == "keep_aspect_ratio_policy";
  if (op == "QuantizeLinear") return attribute == "output_dtype";
  return false;
}

std::vector<graph::StaticOperand> OpsetStaticOperands(const std::string& op, int opset) {
  if (op == "Pad" && opset >= 18) return {{3, "axes"}};
  if (op == "DFT" && opset >= 20) return {{2, "axis", false, true}};
  // CenterCropPad's target shape decides the output shape (expansions.h reads it as a constant).
  if (op == "CenterCropPad") return {{1, ""}};
  return {};
}

void NormalizeResolvedForm(const std::string& onnx_op, int opset, Node* node, graph::Graph* g) {
  if (node->inputs.empty() || node->inputs[0].empty() || !g->HasValue(node->inputs[0])) return;
  // Named like the importer's other per-node refusals: node, ONNX op type, opset.
  std::string where = "node '" + node->name + "' (" + onnx_op + ", opset " + std::to_string(opset) + ")";
  if (onnx_op == "Pad") NormalizePad(where, node, *g);
  if (onnx_op == "Resize" && opset >= 11) {
    const graph::Shape& in = g->TypeOf(node->inputs[0]).shape;
    std::vector<int> axes = ResizeAxes(where, *node, static_cast<int>(in.size()));
    ExpandResizeAxes(where, node, in);
    ApplyAspectRatioPolicy(where, node, in, axes);
    NormalizeAntialias(node);
  }
  if (onnx_op == "QuantizeLinear") NormalizeQuantizeOutputType(where, node, g);
  if (onnx_op == "DFT" && opset >= 20) NormalizeDftAxis(node, *g);
}

}  // namespace onnx_frontend
}  // namespace agate
