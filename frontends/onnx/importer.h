// The ONNX frontend: ModelProto (opsets 11 to 22; older opsets where the
// operator's form is unchanged) -> agate's graph IR, statically shaped. The opset 18-22
// forms of operators (Split's num_outputs, Pad's axes, Resize's axes, ...) are mapped onto
// the graph IR's in opset_forms.h; Mish, GroupNormalization and CenterCropPad are expanded
// into existing graph operators (expansions.h).
//
// Why it does more than translate: agate compiles static shapes, so the frontend
// resolves every shape while importing. Initializers become constants, Constant
// nodes become constants, and every node whose inputs are all constants (the
// Shape -> Gather -> Concat -> Reshape subgraphs exporters emit) is evaluated
// with the reference interpreter as soon as it is read. Operands that fix an
// output shape (Reshape's shape, Slice's starts, ...) must then be constants and
// become attributes (see core/graph/op_registry.h). For the same reason control
// flow is resolved while importing: an If whose condition is a compile-time
// constant is replaced by the taken branch, a Loop with a constant trip count or
// condition and a Scan (opset >= 9, static sequence length) are unrolled (control_flow.h).
//
// Errors: a malformed file (truncated, not ONNX), a node that reads a missing
// tensor, a cycle, a shape mismatch, or unsupported operators are agate::Errors
// naming what and where. Unsupported operators and attributes are reported all
// at once, one line per node: name, op type, opset and the reason.
#ifndef AGATE_FRONTENDS_ONNX_IMPORTER_H_
#define AGATE_FRONTENDS_ONNX_IMPORTER_H_

#include <map>
#include <set>
#include <string>

#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h

#include "core/graph/graph.h"

namespace agate {
namespace onnx_frontend {

struct ImportOptions {
  // Overrides of graph input shapes (needed for symbolic dimensions): name -> shape.
  std::map<std::string, graph::Shape> input_shapes;
  // Graph inputs whose values are known at compile time: they become constants.
  std::map<std::string, graph::Tensor> input_values;
};

// The lowest and highest default-domain opset the importer accepts.
constexpr int kMinOpset = 1;
constexpr int kMaxOpset = 22;

// Parses and imports a .onnx file; external data is resolved next to it.
graph::Graph ImportOnnxFile(const std::string& path, const ImportOptions& options = {});
// Parses serialized bytes (kCorrupt when they are not a ModelProto).
onnx::ModelProto ParseModel(const std::string& bytes, const std::string& where);
// Imports a parsed model; `base_dir` resolves external data.
graph::Graph ImportOnnxModel(const onnx::ModelProto& model, const ImportOptions& options = {},
                             const std::string& base_dir = "");

// Parses "--input-shape" text: "data:1x3x224x224" or several joined by ','.
// Throws kInvalidArgument naming the malformed part.
std::map<std::string, graph::Shape> ParseInputShapes(const std::string& text);

// Graph inputs that feed a static operand (an operand that must be known at
// compile time, such as Reshape's shape) directly, and those a kernel may also read at run time
// (Trilu's k, StaticOperand::run_time: bound, they fold into the kernel, which every target
// compiles; cuda targets do not take a run-time CumSum axis). A caller that knows their
// values binds them through ImportOptions::input_values.
std::set<std::string> StaticOperandInputs(const onnx::ModelProto& model);

// The model's default-domain opset version (kCorrupt when absent).
int DefaultOpset(const onnx::ModelProto& model);

}  // namespace onnx_frontend
}  // namespace agate

#endif  // AGATE_FRONTENDS_ONNX_IMPORTER_H_
