// Shape operands that arrive at run time, compiled for the model's declared shape.
//
// Why: a model often declares the static shape of a value whose extents an operand decides
// (Resize's scales or sizes, Expand's shape, Tile's repeats, ConstantOfShape's shape, OneHot's
// depth, Pad's pads, a reduction's axes, a window's size) while the operand itself is a model input or is computed at run time: every ONNX node
// test does, and so do PyTorch's static-shape exports. The ONNX frontend then compiles the node
// for the declared shape: the attributes that fix the output shape are set from it, and the
// operand stays the node's LAST input, named by the attribute `run_time_operand`. Whoever runs
// the node (the reference interpreter, a compiled kernel) checks, before computing, that the
// operand's values give exactly that shape, and fails the run naming the node, the operand and
// both shapes when they do not. Resize reads its run-time scales for the coordinate transform
// too (a scale of 0.6 for 5 -> 3 is not 3/5).
#ifndef AGATE_CORE_GRAPH_RUN_TIME_SHAPE_OPERAND_H_
#define AGATE_CORE_GRAPH_RUN_TIME_SHAPE_OPERAND_H_

#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace agate {
namespace graph {

// The attribute naming the operand ("scales", "sizes", "shape", "repeats", "depth", "pads",
// "axes", "size").
inline constexpr const char* kRunTimeOperandAttr = "run_time_operand";

// The index of the node's run-time shape operand (its last input), or -1 when it has none. A
// Range marked "range" (start, limit and delta at run time, attribute `length` the declared
// one) has no single operand: -1.
int RunTimeShapeOperandIndex(const Node& node);

// Pad's constant value when it is read at run time (a behaviour operand, StaticOperand::run_time):
// input 1 when the node has it, else -1 (the value is the attribute `value`).
int PadValueInput(const Node& node);

// The operand's name in messages: "scales ('s')".
std::string DescribeRunTimeShapeOperand(const Node& node);

// The output shape the node's static shape rule gives when its shape operand holds `operand`
// (`input` is the shape of input 0: the data, or OneHot's indices; none when the operand is the
// only input, as for ConstantOfShape and the window operators).
// Throws kInvalidArgument naming the node when the values are malformed (count, sign, NaN).
Shape ShapeFromOperandValues(const Node& node, const Shape& input, const Tensor& operand);

// Reductions (Reduce*) with their axes at run time: every set of axes whose reduction of `in`
// has the shape `out`, one per distinct result (axes of extent 1 reduce nothing, so sets that
// differ only in those give the same values; the first such set stands for them), in a fixed
// order. Empty when no set of axes gives `out`.
std::vector<std::vector<int>> ReductionsGiving(const Shape& in, const Shape& out, bool keepdims);

// The axes a reduction's run-time axes operand names, normalized and sorted (kInvalidArgument
// naming the node for an axis out of range).
std::vector<int> ReduceAxesFromOperand(const Node& node, int rank, const Tensor& operand);

// Throws kInvalidArgument naming the node, the operand and both shapes unless the operand's
// values give `compiled`, the shape the node was compiled for. Resize's run-time scales must
// also be 1 on axes longer than 1 that the shape keeps (compiled as copies; not with
// tf_crop_and_resize, which resizes every axis).
void CheckRunTimeShapeOperand(const Node& node, const Shape& input, const Tensor& operand, const Shape& compiled);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_RUN_TIME_SHAPE_OPERAND_H_
