// Test helpers for graph passes: count operators, and run a graph before and
// after a pass on the reference interpreter (core/graph_eval) with the same
// random inputs to check that the pass kept the graph's meaning.
#ifndef AGATE_CORE_GRAPH_PASSES_TESTING_REWRITE_CHECK_H_
#define AGATE_CORE_GRAPH_PASSES_TESTING_REWRITE_CHECK_H_

#include <cstdint>
#include <string>

#include "core/graph/graph.h"

namespace agate {
namespace graph {
namespace testing {

// Nodes of `op` in the graph.
int CountOps(const Graph& graph, const std::string& op);

// The largest |difference| between the outputs of `before` and `after` on the
// same random inputs (floats in [-1, 1), integers in [0, 2), bools); both graphs
// must have the same inputs and outputs. NaN in one output and not the other is infinity.
double OutputDifference(const Graph& before, const Graph& after, uint32_t seed = 7);

}  // namespace testing
}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_PASSES_TESTING_REWRITE_CHECK_H_
