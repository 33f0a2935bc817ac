// ONNX control flow (If, Loop, Scan), resolved while importing.
//
// Why at import: agate compiles static graphs, so a subgraph-holding node is replaced by plain
// nodes as soon as it is read. An If whose condition is a compile-time constant becomes the
// taken branch; a Loop with a constant trip count or condition, and a Scan (opset >= 9, static
// sequence length), are unrolled: the body is imported once per iteration, its values prefixed
// so names never collide, and per-iteration outputs are stacked (Unsqueeze + Concat). A body is
// imported node by node like the main graph (import_steps.h), so constant folding and shape
// inference apply inside it too. Internal to frontends/onnx.
#ifndef AGATE_FRONTENDS_ONNX_CONTROL_FLOW_H_
#define AGATE_FRONTENDS_ONNX_CONTROL_FLOW_H_

#include <string>

#include <onnx/onnx_pb.h>

#include "core/graph/graph.h"

namespace agate {
namespace onnx_frontend {

// True for the operators this file resolves: If, Loop, Scan.
bool IsControlFlow(const std::string& op_type);

// "" when the subgraphs of an If, Loop or Scan hold only supported nodes and the
// node's other attributes are understood, else why not.
std::string CheckControlFlow(const onnx::NodeProto& proto, int opset, const std::string& base_dir);

// Imports an If, Loop or Scan (`node` is its translation) into `result`: the taken branch, or
// the unrolled body. Throws kUnsupported when a condition or trip count is not a constant.
void ImportControlFlow(const onnx::NodeProto& proto, const graph::Node& node, int opset, const std::string& base_dir,
                       graph::Graph* result);

}  // namespace onnx_frontend
}  // namespace agate

#endif  // AGATE_FRONTENDS_ONNX_CONTROL_FLOW_H_
