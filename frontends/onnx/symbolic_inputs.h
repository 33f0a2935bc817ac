// Symbolic input dimensions at the frontend: which inputs carry symbols ("N", "S"), and their
// static shapes at given values of them.
//
// Why here: agate's graph IR is static, so a symbol lives only at the frontend/compiler level
// (core/compiler/batch_variants.h imports the model once per value of the symbols). A symbol is
// named by the user in --input-shape ("input:Nx3x224x224", also for a -1 or unnamed dimension)
// or is the model's own dim_param on an input with no --input-shape entry.
#ifndef AGATE_FRONTENDS_ONNX_SYMBOLIC_INPUTS_H_
#define AGATE_FRONTENDS_ONNX_SYMBOLIC_INPUTS_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include <onnx/onnx_pb.h>

#include "core/graph/graph.h"

namespace agate {
namespace onnx_frontend {

// The graph inputs (initializers excluded) whose dimensions name a symbol of `values` (symbol
// -> extent), and every input's shape at those extents for ImportOptions::input_shapes: the
// --input-shape entries (text as for ParseInputShapes, where a dimension may also be a symbol's
// name) and the inputs whose dim_params are symbols. Throws kInvalidArgument naming a malformed
// entry, or an input that names a symbol beside a dim_param that is none (with the
// --input-shape that fixes it).
std::map<std::string, graph::Shape> InputShapesAt(const onnx::ModelProto& model, const std::string& input_shape_text,
                                                  const std::map<std::string, int64_t>& values,
                                                  std::set<std::string>* symbolic_inputs);

}  // namespace onnx_frontend
}  // namespace agate

#endif  // AGATE_FRONTENDS_ONNX_SYMBOLIC_INPUTS_H_
