#include "core/graph/passes/batchnorm_folding.h"

#include <cmath>
#include <set>

#include "core/graph/passes/dead_code_elimination.h"
#include "core/graph/passes/rewrite.h"

namespace agate {
namespace graph {
namespace {

bool AllConstant(const Graph& g, const Node& node, int first, int last) {
  for (int i = first; i <= last; ++i)
    if (i >= static_cast<int>(node.inputs.size()) || !g.IsConstant(node.inputs[i])) return false;
  return true;
}

// Per-channel scale s and shift t with BN(y) = s * y + t.
void BatchNormAffine(const Graph& g, const Node& bn, std::vector<double>* scale, std::vector<double>* shift) {
  double eps = bn.attrs.GetFloat("epsilon", 1e-5);
  const Tensor& gamma = g.ConstantOf(bn.inputs[1]);
  const Tensor& beta = g.ConstantOf(bn.inputs[2]);
  const Tensor& mean = g.ConstantOf(bn.inputs[3]);
  const Tensor& var = g.ConstantOf(bn.inputs[4]);
  for (int64_t c = 0; c < gamma.numel(); ++c) {
    double s = gamma.GetDouble(c) / std::sqrt(var.GetDouble(c) + eps);
    scale->push_back(s);
    shift->push_back(beta.GetDouble(c) - mean.GetDouble(c) * s);
  }
}

// Weight scaled along the output-channel axis: element i belongs to channel (i / inner) % channels.
Tensor ScaleWeight(const Tensor& w, const std::vector<double>& scale, int64_t inner) {
  Tensor out(w.dtype(), w.shape());
  int64_t channels = static_cast<int64_t>(scale.size());
  for (int64_t i = 0; i < w.numel(); ++i) out.SetDouble(i, w.GetDouble(i) * scale[(i / inner) % channels]);
  return out;
}

// The layer's bias after BN: b' = b * s + t.
Tensor FoldedBias(const Graph& g, const Node& layer, int bias_input, DType dtype, const std::vector<double>& scale,
                  const std::vector<double>& shift) {
  int64_t channels = static_cast<int64_t>(scale.size());
  Tensor bias(dtype, {channels});
  bool has_bias = bias_input < static_cast<int>(layer.inputs.size()) && !layer.inputs[bias_input].empty();
  for (int64_t c = 0; c < channels; ++c) {
    double b = has_bias ? g.ConstantOf(layer.inputs[bias_input]).GetDouble(c) : 0.0;
    bias.SetDouble(c, b * scale[c] + shift[c]);
  }
  return bias;
}

}  // namespace

Graph FoldBatchNorm(const Graph& graph) {
  Graph result = WithoutNodes(graph);
  std::map<std::string, int> producer;  // value -> index in result.nodes
  std::map<std::string, std::vector<int>> consumers = graph.Consumers();
  for (const Node& node : graph.nodes) {
    auto p = node.op == "BatchNormalization" ? producer.find(node.inputs[0]) : producer.end();
    bool folded = false;
    bool inference = node.outputs.size() == 1 && node.attrs.GetInt("training_mode", 0) == 0;
    if (p != producer.end() && inference && AllConstant(result, node, 1, 4) && consumers[node.inputs[0]].size() == 1 &&
        !graph.IsGraphOutput(node.inputs[0])) {
      Node& layer = result.nodes[p->second];
      std::vector<double> scale, shift;
      BatchNormAffine(result, node, &scale, &shift);
      int64_t channels = static_cast<int64_t>(scale.size());
      bool conv_ok = layer.op == "Conv" && layer.attrs.GetString("data_layout", "NCHW") == "NCHW" &&
                     AllConstant(result, layer, 1, 1) &&
                     (layer.inputs.size() < 3 || layer.inputs[2].empty() || AllConstant(result, layer, 2, 2));
      const Tensor* gemm_b = layer.op == "Gemm" && AllConstant(result, layer, 1, 1) ? &result.ConstantOf(layer.inputs[1])
                                                                                   : nullptr;
      bool gemm_ok = gemm_b != nullptr && result.TypeOf(layer.outputs[0]).shape[1] == channels &&
                     (layer.inputs.size() < 3 || layer.inputs[2].empty() ||
                      (AllConstant(result, layer, 2, 2) &&
                       (result.ConstantOf(layer.inputs[2]).numel() == 1 ||
                        (result.ConstantOf(layer.inputs[2]).numel() == channels &&
                         result.ConstantOf(layer.inputs[2]).shape().back() == channels))));
      bool matmul_ok = layer.op == "MatMul" && AllConstant(result, layer, 1, 1) &&
                       result.TypeOf(layer.inputs[0]).rank() == 2 && result.TypeOf(layer.inputs[1]).rank() == 2;
      if (conv_ok) {
        const Tensor& w = result.ConstantOf(layer.inputs[1]);
        std::string w_name = result.FreshName(layer.name + "_bn_weight");
        result.AddConstant(w_name, ScaleWeight(w, scale, w.numel() / w.shape()[0]));
        std::string b_name = result.FreshName(layer.name + "_bn_bias");
        result.AddConstant(b_name, FoldedBias(result, layer, 2, w.dtype(), scale, shift));
        layer.inputs.resize(3);
        layer.inputs[1] = w_name;
        layer.inputs[2] = b_name;
        folded = true;
      } else if (gemm_ok || matmul_ok) {
        // Dense: scale the weight's output columns; Gemm's alpha/beta are folded into the new weight and bias.
        const Tensor& w = result.ConstantOf(layer.inputs[1]);
        bool trans_b = layer.op == "Gemm" && layer.attrs.GetInt("transB", 0) != 0;
        double alpha = layer.op == "Gemm" ? layer.attrs.GetFloat("alpha", 1.0) : 1.0;
        double beta = layer.op == "Gemm" ? layer.attrs.GetFloat("beta", 1.0) : 1.0;
        Tensor scaled(w.dtype(), w.shape());
        int64_t cols = w.shape()[1];
        for (int64_t i = 0; i < w.numel(); ++i) {
          int64_t c = trans_b ? i / cols : i % cols;
          scaled.SetDouble(i, w.GetDouble(i) * scale[c] * alpha);
        }
        Tensor bias(w.dtype(), {channels});
        bool has_c = layer.inputs.size() >= 3 && !layer.inputs[2].empty();
        for (int64_t c = 0; c < channels; ++c) {
          double b = 0;
          if (has_c) {
            const Tensor& ct = result.ConstantOf(layer.inputs[2]);
            b = beta * ct.GetDouble(ct.numel() == 1 ? 0 : c);
          }
          bias.SetDouble(c, b * scale[c] + shift[c]);
        }
        std::string w_name = result.FreshName(layer.name + "_bn_weight");
        std::string b_name = result.FreshName(layer.name + "_bn_bias");
        result.AddConstant(w_name, scaled);
        result.AddConstant(b_name, bias);
        bool trans_a = layer.op == "Gemm" && layer.attrs.GetInt("transA", 0) != 0;
        layer.op = "Gemm";
        layer.attrs = Attributes();
        if (trans_a) layer.attrs.Set("transA", int64_t{1});
        if (trans_b) layer.attrs.Set("transB", int64_t{1});
        layer.inputs = {layer.inputs[0], w_name, b_name};
        folded = true;
      }
      if (folded) {
        // The layer now writes the batch norm's output directly.
        layer.outputs[0] = node.outputs[0];
        producer[node.outputs[0]] = p->second;
        continue;
      }
    }
    for (const std::string& out : node.outputs)
      if (!out.empty()) producer[out] = static_cast<int>(result.nodes.size());
    result.nodes.push_back(node);
  }
  return EliminateDeadCode(result);
}

}  // namespace graph
}  // namespace agate
