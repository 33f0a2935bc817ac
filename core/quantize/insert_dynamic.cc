#include "core/quantize/insert_dynamic.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

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

namespace {

bool IsFloat32(const Graph& g, const std::string& v) {
  return !v.empty() && g.HasValue(v) && g.TypeOf(v).dtype == DType::Float(32);
}

class DynamicInserter {
 public:
  DynamicInserter(const Graph& graph, const std::vector<std::string>& keep_float, QuantizeReport* report)
      : graph_(graph), keep_(keep_float.begin(), keep_float.end()), report_(report) {
    for (const auto& [v, t] : graph.types) used_.insert(v);
    for (const Node& n : graph.nodes) used_.insert(n.name);
  }

  Graph Run() {
    Graph g = graph::WithoutNodes(graph_);
    std::vector<Node> nodes;
    for (const Node& node : graph_.nodes) {
      if (node.op != "MatMul" && node.op != "Gemm") {
        nodes.push_back(node);
        continue;
      }
      report_->candidates += 1;
      std::string why = keep_.count(node.name) || keep_.count(node.op) ? "--keep-float" : WhyNot(node);
      if (!why.empty()) {
        report_->kept_float.push_back(node.Describe() + ": " + why);
        nodes.push_back(node);
        continue;
      }
      Rewrite(node, &nodes);
      report_->quantized.push_back(node.Describe());
    }
    g.nodes = std::move(nodes);
    for (auto& [name, t] : constants_) g.AddConstant(name, t);
    graph::DropUnusedValues(&g);
    g = graph::InferShapes(g);
    g.Verify();
    return g;
  }

 private:
  std::string Fresh(const std::string& base) {
    std::string name = base;
    for (int i = 1; used_.count(name); ++i) name = base + "_" + std::to_string(i);
    used_.insert(name);
    return name;
  }

  // Why `node` stays float ("" when it is rewritten).
  std::string WhyNot(const Node& node) const {
    if (node.inputs.size() < 2) return "fewer than two inputs";
    const std::string &x = node.inputs[0], &w = node.inputs[1];
    if (!IsFloat32(graph_, x) || graph_.IsConstant(x)) return "its input '" + x + "' is not a float32 activation";
    if (!IsFloat32(graph_, w) || !graph_.IsConstant(w)) return "its weight '" + w + "' is not a float32 constant";
    if (graph_.TypeOf(w).shape.size() != 2) return "its weight is not a matrix";
    if (node.op == "MatMul") return graph_.TypeOf(x).rank() >= 2 ? "" : "a vector times a matrix";
    if (node.attrs.GetInt("transA", 0) != 0 || node.attrs.GetFloat("alpha", 1.0) != 1.0 ||
        node.attrs.GetFloat("beta", 1.0) != 1.0)
      return "Gemm with transA, alpha or beta";
    if (graph_.TypeOf(x).rank() != 2) return "Gemm operands are not matrices";
    if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
      const std::string& b = node.inputs[2];
      int64_t n = graph_.TypeOf(w).shape[node.attrs.GetInt("transB", 0) != 0 ? 0 : 1];
      if (!IsFloat32(graph_, b) || !graph_.IsConstant(b) || graph_.TypeOf(b).numel() != n)
        return "its bias '" + b + "' is not a float32 constant of " + std::to_string(n) + " values";
    }
    return "";
  }

  // The int8 weight [K, N] (transposed from a Gemm's transB [N, K]), its per-column scales and zero
  // points (constants); returns their names.
  std::vector<std::string> QuantizeWeight(const std::string& name, bool transposed) {
    const Tensor& w = graph_.ConstantOf(name);
    int64_t k = w.shape()[transposed ? 1 : 0], n = w.shape()[transposed ? 0 : 1];
    auto at = [&](int64_t r, int64_t c) { return w.GetDouble(transposed ? c * k + r : r * n + c); };
    std::vector<double> scales(n, 1.0);
    for (int64_t c = 0; c < n; ++c) {
      double max_abs = 0;
      for (int64_t r = 0; r < k; ++r) max_abs = std::max(max_abs, std::fabs(at(r, c)));
      float s = static_cast<float>(max_abs / 127.0);
      if (s > 0 && std::isfinite(s)) scales[c] = s;  // an all-zero column: any positive scale
    }
    Tensor q(DType::Int(8), {k, n});
    for (int64_t r = 0; r < k; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double v = std::nearbyint(at(r, c) / static_cast<float>(scales[c]));
        q.SetInt(r * n + c, static_cast<int64_t>(std::min(127.0, std::max(-127.0, v))));
      }
    std::string data = Fresh(name + "_int8"), scale = Fresh(name + "_scale"), zero = Fresh(name + "_zero_point");
    constants_[data] = q;
    constants_[scale] = Tensor::FromDoubles(DType::Float(32), {n}, scales);
    constants_[zero] = Tensor(DType::Int(8), {n});
    return {data, scale, zero};
  }

  // DynamicQuantizeLinear of activation `x`, once per activation; returns (x_q, x_scale, x_zero_point).
  const std::vector<std::string>& Quantized(const std::string& x, std::vector<Node>* out) {
    auto it = quantized_.find(x);
    if (it != quantized_.end()) return it->second;
    Node q;
    q.op = "DynamicQuantizeLinear";
    q.name = Fresh(x + "_dynamic_quantize");
    q.inputs = {x};
    q.outputs = {Fresh(x + "_quantized"), Fresh(x + "_scale"), Fresh(x + "_zero_point")};
    out->push_back(q);
    return quantized_[x] = q.outputs;
  }

  void Rewrite(const Node& node, std::vector<Node>* out) {
    const std::vector<std::string>& xq = Quantized(node.inputs[0], out);
    bool transposed = node.op == "Gemm" && node.attrs.GetInt("transB", 0) != 0;
    std::vector<std::string> w = QuantizeWeight(node.inputs[1], transposed);
    const std::string& y = node.outputs[0];
    auto make = [&](const std::string& op, const std::string& what, std::vector<std::string> inputs,
                    const std::string& output) {
      Node n;
      n.op = op;
      n.name = Fresh(node.name + "_" + what);
      n.inputs = std::move(inputs);
      n.outputs = {output};
      return n;
    };
    std::string acc = Fresh(y + "_int32"), scales = Fresh(y + "_scales"), as_float = Fresh(y + "_float");
    out->push_back(make("MatMulInteger", "matmul_integer", {xq[0], w[0], xq[2], w[2]}, acc));
    out->push_back(make("Mul", "scales", {xq[1], w[1]}, scales));
    Node cast = make("Cast", "cast", {acc}, as_float);
    cast.attrs.Set("to", std::string("float32"));
    out->push_back(cast);
    bool bias = node.op == "Gemm" && node.inputs.size() > 2 && !node.inputs[2].empty();
    std::string scaled = bias ? Fresh(y + "_scaled") : y;
    out->push_back(make("Mul", "scale", {as_float, scales}, scaled));
    if (bias) out->push_back(make("Add", "bias", {scaled, node.inputs[2]}, y));
  }

  const Graph& graph_;
  std::set<std::string> keep_;
  QuantizeReport* report_;
  std::set<std::string> used_;
  std::map<std::string, std::vector<std::string>> quantized_;  // activation -> (x_q, x_scale, x_zero_point)
  std::map<std::string, Tensor> constants_;
};

}  // namespace

Graph InsertDynamicQuantization(const Graph& graph, const std::vector<std::string>& keep_float,
                                QuantizeReport* report) {
  QuantizeReport local;
  return DynamicInserter(graph, keep_float, report ? report : &local).Run();
}

}  // namespace quantize
}  // namespace agate
