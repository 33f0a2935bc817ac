// The reference interpreter: runs a graph node by node with the reference kernels.
//
// Why: it is the oracle. Constant folding evaluates nodes with EvaluateNode, the
// conformance runner executes whole models with Interpret, and tests of compiled
// code compare against it. It runs any graph the passes produce (blocked layouts
// and LayoutTransform included) and ignores fused groups and memory plans, which
// change how a graph runs but never what it computes.
#ifndef AGATE_CORE_GRAPH_REFERENCE_INTERPRETER_H_
#define AGATE_CORE_GRAPH_REFERENCE_INTERPRETER_H_

#include <map>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace agate {
namespace graph {
namespace reference {

// Runs one node on concrete inputs (nullptr for absent optional inputs): infers
// its output types from the inputs, then runs its kernel. Throws kUnsupported
// when the operator has no reference kernel.
std::vector<Tensor> EvaluateNode(const Node& node, const std::vector<const Tensor*>& inputs);

// True when the operator has a reference kernel.
bool HasKernel(const std::string& op);

// Runs the graph on `inputs` (one tensor per graph input, by name; dtype and
// shape must match the declared types) and returns the graph outputs by name.
std::map<std::string, Tensor> Interpret(const Graph& graph, const std::map<std::string, Tensor>& inputs);

}  // namespace reference
}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_REFERENCE_INTERPRETER_H_
