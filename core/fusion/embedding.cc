#include "core/fusion/embedding.h"

#include <algorithm>
#include <cmath>

#include "core/support/error.h"

namespace agate {
namespace fusion {
namespace {

using graph::OpKind;

constexpr int kShapeDims = 5;  // NCHW{c}c has five
const OpKind kKinds[] = {OpKind::kElemWise,  OpKind::kBroadcast,       OpKind::kInjective,
                         OpKind::kReduction, OpKind::kOutEWiseFusable, OpKind::kOpaque};

float Log2p1(double x) { return static_cast<float>(std::log2(1.0 + std::max(0.0, x))); }

// A kind as a number in [0, 1] (opaque 1), for "most complex neighbour".
float KindLevel(OpKind kind) { return kind == OpKind::kOpaque ? 1.0f : static_cast<float>(kind) / 5.0f; }

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

}  // namespace

const std::vector<std::string>& EmbeddingOpVocabulary() {
  static const std::vector<std::string> vocabulary = {
      "Conv", "MatMul", "Gemm", "Add", "Mul", "Sub", "Div", "Relu", "Clip", "Sigmoid", "HardSwish", "HardSigmoid",
      "Gelu", "Erf", "MaxPool", "AveragePool", "GlobalAveragePool", "Concat", "Reshape", "Transpose", "Flatten",
      "Slice", "Softmax", "Attention", "LayerNormalization", "ReduceMean", "LayoutTransform", "Pad"};
  return vocabulary;
}

std::vector<std::string> OperatorFeatureNames() {
  std::vector<std::string> names;
  for (const std::string& op : EmbeddingOpVocabulary()) names.push_back("op=" + op);
  names.push_back("op=other");
  for (OpKind kind : kKinds) names.push_back(std::string("kind=") + graph::OpKindName(kind));
  names.push_back("out_rank");
  for (int d = 0; d < kShapeDims; ++d) names.push_back("out_log2_d" + std::to_string(d));
  names.push_back("out_log2_numel");
  names.push_back("in0_log2_numel");
  names.push_back("in_log2_total_numel");
  names.push_back("inputs");
  names.push_back("float32");
  names.push_back("window_log2");
  names.push_back("stride");
  names.push_back("grouped");
  names.push_back("depthwise");
  names.push_back("producers");
  names.push_back("consumers");
  names.push_back("producer_kind_max");
  names.push_back("consumer_kind_max");
  names.push_back("feeds_output");
  return names;
}

int OperatorFeatureCount() {
  static const int count = static_cast<int>(OperatorFeatureNames().size());
  return count;
}

std::vector<float> OperatorFeatures(const graph::Graph& graph, const NodeGraph& nodes, int index) {
  AGATE_REQUIRE(index >= 0 && index < static_cast<int>(graph.nodes.size()), kOutOfRange)
      << "operator features: node " << index << " of " << graph.nodes.size();
  const graph::Node& node = graph.nodes[index];
  std::vector<float> f;
  f.reserve(OperatorFeatureCount());
  const std::vector<std::string>& vocabulary = EmbeddingOpVocabulary();
  auto it = std::find(vocabulary.begin(), vocabulary.end(), node.op);
  for (const std::string& op : vocabulary) f.push_back(op == node.op ? 1.0f : 0.0f);
  f.push_back(it == vocabulary.end() ? 1.0f : 0.0f);
  for (OpKind kind : kKinds) f.push_back(nodes.kinds[index] == kind ? 1.0f : 0.0f);

  const graph::TensorType& out = graph.TypeOf(node.outputs.at(0));
  f.push_back(static_cast<float>(out.rank()));
  // Trailing dimensions aligned right (the innermost is the last slot), padded with 1s on the left.
  for (int d = 0; d < kShapeDims; ++d) {
    int src = out.rank() - kShapeDims + d;
    f.push_back(src >= 0 ? Log2p1(static_cast<double>(out.shape[src])) - 1.0f : 0.0f);
  }
  f.push_back(Log2p1(static_cast<double>(out.numel())));
  int64_t in0 = 0, total = 0;
  int inputs = 0;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i].empty()) continue;
    int64_t n = graph.TypeOf(node.inputs[i]).numel();
    if (i == 0) in0 = n;
    total += n;
    ++inputs;
  }
  f.push_back(Log2p1(static_cast<double>(in0)));
  f.push_back(Log2p1(static_cast<double>(total)));
  f.push_back(static_cast<float>(inputs));
  f.push_back(out.dtype == ir::DType::Float(32) ? 1.0f : 0.0f);

  // Window, stride and groups: Conv's from its weights and attributes, pools' from kernel_shape.
  int64_t window = 1, stride = 1, groups = node.attrs.GetInt("group", 1);
  if (node.attrs.Has("kernel_shape")) window = Product(node.attrs.GetInts("kernel_shape"));
  if (node.op == "Conv" && node.inputs.size() > 1) {
    const graph::Shape& w = graph.TypeOf(node.inputs[1]).shape;
    // OIHW, or the blocked layout's OIHW{i}i{o}o: the spatial window is dims 2 and 3.
    if (w.size() >= 4) window = w[2] * w[3];
  }
  if (node.attrs.Has("strides"))
    for (int64_t s : node.attrs.GetInts("strides")) stride = std::max(stride, s);
  bool depthwise = false;
  if (node.op == "Conv" && groups > 1) {
    const graph::Shape& x = graph.TypeOf(node.inputs[0]).shape;
    int64_t channels = x.size() == 5 ? x[1] * x[4] : (x.size() >= 2 ? x[1] : 0);
    depthwise = groups == channels;
  }
  f.push_back(Log2p1(static_cast<double>(window)));
  f.push_back(static_cast<float>(stride));
  f.push_back(groups > 1 ? 1.0f : 0.0f);
  f.push_back(depthwise ? 1.0f : 0.0f);

  float producer_max = 0, consumer_max = 0;
  for (int p : nodes.producers[index]) producer_max = std::max(producer_max, KindLevel(nodes.kinds[p]));
  for (int c : nodes.consumers[index]) consumer_max = std::max(consumer_max, KindLevel(nodes.kinds[c]));
  f.push_back(static_cast<float>(nodes.producers[index].size()));
  f.push_back(static_cast<float>(nodes.consumers[index].size()));
  f.push_back(producer_max);
  f.push_back(consumer_max);
  f.push_back(nodes.feeds_output[index] ? 1.0f : 0.0f);
  AGATE_CHECK(static_cast<int>(f.size()) == OperatorFeatureCount()) << "operator features: " << f.size();
  return f;
}

std::vector<float> DenseNet::Evaluate(const std::vector<float>& input) const {
  AGATE_REQUIRE(static_cast<int>(input.size()) == input_width(), kInvalidArgument)
      << "dense network: input of " << input.size() << " values, expected " << input_width();
  std::vector<float> x = input;
  for (const DenseLayer& layer : layers) {
    std::vector<float> y(layer.out);
    for (int o = 0; o < layer.out; ++o) {
      double sum = layer.bias[o];
      const float* row = &layer.weights[static_cast<size_t>(o) * layer.in];
      for (int i = 0; i < layer.in; ++i) sum += static_cast<double>(row[i]) * x[i];
      switch (layer.activation) {
        case DenseLayer::Activation::kLinear: y[o] = static_cast<float>(sum); break;
        case DenseLayer::Activation::kTanh: y[o] = static_cast<float>(std::tanh(sum)); break;
        case DenseLayer::Activation::kRelu: y[o] = static_cast<float>(std::max(0.0, sum)); break;
      }
    }
    x = std::move(y);
  }
  return x;
}

}  // namespace fusion
}  // namespace agate
