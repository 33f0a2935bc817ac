#include "core/graph/passes/quantize_dynamic.h"

#include <set>

#include "core/graph/passes/rewrite.h"
#include "core/graph/shape_inference.h"

namespace agate {
namespace graph {
namespace {

class Decomposer {
 public:
  explicit Decomposer(const Graph& graph) : graph_(graph) {
    for (const auto& [v, t] : graph.types) used_.insert(v);
    for (const Node& n : graph.nodes) used_.insert(n.name);
  }

  Graph Run() {
    bool any = false;
    for (const Node& n : graph_.nodes) any = any || n.op == "DynamicQuantizeLinear";
    if (!any) return graph_;
    Graph g = WithoutNodes(graph_);
    for (const Node& n : graph_.nodes) {
      if (n.op == "DynamicQuantizeLinear") {
        Expand(n, &g);
      } else {
        g.nodes.push_back(n);
      }
    }
    return InferShapes(g);
  }

 private:
  std::string Fresh(const std::string& base) {
    std::string name = base;
    for (int i = 1; used_.count(name); ++i) name = base + "_" + std::to_string(i);
    used_.insert(name);
    return name;
  }

  std::string Constant(Graph* g, const std::string& base, double value) {
    std::string name = Fresh(base);
    g->AddConstant(name, Tensor::Scalar(DType::Float(32), value));
    return name;
  }

  // Appends `op`(inputs) -> a fresh value (or `output`), named after the decomposed node.
  std::string Emit(Graph* g, const Node& from, const std::string& op, std::vector<std::string> inputs,
                   const std::string& output = "", Attributes attrs = Attributes()) {
    Node n;
    n.op = op;
    n.name = Fresh(from.name + "_" + op);
    n.inputs = std::move(inputs);
    n.outputs = {output.empty() ? Fresh(from.name + "_" + op + "_out") : output};
    n.attrs = std::move(attrs);
    g->nodes.push_back(n);
    return n.outputs[0];
  }

  void Expand(const Node& n, Graph* g) {
    const std::string& x = n.inputs[0];
    auto out = [&](size_t i) { return i < n.outputs.size() ? n.outputs[i] : std::string(); };
    Attributes all;
    all.Set("keepdims", int64_t{0});
    std::string zero = Constant(g, n.name + "_zero", 0.0);
    std::string lo = Emit(g, n, "Min", {Emit(g, n, "ReduceMin", {x}, "", all), zero});
    std::string hi = Emit(g, n, "Max", {Emit(g, n, "ReduceMax", {x}, "", all), zero});
    std::string levels = Constant(g, n.name + "_levels", 255.0);
    std::string scale = Emit(g, n, "Div", {Emit(g, n, "Sub", {hi, lo}), levels}, out(1).empty() ? "" : out(1));
    std::string zero_point = Emit(g, n, "Neg", {Emit(g, n, "Div", {lo, scale})});
    zero_point = Emit(g, n, "Min", {Emit(g, n, "Max", {zero_point, zero}), levels});
    Attributes to_u8;
    to_u8.Set("to", std::string("uint8"));
    zero_point = Emit(g, n, "Cast", {Emit(g, n, "Round", {zero_point})}, out(2).empty() ? "" : out(2), to_u8);
    Emit(g, n, "QuantizeLinear", {x, scale, zero_point}, out(0).empty() ? "" : out(0));
  }

  const Graph& graph_;
  std::set<std::string> used_;
};

}  // namespace

Graph DecomposeDynamicQuantize(const Graph& graph) { return Decomposer(graph).Run(); }

}  // namespace graph
}  // namespace agate
