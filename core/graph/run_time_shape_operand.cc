#include "core/graph/run_time_shape_operand.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/graph/shape_rules.h"
#include "core/support/error.h"

namespace agate {
namespace graph {

int RunTimeShapeOperandIndex(const Node& node) {
  // Range ("range") reads all three inputs; its kernels check them themselves.
  if (!node.attrs.Has(kRunTimeOperandAttr) || node.inputs.empty() || node.op == "Range") return -1;
  return static_cast<int>(node.inputs.size()) - 1;
}

int PadValueInput(const Node& node) {
  const size_t data_and_value = node.attrs.Has(kRunTimeOperandAttr) ? 3 : 2;
  return node.op == "Pad" && node.inputs.size() == data_and_value && !node.inputs[1].empty() ? 1 : -1;
}

std::string DescribeRunTimeShapeOperand(const Node& node) {
  int index = RunTimeShapeOperandIndex(node);
  std::string kind = node.attrs.GetString(kRunTimeOperandAttr, "operand");
  return index < 0 ? kind : kind + " ('" + node.inputs[index] + "')";
}

namespace {

// Extents read from an operand: integers >= 0 (a NaN or negative value is malformed).
std::vector<int64_t> Extents(const Node& node, const Tensor& operand) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < operand.numel(); ++i) {
    double v = operand.GetDouble(i);
    AGATE_REQUIRE(v >= 0 && v <= double{int64_t{1} << 40}, kInvalidArgument)
        << node.Describe() << ": " << DescribeRunTimeShapeOperand(node) << " holds " << v << " at " << i
        << ", not an extent";
    out.push_back(static_cast<int64_t>(v));
  }
  return out;
}

void RequireCount(const Node& node, const Tensor& operand, size_t want) {
  AGATE_REQUIRE(static_cast<size_t>(operand.numel()) == want, kInvalidArgument)
      << node.Describe() << ": " << DescribeRunTimeShapeOperand(node) << " has " << operand.numel()
      << " values, expected " << want;
}

}  // namespace

std::vector<std::vector<int>> ReductionsGiving(const Shape& in, const Shape& out, bool keepdims) {
  const int rank = static_cast<int>(in.size());
  std::vector<std::vector<int>> found;
  if (rank > 16) return found;
  uint32_t ones = 0;
  for (int d = 0; d < rank; ++d)
    if (in[d] == 1) ones |= 1u << d;
  std::vector<uint32_t> seen;
  for (uint32_t mask = 1; mask < (1u << rank); ++mask) {
    std::vector<int> axes;
    for (int d = 0; d < rank; ++d)
      if (mask & (1u << d)) axes.push_back(d);
    if (ReducedShape(in, axes, keepdims) != out) continue;
    const uint32_t effective = mask & ~ones;
    if (std::find(seen.begin(), seen.end(), effective) != seen.end()) continue;
    seen.push_back(effective);
    found.push_back(axes);
  }
  return found;
}

std::vector<int> ReduceAxesFromOperand(const Node& node, int rank, const Tensor& operand) {
  Node named = node;
  named.attrs.Set("axes", operand.ToInts());
  return ReduceAxes(named, rank);
}

Shape ShapeFromOperandValues(const Node& node, const Shape& input, const Tensor& operand) {
  const std::string kind = node.attrs.GetString(kRunTimeOperandAttr, "");
  if (kind == "axes") {
    std::vector<int> axes = ReduceAxesFromOperand(node, static_cast<int>(input.size()), operand);
    return ReducedShape(input, axes, node.attrs.GetInt("keepdims", 1) != 0);
  }
  if (node.op == "Expand") return BroadcastShapes(input, Extents(node, operand), node.Describe());
  if (node.op == "Pad") {  // begins then ends; negative pads crop
    RequireCount(node, operand, 2 * input.size());
    std::vector<int64_t> pads = operand.ToInts();
    Shape out = input;
    for (size_t d = 0; d < input.size(); ++d) {
      out[d] += pads[d] + pads[d + input.size()];
      AGATE_REQUIRE(out[d] >= 0, kInvalidArgument)
          << node.Describe() << ": " << DescribeRunTimeShapeOperand(node) << " removes more than the " << input[d] << " elements of axis " << d;
    }
    return out;
  }
  if (node.op == "ConstantOfShape") return Extents(node, operand);
  if (node.op == "MaxUnpool") {  // output_shape: the extents, one per input axis
    RequireCount(node, operand, input.size());
    return Extents(node, operand);
  }
  if (kind == "size") {  // HannWindow, HammingWindow, BlackmanWindow
    RequireCount(node, operand, 1);
    return Extents(node, operand);
  }
  if (node.op == "Tile") {
    RequireCount(node, operand, input.size());
    std::vector<int64_t> repeats = Extents(node, operand);
    Shape out = input;
    for (size_t d = 0; d < out.size(); ++d) out[d] *= repeats[d];
    return out;
  }
  if (node.op == "OneHot") {
    RequireCount(node, operand, 1);
    int axis = NormalizeAxis(node.attrs.GetInt("axis", -1), static_cast<int>(input.size()) + 1, node.Describe());
    Shape out = input;
    out.insert(out.begin() + axis, Extents(node, operand)[0]);
    return out;
  }
  if (node.op == "Resize" && kind == "sizes") {
    RequireCount(node, operand, input.size());
    return Extents(node, operand);
  }
  if (node.op == "Resize" && kind == "scales") {
    RequireCount(node, operand, input.size());
    Shape out(input.size());
    for (size_t d = 0; d < input.size(); ++d) {
      double scale = operand.GetDouble(static_cast<int64_t>(d));
      AGATE_REQUIRE(scale > 0 && std::isfinite(scale), kInvalidArgument)
          << node.Describe() << ": " << DescribeRunTimeShapeOperand(node) << " holds " << scale << " for axis " << d
          << "; scales must be positive";
      // As ResizeOutputShape computes it from constant scales (and bounded before the cast).
      double extent = std::floor(static_cast<double>(input[d]) * scale + 1e-9);
      AGATE_REQUIRE(extent <= static_cast<double>(kMaxResizeExtent), kInvalidArgument)
          << node.Describe() << ": " << DescribeRunTimeShapeOperand(node) << " holds " << scale << " for axis " << d
          << ", which resizes " << input[d] << " to " << extent << " positions; agate resizes an axis to at most "
          << kMaxResizeExtent;
      out[d] = static_cast<int64_t>(extent);
    }
    return out;
  }
  if (node.op == "STFT") {  // frame_step: the frame count (the frame length is an attribute then)
    RequireCount(node, operand, 1);
    const int64_t step = Extents(node, operand)[0], frame = node.attrs.GetInt("frame_length");
    AGATE_REQUIRE(step > 0 && input.size() == 3 && frame <= input[1], kInvalidArgument)
        << node.Describe() << ": " << DescribeRunTimeShapeOperand(node) << " holds " << step
        << "; frame_step must be positive";
    const int64_t bins = node.attrs.GetInt("onesided", 1) != 0 ? frame / 2 + 1 : frame;
    return {input[0], (input[1] - frame) / step + 1, bins, 2};
  }
  AGATE_THROW(kInvalidArgument) << node.Describe() << ": no shape operand '" << kind << "' read at run time";
}

void CheckRunTimeShapeOperand(const Node& node, const Shape& input, const Tensor& operand, const Shape& compiled) {
  Shape given = ShapeFromOperandValues(node, input, operand);
  AGATE_REQUIRE(given == compiled, kInvalidArgument)
      << node.Describe() << ": " << DescribeRunTimeShapeOperand(node) << " gives the output shape "
      << ShapeToString(given) << ", but the model declares (and agate compiled for) " << ShapeToString(compiled);
  if (node.op != "Resize" || node.attrs.GetString(kRunTimeOperandAttr, "") != "scales") return;
  // tf_crop_and_resize resizes every axis (its roi may move the coordinates of any).
  if (node.attrs.GetString("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize") return;
  for (size_t d = 0; d < input.size(); ++d) {
    if (input[d] != compiled[d] || input[d] <= 1) continue;
    AGATE_REQUIRE(operand.GetDouble(static_cast<int64_t>(d)) == 1.0, kInvalidArgument)
        << node.Describe() << ": " << DescribeRunTimeShapeOperand(node) << " holds "
        << operand.GetDouble(static_cast<int64_t>(d)) << " for axis " << d << ", whose extent " << input[d]
        << " the declared shape keeps; agate compiles such an axis as a copy, for scale 1 only";
  }
}

}  // namespace graph
}  // namespace agate
