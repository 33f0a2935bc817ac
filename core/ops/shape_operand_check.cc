#include "core/ops/shape_operand_check.h"

#include <algorithm>
#include <functional>

#include "core/graph/run_time_shape_operand.h"
#include "core/graph/shape_rules.h"
#include "core/support/error.h"

namespace agate {
namespace ops {

using ir::Expr;

namespace {

Expr I(int64_t v) { return Expr(v); }
Expr True() { return I(0) == I(0); }
Expr False() { return I(0) != I(0); }

// Expand: the operand's extents broadcast with the input's to exactly `out`.
Expr ExpandCondition(const graph::Shape& in, int64_t count, const graph::Shape& out, const ElementReader& value) {
  const int64_t rank = std::max<int64_t>(count, static_cast<int64_t>(in.size()));
  if (rank != static_cast<int64_t>(out.size())) return False();
  Expr all = True();
  for (int64_t a = 0; a < rank; ++a) {
    const int64_t in_lead = rank - static_cast<int64_t>(in.size()), op_lead = rank - count;
    const int64_t d = a >= in_lead ? in[a - in_lead] : 1;
    Expr s = a >= op_lead ? value(a - op_lead) : I(1);
    if (d != 1 && out[a] != d) return False();
    all = all && (d == 1 ? s == I(out[a]) : (s == I(1) || s == I(d)));
  }
  return all;
}

// Tile: repeats[a] * in[a] == out[a] on every axis.
Expr TileCondition(const graph::Shape& in, int64_t count, const graph::Shape& out, const ElementReader& value) {
  if (count != static_cast<int64_t>(in.size()) || in.size() != out.size()) return False();
  Expr all = True();
  for (size_t a = 0; a < in.size(); ++a) {
    Expr r = value(static_cast<int64_t>(a));
    all = all && r >= I(0) && (in[a] == 0 ? I(out[a]) == I(0) : r * I(in[a]) == I(out[a]));
  }
  return all;
}

// Pad: begins[a] + ends[a] == out[a] - in[a] on every axis.
Expr PadCondition(const graph::Shape& in, int64_t count, const graph::Shape& out, const ElementReader& value) {
  const int64_t rank = static_cast<int64_t>(in.size());
  if (count != 2 * rank || in.size() != out.size()) return False();
  Expr all = True();
  for (int64_t a = 0; a < rank; ++a) all = all && value(a) + value(a + rank) == I(out[a] - in[a]);
  return all;
}

// ConstantOfShape, Resize's sizes: the values are the extents.
Expr ExtentsCondition(int64_t count, const graph::Shape& out, const ElementReader& value) {
  if (count != static_cast<int64_t>(out.size())) return False();
  Expr all = True();
  for (int64_t a = 0; a < count; ++a) all = all && value(a) == I(out[a]);
  return all;
}

// Resize's scales (raw floats): floor(in * scale + 1e-9) == out, as graph::ResizeOutputShape.
Expr ScalesCondition(const graph::Shape& in, int64_t count, const graph::Shape& out, const ElementReader& value) {
  if (count != static_cast<int64_t>(in.size()) || in.size() != out.size()) return False();
  Expr all = True();
  for (size_t a = 0; a < in.size(); ++a) {
    Expr scale = ir::cast(ir::DType::Float(64), value(static_cast<int64_t>(a)));
    Expr length = scale * static_cast<double>(in[a]) + 1e-9;
    // Comparisons with a NaN are false, so a NaN scale fails too.
    all = all && scale > 0.0 && length >= static_cast<double>(out[a]) && length < static_cast<double>(out[a] + 1);
  }
  return all;
}

// STFT's frame_step: positive, and (len - frame) / step + 1 == frames, written without a division
// by the run-time value: (frames - 1) * s <= len - frame < frames * s with s = min(step, len -
// frame + 1) (any larger step gives one frame too, and the products stay small).
Expr FrameStepCondition(const graph::Shape& in, int64_t frame, int64_t count, const graph::Shape& out,
                        const ElementReader& value) {
  if (count != 1 || in.size() != 3 || out.size() != 4 || frame > in[1]) return False();
  const int64_t span = in[1] - frame, frames = out[1];
  Expr step = value(0);
  Expr s = ir::min(step, I(span + 1));
  return step >= I(1) && I(frames - 1) * s <= I(span) && I(span) < I(frames) * s;
}

}  // namespace

void CheckShapeOperandAtRunTime(const OpContext& ctx) {
  const graph::Node& node = ctx.node();
  const int index = graph::RunTimeShapeOperandIndex(node);
  if (index < 0) return;
  const std::string kind = node.attrs.GetString(graph::kRunTimeOperandAttr);
  const graph::TensorType& operand = ctx.input_type(index);
  const int64_t count = operand.numel();
  const graph::Shape out = ctx.output_type(0).shape;
  const graph::Shape in = index == 0 ? graph::Shape{} : ctx.input_type(0).shape;
  const std::string message = graph::DescribeRunTimeShapeOperand(node) +
                              " (read when the model runs) does not give the output shape " +
                              graph::ShapeToString(out) + " that the model declares and agate compiled for";
  const bool is_float = operand.dtype.is_float();
  std::function<Expr(const std::vector<ElementReader>&)> condition;
  if (node.op == "Expand") {
    condition = [in, count, out](const std::vector<ElementReader>& r) { return ExpandCondition(in, count, out, r[0]); };
  } else if (node.op == "Pad") {
    condition = [in, count, out](const std::vector<ElementReader>& r) { return PadCondition(in, count, out, r[0]); };
  } else if (node.op == "Tile") {
    condition = [in, count, out](const std::vector<ElementReader>& r) { return TileCondition(in, count, out, r[0]); };
  } else if (node.op == "ConstantOfShape" || kind == "size" || (node.op == "Resize" && kind == "sizes")) {
    condition = [count, out](const std::vector<ElementReader>& r) { return ExtentsCondition(count, out, r[0]); };
  } else if (node.op == "STFT") {
    const int64_t frame = node.attrs.GetInt("frame_length");
    condition = [in, frame, count, out](const std::vector<ElementReader>& r) {
      return FrameStepCondition(in, frame, count, out, r[0]);
    };
  } else if (node.op == "OneHot") {
    const int axis = graph::NormalizeAxis(node.attrs.GetInt("axis", -1), static_cast<int>(out.size()), node.Describe());
    const int64_t depth = out[axis];
    // A float depth is truncated, as the reference does: depth <= value < depth + 1.
    condition = [count, depth, is_float](const std::vector<ElementReader>& r) {
      if (count != 1) return False();
      if (!is_float) return r[0](0) == I(depth);
      Expr v = ir::cast(ir::DType::Float(64), r[0](0));
      return v >= static_cast<double>(depth) && v < static_cast<double>(depth + 1);
    };
    ctx.CheckAtRunTime({index}, condition, message, is_float);
    return;
  } else if (node.op == "Resize" && kind == "scales") {
    condition = [in, count, out](const std::vector<ElementReader>& r) { return ScalesCondition(in, count, out, r[0]); };
    ctx.CheckAtRunTime({index}, condition, message, true);
    return;
  } else {
    AGATE_THROW(kUnsupported) << ctx.Describe() << ": no run-time check for a " << kind << " operand of " << node.op;
  }
  AGATE_REQUIRE(!is_float, kInvalidArgument) << ctx.Describe() << ": " << graph::DescribeRunTimeShapeOperand(node)
                                             << " is " << operand.ToString() << "; extents are integers";
  ctx.CheckAtRunTime({index}, condition, message);
}

}  // namespace ops
}  // namespace agate
