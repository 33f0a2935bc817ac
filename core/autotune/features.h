// Features of a lowered kernel for the cost model: what the loop IR says about its speed.
//
// Why from the loop IR and not from the knob values: knobs mean different things for different
// operators, while loops, loads, stores and their annotations mean the same in every kernel.
// Features of the loop IR let one model rank configs of every task and carry what it learned
// from one task to the next (transfer), as the TVM paper's section 5 argues. What is extracted
// (a fixed-length vector, names in FeatureNames()):
//   - work: floating-point operations (lanes counted) executed, log2;
//   - memory: bytes loaded and stored (lanes x element size x trip count), log2, and the
//     arithmetic intensity (operations per byte);
//   - the parallel loop's extent (log2) and how many parallel loops there are;
//   - vectorization: the widest vector, the share of operations done in vectors;
//   - unrolling: stores per innermost loop body (an unrolled register tile has many);
//   - loop structure: number of loops, deepest nest, innermost extent (log2);
//   - local (register/stack tile) and workspace bytes, log2;
//   - per task of the parallel loop: bytes touched (log2) and that figure's cache level
//     (1: fits L1 = 48 KiB, 2: L2 = 1 MiB, 3: LLC = 32 MiB, 4: memory);
//   - for the two buffers with the most traffic: bytes touched (log2), reuse (log2 of the trip
//     count of the enclosing loops whose variable its index does not use: how often each
//     element is read again) and whether the innermost loop walks it contiguously.
// Loop extents that are not constants count as 1.
#ifndef AGATE_CORE_AUTOTUNE_FEATURES_H_
#define AGATE_CORE_AUTOTUNE_FEATURES_H_

#include <string>
#include <vector>

#include "core/ir/function.h"

namespace agate {
namespace autotune {

// Index of each feature in ExtractFeatures' vector.
enum Feature : int {
  kFlops = 0,           // log2(1 + float ops)
  kLoadBytes,           // log2(1 + bytes loaded)
  kStoreBytes,          // log2(1 + bytes stored)
  kIntensity,           // float ops / (bytes loaded + stored)
  kParallelExtent,      // log2(1 + extent of the outermost parallel loop)
  kParallelLoops,       // parallel loops
  kMaxLanes,            // widest vector (lanes) of a load, store or operation
  kVectorShare,         // share of float ops done in vectors of >1 lanes
  kStoresPerBody,       // stores per innermost loop body
  kLoops,               // For loops
  kMaxDepth,            // deepest loop nest
  kInnerExtent,         // log2(1 + mean extent of innermost loops)
  kLocalBytes,          // log2(1 + bytes of local allocations)
  kWorkspaceBytes,      // log2(1 + bytes of workspace allocations)
  kBytesPerTask,        // log2(1 + (bytes loaded + stored) / parallel extent)
  kCacheLevel,          // 1..4: the level kBytesPerTask fits in
  kBuffer0Bytes,        // the buffer with the most traffic: log2(1 + bytes)
  kBuffer0Reuse,        //   log2(reuse trip count)
  kBuffer0Contiguous,   //   1 when the innermost loop walks it with stride 1 (or vectors), else 0
  kBuffer1Bytes,        // the second one
  kBuffer1Reuse,
  kBuffer1Contiguous,
  kNumFeatures
};

std::vector<std::string> FeatureNames();

// The kNumFeatures features of a lowered kernel.
std::vector<float> ExtractFeatures(const ir::LoweredFunc& func);

}  // namespace autotune
}  // namespace agate

#endif  // AGATE_CORE_AUTOTUNE_FEATURES_H_
