// Convolution-into-convolution fusion: which producer conv may be computed
// inside its consumer conv's kernel.
//
// Why a separate concept: one kernel normally has one scheduled anchor
// (core/ops/lower_group.h); a second conv in the same group would be an
// unscheduled serial loop nest. One form is lowered well as one kernel
// (core/ops/fused_conv_chain.h): a depthwise conv in NCHW<c>c (plus its
// elementwise epilogue, e.g. bias + ReLU6) feeding a pointwise 1x1 conv that
// reads the same channel blocks, the second half of an inverted-residual
// block (MobileNetV2/V3, EfficientNet, MnasNet). The pointwise conv is the
// scheduled anchor and the depthwise output row it needs (all channels) is
// computed into a small local buffer at its row loop, so the intermediate
// never goes to memory. The fusion policies (`all`, the adaptive walk) may
// join two convs only when this predicate holds, and LowerGroup lowers a group
// with two convs this way only when it holds: both sides use this one check.
#ifndef AGATE_CORE_FUSION_CONV_CHAIN_H_
#define AGATE_CORE_FUSION_CONV_CHAIN_H_

#include <vector>

#include "core/graph/graph.h"

namespace agate {
namespace fusion {

// A lowerable chain: producer conv -> path (elementwise epilogue nodes, in
// order) -> consumer conv, which reads the last value of the path (or the
// producer's output when the path is empty) as its input 0.
struct ConvChain {
  int producer = -1;
  int consumer = -1;
  std::vector<int> path;
  bool found() const { return producer >= 0; }
};

// The chain from node `producer` to node `consumer` when the pair is a
// lowerable form: the producer a float32 depthwise 2-D Conv in NCHW<c>c
// (channel multiplier 1, constant weights, any stride/padding/dilation), the
// consumer a float32 group-1 1x1 Conv (stride 1, no padding, constant weights)
// whose input block is the producer's; between them at most kMaxPath
// elementwise/broadcast nodes that keep the producer's output shape, each
// value read by exactly one node and none a graph output (the intermediate is
// never materialized). Otherwise an empty chain.
ConvChain FindConvChain(const graph::Graph& graph, int producer, int consumer);

// The chain inside a group (node indices): the group's only two anchors
// (reduction or complex ops) when they form a lowerable chain whose path lies
// in the group; otherwise an empty chain.
ConvChain FindConvChainIn(const graph::Graph& graph, const std::vector<int>& group);

constexpr int kMaxConvChainPath = 4;

}  // namespace fusion
}  // namespace agate

#endif  // AGATE_CORE_FUSION_CONV_CHAIN_H_
