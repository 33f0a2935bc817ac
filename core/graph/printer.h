// Text form of the graph IR, for --dump-ir, error reports and tests.
//
// Why a printer: every IR in agate has one, so a pass's effect is visible as a
// diff of two texts. The form is stable (constants sorted by name, attributes by
// name) so tests may compare it.
#ifndef AGATE_CORE_GRAPH_PRINTER_H_
#define AGATE_CORE_GRAPH_PRINTER_H_

#include <string>

#include "core/graph/graph.h"

namespace agate {
namespace graph {

// Prints the whole graph: signature, constants (values of small ones), nodes,
// fused groups and the memory plan when present.
std::string PrintGraph(const Graph& graph);

// One node: "%y: float32[1,8] = Relu(%x)  # relu0".
std::string PrintNode(const Graph& graph, const Node& node);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_PRINTER_H_
