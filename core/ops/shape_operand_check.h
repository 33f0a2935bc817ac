// The run-time check of a shape operand compiled for the model's declared shape.
//
// Why: the ONNX frontend compiles Resize, Expand, Tile, ConstantOfShape and OneHot whose shape
// operand arrives at run time for the output shape the model declares
// (core/graph/run_time_shape_operand.h). The kernel must then refuse operand values that give
// another shape instead of writing the declared one: this adds that condition, the static
// shape rule written over the operand's elements, to the kernel's run-time checks
// (OpContext::CheckAtRunTime), with a message naming the node, the operand and the shape.
#ifndef AGATE_CORE_OPS_SHAPE_OPERAND_CHECK_H_
#define AGATE_CORE_OPS_SHAPE_OPERAND_CHECK_H_

#include "core/ops/op_context.h"

namespace agate {
namespace ops {

// Adds the check when the node has a run-time shape operand; does nothing otherwise.
void CheckShapeOperandAtRunTime(const OpContext& ctx);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_SHAPE_OPERAND_CHECK_H_
