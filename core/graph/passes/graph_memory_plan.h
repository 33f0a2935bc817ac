// The graph-level memory plan (static): every intermediate tensor gets an offset in one
// arena, and tensors whose lifetimes do not overlap share bytes.
//
// Why: a compiled module should allocate once. Execution order is fixed (the
// fused groups in order, or the nodes when fusion has not run), so each
// intermediate's lifetime is known at compile time: from the step that writes
// it to the last step that reads it. Values inside a fused group never touch
// memory and are not planned; graph inputs, outputs and constants live outside
// the arena. Placement is greedy by size (largest first, lowest offset that
// fits beside every overlapping tensor), 64-byte aligned.
#ifndef AGATE_CORE_GRAPH_PASSES_GRAPH_MEMORY_PLAN_H_
#define AGATE_CORE_GRAPH_PASSES_GRAPH_MEMORY_PLAN_H_

#include "core/graph/graph.h"

namespace agate {
namespace graph {

// The graph with memory_plan filled: arena_bytes (the peak) against
// total_intermediate_bytes (one buffer per intermediate).
Graph PlanGraphMemory(const Graph& graph);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_PASSES_GRAPH_MEMORY_PLAN_H_
