#include "core/graph/testing/graph_builder.h"

#include <cmath>
#include <limits>

#include "core/graph/shape_inference.h"

namespace agate {
namespace graph {
namespace testing {

void Add(Graph* graph, const std::string& op, const std::string& name, std::vector<std::string> inputs,
         std::vector<std::string> outputs, const std::vector<std::pair<std::string, Attribute>>& attrs) {
  Node node;
  node.op = op;
  node.name = name;
  node.inputs = std::move(inputs);
  node.outputs = std::move(outputs);
  for (const auto& [key, value] : attrs) node.attrs.Set(key, value);
  graph->AddNode(node);
}

void AddDenseBiasErfGelu(Graph* graph, const std::string& x, int64_t k, int64_t n, const std::string& y) {
  const ir::DType f32 = ir::DType::Float(32);
  graph->AddConstant("w", RandomTensor({k, n}, 7));
  graph->AddConstant("bias", RandomTensor({n}, 8));
  graph->AddConstant("half", Tensor::Scalar(f32, 0.5));
  graph->AddConstant("one", Tensor::Scalar(f32, 1.0));
  graph->AddConstant("rsqrt2", Tensor::Scalar(f32, 0.70710678118654752));
  Add(graph, "MatMul", "mm", {x, "w"}, {"m"});
  Add(graph, "Add", "bias_add", {"m", "bias"}, {"h"});
  Add(graph, "Mul", "scale", {"h", "rsqrt2"}, {"s"});
  Add(graph, "Erf", "erf", {"s"}, {"e"});
  Add(graph, "Add", "plus1", {"e", "one"}, {"p"});
  Add(graph, "Mul", "mulh", {"h", "p"}, {"q"});
  Add(graph, "Mul", "gelu", {"q", "half"}, {y});
}

Graph Finish(Graph graph, std::vector<std::string> outputs) {
  graph.outputs = std::move(outputs);
  Graph result = InferShapes(graph);
  result.Verify();
  return result;
}

Tensor RandomTensor(const Shape& shape, uint32_t seed, double lo, double hi) {
  Tensor t(DType::Float(32), shape);
  uint32_t state = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < t.numel(); ++i) {
    state = state * 1664525u + 1013904223u;
    t.SetDouble(i, lo + (hi - lo) * ((state >> 8) / static_cast<double>(1u << 24)));
  }
  return t;
}

double MaxAbsDiff(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::fabs(a.GetDouble(i) - b.GetDouble(i)));
  return worst;
}

std::vector<std::vector<std::string>> GroupNames(const Graph& graph) {
  std::vector<std::vector<std::string>> names;
  for (const FusedGroup& group : graph.groups) {
    std::vector<std::string> g;
    for (int n : group.nodes) g.push_back(graph.nodes[n].name);
    names.push_back(g);
  }
  return names;
}

}  // namespace testing
}  // namespace graph
}  // namespace agate
