// Dead code elimination: removes nodes whose outputs no graph output depends on,
// and constants nothing reads.
//
// Why: folding and simplification leave producers behind (the inner Reshape of a
// chain, a folded subgraph's inputs); removing them keeps fusion and memory
// planning from seeing work that never needs doing.
#ifndef AGATE_CORE_GRAPH_PASSES_DEAD_CODE_ELIMINATION_H_
#define AGATE_CORE_GRAPH_PASSES_DEAD_CODE_ELIMINATION_H_

#include "core/graph/graph.h"

namespace agate {
namespace graph {

Graph EliminateDeadCode(const Graph& graph);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_PASSES_DEAD_CODE_ELIMINATION_H_
