// The importer's steps that control flow reuses: an If branch or a Loop/Scan body is
// translated, ordered and imported node by node exactly like the main graph.
//
// Why a header: importer.cc and control_flow.cc recurse into each other (a node may hold a
// subgraph whose nodes hold subgraphs); these are the functions they share. Internal to
// frontends/onnx.
#ifndef AGATE_FRONTENDS_ONNX_IMPORT_STEPS_H_
#define AGATE_FRONTENDS_ONNX_IMPORT_STEPS_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "core/graph/graph.h"

namespace agate {
namespace onnx_frontend {

// The node's name, or "<op_type>_<index>" when it has none.
std::string NodeLabel(const onnx::NodeProto& node, int index);

// Orders the nodes so each comes after the producers of its inputs. Throws when
// a node reads a tensor nothing defines, or when the nodes form a cycle.
std::vector<int> TopologicalOrder(const onnx::GraphProto& g, const std::set<std::string>& available);

// Translates every node, or throws one kUnsupported error listing every node that
// cannot be imported (name, op type, opset, reason).
std::vector<graph::Node> TranslateAll(const onnx::GraphProto& g, int opset, const std::string& base_dir);

// Appends a graph-IR node: folded when its inputs are constants, else shape-inferred.
void AppendNode(graph::Node node, graph::Graph* result);

// The static shapes the model declares for its values (graph outputs and value_info whose
// every dimension is a number): a node whose shape operand arrives at run time is compiled for
// its output's declared shape (core/graph/run_time_shape_operand.h).
using DeclaredShapes = std::map<std::string, graph::Shape>;

// Imports one node: constants fold, control flow is resolved, the rest are shape-inferred
// and appended. `declared` may be null (no declared shapes: a run-time shape operand is refused).
void ImportNode(const onnx::NodeProto& proto, graph::Node node, int opset, const std::string& base_dir,
                graph::Graph* result, const DeclaredShapes* declared = nullptr);

}  // namespace onnx_frontend
}  // namespace agate

#endif  // AGATE_FRONTENDS_ONNX_IMPORT_STEPS_H_
