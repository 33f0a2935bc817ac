// The opset 18-22 forms of operators agate already supports, rewritten to the graph IR's
// conventions (which follow the opset-17 forms), or refused naming node, attribute and value.
//
// Why a file of its own: ONNX changes an operator's signature without changing its math
// (Split's num_outputs, Resize's axes, Pad's axes input, QuantizeLinear's block_size and
// output_dtype, DFT's axis input, GridSample's mode names, ...). The graph IR keeps one form per
// operator; this file is where every newer form is mapped onto it, following the ONNX operator
// changelog, so the rest of the compiler never sees an opset number (Resize's
// keep_aspect_ratio_policy becomes sizes + scales; antialias stays an attribute of the graph's
// Resize, whose taps implement it). Forms agate cannot express (blocked quantization) are
// refused per node with the reason, never silently mis-imported.
//
// Two stages, because some forms need the operands that become attributes:
//   1. TranslateOpsetForm: attributes alone, while every node is translated (errors are listed
//      together with the other unsupported nodes).
//   2. NormalizeResolvedForm: once static operands are attributes and input types are known
//      (Pad axes, Resize axes/antialias/keep_aspect_ratio_policy, QuantizeLinear output_dtype,
//      DFT-20 axis).
// Attributes that only stage 2 can judge are "deferred": the stage-1 attribute check skips them.
// Internal to frontends/onnx.
#ifndef AGATE_FRONTENDS_ONNX_OPSET_FORMS_H_
#define AGATE_FRONTENDS_ONNX_OPSET_FORMS_H_

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"

namespace agate {
namespace onnx_frontend {

// Stage 1: rewrites `node` (already carrying the ONNX attributes) to the graph IR's form.
// Returns "" or why this form is unsupported ("block_size=32 (blocked quantization)").
std::string TranslateOpsetForm(const onnx::NodeProto& proto, int opset, graph::Node* node);

// True for attributes that NormalizeResolvedForm consumes (skipped by the stage-1 check).
bool IsDeferredAttribute(const std::string& op, const std::string& attribute);

// Static operands that exist only in newer opsets (Pad's axes, DFT-20's axis) or belong to an
// expanded operator (CenterCropPad's shape), appended to the registry's.
std::vector<graph::StaticOperand> OpsetStaticOperands(const std::string& op, int opset);

// Stage 2: runs after static operands were resolved; may add constants to `g` (a zero point).
// Throws kUnsupported / kInvalidArgument naming the node.
void NormalizeResolvedForm(const std::string& onnx_op, int opset, graph::Node* node, graph::Graph* g);

}  // namespace onnx_frontend
}  // namespace agate

#endif  // AGATE_FRONTENDS_ONNX_OPSET_FORMS_H_
