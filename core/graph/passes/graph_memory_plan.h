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

// How buffers are placed in the arena.
enum class MemoryPlanPolicy {
  kGreedyBySize,  // largest first, ties in value-name order (the default)
  // For RAM-bound targets (--memory-plan min-peak): several placement orders (by size, by
  // first use, by lifetime, each with the others as tie-breaks) are tried and the smallest
  // arena is kept, so equal-sized tensors of a chain share two slots instead of three.
  kMinPeak,
};

// The graph with memory_plan filled: arena_bytes (the peak) against
// total_intermediate_bytes (one buffer per intermediate).
Graph PlanGraphMemory(const Graph& graph, MemoryPlanPolicy policy = MemoryPlanPolicy::kGreedyBySize);

// The least arena any placement needs: the most bytes (each buffer 64-byte aligned) live at
// one step. A plan's arena_bytes is at least this; min-peak plans often reach it.
int64_t ArenaLowerBound(const MemoryPlan& plan);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_PASSES_GRAPH_MEMORY_PLAN_H_
