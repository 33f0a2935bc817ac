// Layout transformation: NCHW activations -> the channel-blocked NCHW{c}c layout
// (e.g. NCHW8c: [N, C/8, H, W, 8]) that CPU convolution kernels vectorize over.
//
// Why: a blocked layout puts `c` consecutive channels in one SIMD register for
// every spatial position; converting between layouts costs a full copy, so the
// pass converts whole regions: 2-D convs (group 1 and depthwise), pools, and
// elementwise ops whose operands are blocked, scalars or per-channel constants
// ([C,1,1], re-laid out as [1,C/c,1,1,c] at compile time) run blocked, and
// LayoutTransform nodes are inserted only where a region begins (an NCHW value
// enters) or ends (a blocked value reaches an NCHW-only consumer or a graph
// output). Weights stay OIHW (the operator library packs them).
//
// Block sizes: each value gets the largest of `block`, block/2 (down to 8) that
// divides its channels, and a conv may read one block and write another
// (data_layout / out_layout), so MobileNetV2's 24-channel layers stay in the
// region as NCHW8c between NCHW16c layers. A conv whose input channels no block
// divides (an RGB image) reads NCHW directly and writes blocked.
#ifndef AGATE_CORE_GRAPH_PASSES_LAYOUT_TRANSFORMATION_H_
#define AGATE_CORE_GRAPH_PASSES_LAYOUT_TRANSFORMATION_H_

#include "core/graph/graph.h"

namespace agate {
namespace graph {

// `block`: the preferred channels per block (e.g. 8 for AVX2 float32, 16 for
// AVX-512). Layers whose channels no candidate block divides stay NCHW.
Graph TransformLayout(const Graph& graph, int64_t block);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_PASSES_LAYOUT_TRANSFORMATION_H_
