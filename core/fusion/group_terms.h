// The explicit, shape-aware terms of adaptive fusion's cost model: what a
// candidate group costs beyond its operators' embeddings.
//
// Why explicit terms: whether fusing pays off depends on whether the group's
// working set fits the target's caches, whether its outer loops give every core
// work, and whether its innermost extent fills whole vectors; a model that must
// learn these from embeddings alone needs far more measurements. The cost model
// itself (an XGBoost regressor on log latency) is trained offline by
// tools/fusion/train_fusion.py, which gets these terms from tools/fusion's
// fusion_env; it is the DQN's reward during training, not used at compile time.
#ifndef AGATE_CORE_FUSION_GROUP_TERMS_H_
#define AGATE_CORE_FUSION_GROUP_TERMS_H_

#include <string>
#include <vector>

#include "core/fusion/node_graph.h"
#include "core/graph/graph.h"
#include "core/target/target.h"

namespace agate {
namespace fusion {

// One name per term, in the order GroupTerms returns them.
std::vector<std::string> GroupTermNames();

// The terms of the group made of `nodes` (any order, non-empty) on `target`:
// log2 bytes read from outside the group and written for use outside it, their
// sum over the L1/L2/L3 sizes (log2), log2 of the intermediates kept inside,
// log2 estimated flops, the outer parallel extent over the target's threads
// (log2, capped at 64 per thread), a ragged innermost extent (not a multiple of
// the float32 vector lanes), the node count and its number of anchors (0 or 1; 2 for a conv chain,
// conv_chain.h, whose inner bytes are then the intermediate the chain never writes).
std::vector<float> GroupTerms(const graph::Graph& graph, const NodeGraph& g, const std::vector<int>& nodes,
                              const target::Target& target);

}  // namespace fusion
}  // namespace agate

#endif  // AGATE_CORE_FUSION_GROUP_TERMS_H_
