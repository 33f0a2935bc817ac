// ONNX operators that agate imports as a few existing graph operators instead of a kernel
// of their own: Mish (opset 18), GroupNormalization (18 and 21), CenterCropPad (18).
//
// Why in the frontend: each one is, by its ONNX definition, a composition of operators the graph
// IR, the reference interpreter and every code generator already have (ONNX itself defines them
// as functions). Expanding them while importing gives them fusion, every target and the
// interpreter at once, with no new kernel to keep correct. The expansion follows the spec text:
//   Mish(x)              = x * tanh(softplus(x))
//   GroupNormalization   = Reshape [N, G, C/G * spatial] -> InstanceNormalization (per group)
//                          -> Reshape back; opset 18 scales/biases per group (inside the
//                          instance norm), opset 21 per channel (a broadcast Mul/Add after it)
//   CenterCropPad(x, s)  = Slice (crop start rounded down) then Pad (begin rounded down)
// Internal to frontends/onnx.
#ifndef AGATE_FRONTENDS_ONNX_EXPANSIONS_H_
#define AGATE_FRONTENDS_ONNX_EXPANSIONS_H_

#include <string>

#include "core/graph/graph.h"

namespace agate {
namespace onnx_frontend {

// True when the importer expands `op` into other graph operators.
bool IsExpandedOp(const std::string& op);

// Attribute check before import (unknown attributes, unsupported values): "" or the reason.
std::string CheckExpandedOp(const graph::Node& node, int opset);

// Appends the expansion of `node` (its ONNX inputs, outputs and attributes) to `g`.
// Throws kInvalidArgument / kUnsupported naming the node (a non-constant crop shape, ...).
void ExpandNode(const graph::Node& node, int opset, graph::Graph* g);

}  // namespace onnx_frontend
}  // namespace agate

#endif  // AGATE_FRONTENDS_ONNX_EXPANSIONS_H_
