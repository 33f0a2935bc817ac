// Operator embedding: a fixed-length description of one graph operator in its
// context, the input of adaptive fusion's learned policy (adaptive_fusion.h).
//
// Why: a policy trained on some models must generalize to others, so it sees
// operators through what makes fusion pay off or not, not through their names
// in one model: the op (one-hot over a vocabulary, plus its OpKind), its output
// and input sizes (log2-scaled, so a 7x7 and a 56x56 map are a few units apart,
// not a factor of 64), its dtype, the attributes that change its cost (kernel
// window, stride, groups, depthwise) and its neighbours (how many producers and
// consumers, their most complex kinds, whether it feeds a graph output).
// OperatorFeatures gives the raw vector (kOperatorFeatures floats, named by
// OperatorFeatureNames); an autoencoder trained offline (tools/fusion) compresses
// it, and its encoder, a few dense layers, runs here in C++ (DenseNet): no
// deep-learning library at compile time.
#ifndef AGATE_CORE_FUSION_EMBEDDING_H_
#define AGATE_CORE_FUSION_EMBEDDING_H_

#include <string>
#include <vector>

#include "core/fusion/node_graph.h"
#include "core/graph/graph.h"

namespace agate {
namespace fusion {

// The ops with a one-hot slot of their own; any other op sets the "other" slot.
const std::vector<std::string>& EmbeddingOpVocabulary();

// Number of raw features per operator (the encoder's input width).
int OperatorFeatureCount();
// One name per raw feature, in order ("op=Conv", "kind=injective", "out_log2_d1", ...).
std::vector<std::string> OperatorFeatureNames();
// The raw features of graph.nodes[node] (OperatorFeatureCount() floats).
std::vector<float> OperatorFeatures(const graph::Graph& graph, const NodeGraph& nodes, int node);

// One dense layer: y = act(W x + b), W row-major [out][in].
struct DenseLayer {
  enum class Activation { kLinear, kTanh, kRelu };
  int in = 0, out = 0;
  std::vector<float> weights;  // out * in
  std::vector<float> bias;     // out
  Activation activation = Activation::kLinear;
};

// A stack of dense layers (the encoder, the Q network). Evaluate checks the width.
struct DenseNet {
  std::vector<DenseLayer> layers;
  int input_width() const { return layers.empty() ? 0 : layers.front().in; }
  int output_width() const { return layers.empty() ? 0 : layers.back().out; }
  std::vector<float> Evaluate(const std::vector<float>& input) const;
};

}  // namespace fusion
}  // namespace agate

#endif  // AGATE_CORE_FUSION_EMBEDDING_H_
