#include "core/quantize/insert_qdq.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "core/graph/op_registry.h"
#include "core/graph/passes/rewrite.h"
#include "core/graph/shape_inference.h"
#include "core/support/error.h"

namespace agate {
namespace quantize {

using graph::DType;
using graph::Graph;
using graph::Node;
using graph::Shape;
using graph::Tensor;

std::string QuantizeReport::Summary() const {
  std::ostringstream os;
  os << quantized.size() << " of " << candidates
     << " Conv/MatMul/Gemm nodes int8 (weights int8 symmetric per output channel, activations uint8 per tensor, "
        "bias int32)";
  if (!kept_float.empty()) {
    os << "; kept float:";
    for (size_t i = 0; i < kept_float.size(); ++i) os << (i ? "; " : " ") << kept_float[i];
  }
  return os.str();
}

void CheckKeepFloat(const Graph& graph, const std::vector<std::string>& keep_float) {
  std::set<std::string> names;
  for (const Node& n : graph.nodes) names.insert(n.name);
  for (const std::string& k : keep_float) {
    AGATE_REQUIRE(!k.empty(), kInvalidArgument) << "--keep-float: an empty name (expected op types or node names, "
                                                << "comma-separated, e.g. Softmax,LayerNormalization)";
    AGATE_REQUIRE(names.count(k) || graph::OpRegistry::Global().Find(k) != nullptr, kInvalidArgument)
        << "--keep-float '" << k << "': no node of the model is named so and no operator type is called so";
  }
}

ActivationParams ActivationParamsOf(const ValueRange& range) {
  double lo = std::min(range.min, 0.0), hi = std::max(range.max, 0.0);
  ActivationParams p;
  p.scale = static_cast<float>((hi - lo) / 255.0);
  if (!(p.scale > 0) || !std::isfinite(p.scale)) {
    // Always 0 (or a range too narrow for a float scale): any positive scale represents it.
    p.scale = 1;
    p.zero_point = 0;
    return p;
  }
  p.zero_point = static_cast<int>(std::min(255.0, std::max(0.0, std::nearbyint(-lo / p.scale))));
  return p;
}

namespace {

bool IsFloat32(const Graph& g, const std::string& v) {
  return !v.empty() && g.HasValue(v) && g.TypeOf(v).dtype == DType::Float(32);
}

// What the pass does to one Conv/MatMul/Gemm.
struct Plan {
  const Node* node = nullptr;
  std::string input;    // the activation quantized before it
  std::string output;   // the value quantized after it (its result, or its Relu/Clip's)
  int weight_axis = 0;  // the output-channel axis of the weight
};

class Inserter {
 public:
  Inserter(const Graph& graph, const std::map<std::string, ValueRange>& ranges,
           const std::vector<std::string>& keep_float, QuantizeReport* report)
      : graph_(graph), ranges_(ranges), keep_(keep_float.begin(), keep_float.end()), report_(report) {
    for (const auto& [v, t] : graph.types) used_.insert(v);
    for (const Node& n : graph.nodes) used_.insert(n.name);
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      for (const std::string& o : graph.nodes[i].outputs) producer_[o] = &graph.nodes[i];
      for (const std::string& in : graph.nodes[i].inputs) {
        auto& readers = readers_[in];
        if (readers.empty() || readers.back() != &graph.nodes[i]) readers.push_back(&graph.nodes[i]);
      }
    }
  }

  Graph Run() {
    for (const Node& node : graph_.nodes) {
      if (node.op != "Conv" && node.op != "MatMul" && node.op != "Gemm") continue;
      report_->candidates += 1;
      if (Kept(node)) {
        report_->kept_float.push_back(node.Describe() + ": --keep-float");
        continue;
      }
      Plan plan;
      std::string why = PlanFor(node, &plan);
      if (!why.empty()) {
        report_->kept_float.push_back(node.Describe() + ": " + why);
        continue;
      }
      plans_[&node] = plan;
      quantized_values_.insert(plan.input);
      quantized_values_.insert(plan.output);
      results_.insert(plan.output);
      report_->quantized.push_back(node.Describe());
    }
    return Build();
  }

 private:
  bool Kept(const Node& node) const { return keep_.count(node.name) || keep_.count(node.op); }

  const std::vector<const Node*>& Readers(const std::string& value) const {
    static const std::vector<const Node*> none;
    auto it = readers_.find(value);
    return it == readers_.end() ? none : it->second;
  }

  std::string Fresh(const std::string& base) {
    std::string name = base;
    for (int i = 1; used_.count(name); ++i) name = base + "_" + std::to_string(i);
    used_.insert(name);
    return name;
  }

  // Why `node` cannot be quantized ("" when it can), and what to do when it can.
  std::string PlanFor(const Node& node, Plan* plan) const {
    if (node.inputs.size() < 2) return "fewer than two inputs";
    const std::string& x = node.inputs[0];
    const std::string& w = node.inputs[1];
    if (!IsFloat32(graph_, x) || graph_.IsConstant(x)) return "its input '" + x + "' is not a float32 activation";
    if (!IsFloat32(graph_, w) || !graph_.IsConstant(w)) return "its weight '" + w + "' is not a float32 constant";
    const Shape& ws = graph_.TypeOf(w).shape;
    if (node.op == "Conv") {
      if (ws.size() < 3) return "its weight is not a convolution kernel";
      plan->weight_axis = 0;
    } else if (node.op == "MatMul") {
      if (ws.size() != 2 || graph_.TypeOf(x).rank() < 2) return "not a product of activations by a weight matrix";
      plan->weight_axis = 1;
    } else {
      if (node.attrs.GetInt("transA", 0) != 0 || node.attrs.GetFloat("alpha", 1.0) != 1.0 ||
          node.attrs.GetFloat("beta", 1.0) != 1.0)
        return "Gemm with transA, alpha or beta (not an integer operator)";
      if (ws.size() != 2 || graph_.TypeOf(x).rank() != 2) return "Gemm operands are not matrices";
      plan->weight_axis = node.attrs.GetInt("transB", 0) != 0 ? 0 : 1;
    }
    int64_t channels = ws[plan->weight_axis];
    if (node.op != "MatMul" && node.inputs.size() > 2 && !node.inputs[2].empty()) {
      const std::string& b = node.inputs[2];
      if (!IsFloat32(graph_, b) || !graph_.IsConstant(b) || graph_.TypeOf(b).numel() != channels)
        return "its bias '" + b + "' is not a float32 constant of " + std::to_string(channels) + " values";
    }
    if (!ranges_.count(x)) return "no calibrated range for its input '" + x + "'";
    // Its result, or the result of a Relu/Clip that alone reads it.
    std::string y = node.outputs[0];
    const std::vector<const Node*>& readers = Readers(y);
    if (readers.size() == 1 && !graph_.IsGraphOutput(y) && !Kept(*readers[0]) &&
        (readers[0]->op == "Relu" || readers[0]->op == "Clip") && ActivationBoundsConstant(*readers[0])) {
      y = readers[0]->outputs[0];
    }
    if (!ranges_.count(y)) return "no calibrated range for its result '" + y + "'";
    plan->node = &node;
    plan->input = x;
    plan->output = y;
    return "";
  }

  bool ActivationBoundsConstant(const Node& act) const {
    for (size_t i = 1; i < act.inputs.size(); ++i) {
      if (!act.inputs[i].empty() && !graph_.IsConstant(act.inputs[i])) return false;
    }
    return true;
  }

  // QuantizeLinear(value) -> DequantizeLinear, appended to `out`; returns the dequantized name.
  // For a graph output produced by a node, `source` is the node's renamed output and the
  // DequantizeLinear writes `value` itself.
  std::string AddPair(const std::string& value, const std::string& source, bool writes_value,
                      std::vector<Node>* out) {
    ActivationParams p = ActivationParamsOf(ranges_.at(value));
    std::string scale = Fresh(value + "_scale");
    std::string zero = Fresh(value + "_zero_point");
    constants_[scale] = Tensor::FromDoubles(DType::Float(32), {}, {p.scale});
    constants_[zero] = Tensor::FromInts(DType::UInt(8), {}, {p.zero_point});
    Node q;
    q.op = "QuantizeLinear";
    q.name = Fresh(value + "_quantize");
    q.inputs = {source, scale, zero};
    q.outputs = {Fresh(value + "_quantized")};
    Node dq;
    dq.op = "DequantizeLinear";
    dq.name = Fresh(value + "_dequantize");
    dq.inputs = {q.outputs[0], scale, zero};
    dq.outputs = {writes_value ? value : Fresh(value + "_dequantized")};
    out->push_back(q);
    out->push_back(dq);
    return dq.outputs[0];
  }

  // DequantizeLinear of the per-channel int8 weight; returns its output. Fills the weight scales.
  std::string QuantizeWeight(const Node& node, int axis, std::vector<float>* scales, std::vector<Node>* out) {
    const Tensor& w = graph_.ConstantOf(node.inputs[1]);
    const Shape& shape = w.shape();
    int64_t channels = shape[axis];
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; ++i) outer *= shape[i];
    for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
    std::vector<double> max_abs(channels, 0.0);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t i = 0; i < inner; ++i)
          max_abs[c] = std::max(max_abs[c], std::fabs(w.GetDouble((o * channels + c) * inner + i)));
    scales->assign(channels, 1.0f);
    for (int64_t c = 0; c < channels; ++c) {
      float s = static_cast<float>(max_abs[c] / 127.0);
      if (s > 0 && std::isfinite(s)) (*scales)[c] = s;  // an all-zero channel: any positive scale
    }
    Tensor q(DType::Int(8), shape);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t i = 0; i < inner; ++i) {
          int64_t at = (o * channels + c) * inner + i;
          double v = std::nearbyint(w.GetDouble(at) / (*scales)[c]);
          q.SetInt(at, static_cast<int64_t>(std::min(127.0, std::max(-127.0, v))));
        }
    const std::string& base = node.inputs[1];
    std::string data = Fresh(base + "_int8"), scale = Fresh(base + "_scale"), zero = Fresh(base + "_zero_point");
    constants_[data] = q;
    constants_[scale] = Tensor::FromDoubles(DType::Float(32), {channels}, std::vector<double>(scales->begin(), scales->end()));
    constants_[zero] = Tensor(DType::Int(8), {channels});
    Node dq;
    dq.op = "DequantizeLinear";
    dq.name = Fresh(base + "_dequantize");
    dq.inputs = {data, scale, zero};
    dq.outputs = {Fresh(base + "_dequantized")};
    dq.attrs.Set("axis", int64_t{axis});
    out->push_back(dq);
    return dq.outputs[0];
  }

  // DequantizeLinear of the int32 bias at input_scale x weight_scale[c], or the float bias when a
  // value overflows int32 at that scale (the folding pass then says so and keeps the node float).
  std::string QuantizeBias(const std::string& bias, float input_scale, const std::vector<float>& scales,
                           std::vector<Node>* out) {
    const Tensor& b = graph_.ConstantOf(bias);
    int64_t channels = static_cast<int64_t>(scales.size());
    Tensor q(DType::Int(32), {channels});
    std::vector<double> bias_scales(channels);
    for (int64_t c = 0; c < channels; ++c) {
      bias_scales[c] = static_cast<float>(static_cast<double>(input_scale) * scales[c]);
      double v = std::nearbyint(b.GetDouble(c) / bias_scales[c]);
      if (!(std::fabs(v) <= 2147483647.0)) return bias;
      q.SetInt(c, static_cast<int64_t>(v));
    }
    std::string data = Fresh(bias + "_int32"), scale = Fresh(bias + "_scale"), zero = Fresh(bias + "_zero_point");
    constants_[data] = q;
    constants_[scale] = Tensor::FromDoubles(DType::Float(32), {channels}, bias_scales);
    constants_[zero] = Tensor(DType::Int(32), {channels});
    Node dq;
    dq.op = "DequantizeLinear";
    dq.name = Fresh(bias + "_dequantize");
    dq.inputs = {data, scale, zero};
    dq.outputs = {Fresh(bias + "_dequantized")};
    dq.attrs.Set("axis", int64_t{0});
    out->push_back(dq);
    return dq.outputs[0];
  }

  // Emits the pair of a quantized value right after it is defined; readers not kept in float read
  // the dequantized value (through `renamed_`).
  void EmitPairFor(const std::string& value, std::vector<Node>* out) {
    if (graph_.IsGraphOutput(value) && producer_.count(value)) {
      // The producer's output was renamed (source_of_); the DequantizeLinear writes the output.
      AddPair(value, source_of_.at(value), true, out);
      return;
    }
    renamed_[value] = AddPair(value, value, false, out);
  }

  Graph Build() {
    Graph g = graph::WithoutNodes(graph_);
    std::vector<Node> nodes;
    for (const std::string& v : quantized_values_) {
      if (graph_.IsGraphOutput(v) && producer_.count(v)) source_of_[v] = Fresh(v + "_float");
    }
    for (const std::string& in : graph_.inputs) {
      if (quantized_values_.count(in)) EmitPairFor(in, &nodes);
    }
    for (const Node& original : graph_.nodes) {
      Node node = original;
      // A node kept in float reads a quantized node's result dequantized (that result has one
      // reader, the QuantizeLinear, or it would not fold), and any other value unquantized.
      for (std::string& in : node.inputs) {
        auto it = renamed_.find(in);
        if (it != renamed_.end() && (!Kept(node) || results_.count(in))) in = it->second;
      }
      auto plan = plans_.find(&original);
      if (plan != plans_.end()) {
        std::vector<float> w_scales;
        node.inputs[1] = QuantizeWeight(original, plan->second.weight_axis, &w_scales, &nodes);
        if (node.op != "MatMul" && node.inputs.size() > 2 && !node.inputs[2].empty()) {
          float x_scale = ActivationParamsOf(ranges_.at(plan->second.input)).scale;
          node.inputs[2] = QuantizeBias(original.inputs[2], x_scale, w_scales, &nodes);
        }
      }
      for (std::string& o : node.outputs) {
        auto it = source_of_.find(o);
        if (it != source_of_.end()) o = it->second;
      }
      nodes.push_back(node);
      for (const std::string& o : original.outputs) {
        if (quantized_values_.count(o)) EmitPairFor(o, &nodes);
      }
    }
    g.nodes = std::move(nodes);
    for (auto& [name, t] : constants_) g.AddConstant(name, t);
    graph::DropUnusedValues(&g);
    g = graph::InferShapes(g);
    g.Verify();
    return g;
  }

  const Graph& graph_;
  const std::map<std::string, ValueRange>& ranges_;
  std::set<std::string> keep_;
  QuantizeReport* report_;
  std::set<std::string> used_;
  std::map<std::string, const Node*> producer_;
  std::map<std::string, std::vector<const Node*>> readers_;
  std::map<const Node*, Plan> plans_;
  std::set<std::string> quantized_values_;
  std::set<std::string> results_;                 // the quantized values that are a planned node's result
  std::map<std::string, std::string> renamed_;    // quantized value -> its dequantized copy
  std::map<std::string, std::string> source_of_;  // quantized graph output -> its producer's float result
  std::map<std::string, Tensor> constants_;
};

}  // namespace

Graph InsertQDQ(const Graph& graph, const std::map<std::string, ValueRange>& ranges,
                const std::vector<std::string>& keep_float, QuantizeReport* report) {
  QuantizeReport local;
  return Inserter(graph, ranges, keep_float, report ? report : &local).Run();
}

}  // namespace quantize
}  // namespace agate
