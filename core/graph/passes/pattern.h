// Structural matching of exporters' decompositions, for the pattern-fusion
// passes (layer_norm_fusion, rms_norm_fusion, gelu_fusion, swish_fusion,
// hard_swish_fusion, attention_fusion).
//
// Why a matcher of its own: exporters spell one formula many ways. Operands of
// Add and Mul come in either order, constants are multiplied in at different
// places (0.5 * x * (1 + t) or x * (1 + t) * 0.5), a division by c is also a
// multiplication by 1/c, x^2 is Pow(x, 2) or Mul(x, x). A PatternView flattens
// products and sums of single-use intermediates into factor and term lists with
// their constants folded together, so each rewrite states its formula once and
// checks every constant against it. Nothing is matched through a value that
// something outside the pattern also reads (it could not be removed), and every
// constant is compared with a relative tolerance of float32 rounding: a near
// miss (epsilon on the wrong side, 0.4 instead of 0.5) stays unfused.
//
// A PatternView borrows the graph: it must outlive neither the graph nor be used
// after the graph changes.
#ifndef AGATE_CORE_GRAPH_PASSES_PATTERN_H_
#define AGATE_CORE_GRAPH_PASSES_PATTERN_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace agate {
namespace graph {

// |a - b| <= 1e-6 * max(|a|, |b|) (float32 constants against their exact values), or both zero.
bool NearlyEqual(double a, double b);

class PatternView {
 public:
  explicit PatternView(const Graph& graph);
  const Graph& graph() const { return graph_; }

  // The node that defines `value`, or nullptr for graph inputs and constants.
  const Node* Producer(const std::string& value) const;
  int IndexOf(const Node* node) const { return static_cast<int>(node - graph_.nodes.data()); }
  // True when exactly one node reads `value` and it is not a graph output, so a
  // rewrite that consumes that reader may remove the value's producer.
  bool SingleUse(const std::string& value) const;
  // The nodes that read `value` (each once), in graph order.
  std::vector<const Node*> Consumers(const std::string& value) const;
  // The producer of a single-use `value` when its op is `op`, else nullptr.
  const Node* Interior(const std::string& value, const std::string& op) const;
  // The value of a one-element float constant, or nullopt.
  std::optional<double> Scalar(const std::string& value) const;
  // True for a one-element float constant equal to `expected` (NearlyEqual).
  bool IsScalar(const std::string& value, double expected) const;

  // value = constant * product(factors): Mul nodes, divisions by a scalar
  // constant and Neg are expanded through single-use intermediates (the root's
  // own producer is always expanded). Scalar-constant operands fold into
  // `constant`; `nodes` lists the expanded nodes (root first).
  struct Product {
    double constant = 1.0;
    std::vector<std::string> factors;
    std::vector<const Node*> nodes;
  };
  Product Factors(const std::string& value) const;

  // value = constant + sum(terms): Add nodes and subtractions of a scalar
  // constant, expanded like Factors.
  struct Sum {
    double constant = 0.0;
    std::vector<std::string> terms;
    std::vector<const Node*> nodes;
  };
  Sum Terms(const std::string& value) const;

 private:
  void ExpandProduct(const std::string& value, bool root, Product* p) const;
  void ExpandSum(const std::string& value, bool root, Sum* s) const;

  const Graph& graph_;
  std::map<std::string, int> producers_;
  std::map<std::string, std::vector<int>> consumers_;
};

// Collects rewrites of one pass: each replaces a root node by a new node that
// writes the root's outputs; the interior nodes of a match become dead and are
// removed by dead-code elimination. A node already used by an earlier match is
// never matched again.
class PatternRewriter {
 public:
  explicit PatternRewriter(const Graph& graph) : graph_(graph) {}
  // True when none of `nodes` is claimed by an earlier match.
  bool Available(const std::vector<const Node*>& nodes) const;
  // False (and nothing recorded) when one of `matched` is already claimed.
  bool Replace(const Node* root, const std::vector<const Node*>& matched, Node replacement);
  // Adds a constant to the result graph under a fresh name derived from `base`; returns the name.
  std::string AddConstant(const std::string& base, Tensor value);
  // A value or node name used neither in the graph nor by this rewriter yet.
  std::string FreshName(const std::string& base);
  // Inserts `node` (named with FreshName) right before `root` in the result, for helper nodes
  // (reshapes, a combined mask) that the replacement of `root` reads.
  void AddNodeBefore(const Node* root, Node node);
  // The rewritten graph, dead nodes removed; `graph` unchanged when nothing matched.
  Graph Finish() const;
  int count() const { return static_cast<int>(replacements_.size()); }

 private:
  const Graph& graph_;
  std::set<const Node*> claimed_;
  std::map<const Node*, Node> replacements_;
  std::map<const Node*, std::vector<Node>> inserted_;
  std::map<std::string, Tensor> constants_;
  std::set<std::string> taken_;
};

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_PASSES_PATTERN_H_
