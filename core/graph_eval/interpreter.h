// The graph interpreter (core/graph_eval): runs a graph IR node by node with the reference
// kernels. Not to be confused with core/loop_eval, which interprets the loop IR of one kernel.
//
// Why a layer of its own, above the graph IR: it is the oracle. Constant folding evaluates nodes with EvaluateNode, the
// conformance runner executes whole models with Interpret, and tests of compiled
// code compare against it. It runs any graph the passes produce (blocked layouts
// and LayoutTransform included) and ignores fused groups and memory plans, which
// change how a graph runs but never what it computes.
#ifndef AGATE_CORE_GRAPH_EVAL_INTERPRETER_H_
#define AGATE_CORE_GRAPH_EVAL_INTERPRETER_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace agate {
namespace graph_eval {

// Runs one node on concrete inputs (nullptr for absent optional inputs): infers
// its output types from the inputs, then runs its kernel. Throws kUnsupported
// when the operator has no reference kernel.
std::vector<graph::Tensor> EvaluateNode(const graph::Node& node, const std::vector<const graph::Tensor*>& inputs);

// Constant folding's bound. Folding runs a node at compile time and stores its outputs in
// the module, so an operator that creates data from a few numbers (ConstantOfShape, Expand,
// Tile, OneHot, Range, Pad...) could turn a model of a few hundred bytes into gigabytes of
// compiler memory and module. A node folds only when no output has more elements than its
// largest input or than this bound; elements then never multiply along a chain of folds,
// while a model's own large weights (Transpose or Cast of an initializer) still fold. A node
// that does not fold stays in the graph and runs in the module like any other.
constexpr int64_t kMaxFoldedElementsFromSmallInputs = int64_t{1} << 24;

// True when a node whose largest input has `largest_input_elements` (0 with no inputs)
// and whose outputs have these types is within the bound above.
bool FoldingIsBounded(int64_t largest_input_elements, const std::vector<graph::TensorType>& outputs);

// EvaluateNode for constant folding: the outputs, or std::nullopt when folding the node
// is not bounded (FoldingIsBounded); nothing is allocated for outputs then.
std::optional<std::vector<graph::Tensor>> FoldNode(const graph::Node& node,
                                                   const std::vector<const graph::Tensor*>& inputs);

// True when the operator has a reference kernel.
bool HasKernel(const std::string& op);

// Runs the graph on `inputs` (one tensor per graph input, by name; dtype and
// shape must match the declared types) and returns the graph outputs by name.
std::map<std::string, graph::Tensor> Interpret(const graph::Graph& graph,
                                               const std::map<std::string, graph::Tensor>& inputs);

// Sees every graph input and every node output once, as soon as it is computed (the tensor is
// valid only during the call). Calibration (core/quantize) collects activation statistics with it
// without keeping the activations.
using ValueObserver = std::function<void(const std::string& value, const graph::Tensor& tensor)>;

// Interpret, calling `observe` for every graph input and node output.
std::map<std::string, graph::Tensor> Interpret(const graph::Graph& graph,
                                               const std::map<std::string, graph::Tensor>& inputs,
                                               const ValueObserver& observe);

}  // namespace graph_eval
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_EVAL_INTERPRETER_H_
