// Helpers for tests that build graphs by hand (test-only library).
#ifndef AGATE_CORE_GRAPH_TESTING_GRAPH_BUILDER_H_
#define AGATE_CORE_GRAPH_TESTING_GRAPH_BUILDER_H_

#include <string>
#include <utility>
#include <vector>

#include "core/graph/graph.h"

namespace agate {
namespace graph {
namespace testing {

// Appends a node; call InferShapes (or Finish) once all nodes are added.
void Add(Graph* graph, const std::string& op, const std::string& name, std::vector<std::string> inputs,
         std::vector<std::string> outputs, const std::vector<std::pair<std::string, Attribute>>& attrs = {});

// y = GELU(x @ w + bias) with GELU in the erf form exporters write
// (0.5 * h * (1 + erf(h / sqrt 2))): w [k, n] and bias [n] random constants
// (seeds 7, 8), the nodes named mm, bias_add, scale, erf, plus1, mulh, gelu.
// Tests of the GEMM epilogue use it as a long element-wise chain after a product.
void AddDenseBiasErfGelu(Graph* graph, const std::string& x, int64_t k, int64_t n, const std::string& y);

// Sets the outputs, infers shapes and verifies the graph.
Graph Finish(Graph graph, std::vector<std::string> outputs);

// Deterministic pseudo-random float32 values in [lo, hi).
Tensor RandomTensor(const Shape& shape, uint32_t seed, double lo = -1.0, double hi = 1.0);

// Largest |a - b| over the elements (infinity on a dtype or shape mismatch).
double MaxAbsDiff(const Tensor& a, const Tensor& b);

// The node names of each fused group, for readable expectations.
std::vector<std::vector<std::string>> GroupNames(const Graph& graph);

}  // namespace testing
}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_TESTING_GRAPH_BUILDER_H_
