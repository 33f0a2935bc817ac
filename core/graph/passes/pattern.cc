#include "core/graph/passes/pattern.h"

#include <algorithm>
#include <cmath>

#include "core/graph/passes/dead_code_elimination.h"
#include "core/graph/passes/rewrite.h"
#include "core/graph/shape_inference.h"
#include "core/support/error.h"

namespace agate {
namespace graph {

bool NearlyEqual(double a, double b) {
  if (a == b) return true;
  return std::fabs(a - b) <= 1e-6 * std::max(std::fabs(a), std::fabs(b));
}

PatternView::PatternView(const Graph& graph) : graph_(graph) {
  producers_ = graph.Producers();
  consumers_ = graph.Consumers();
}

const Node* PatternView::Producer(const std::string& value) const {
  auto it = producers_.find(value);
  return it == producers_.end() ? nullptr : &graph_.nodes[it->second];
}

bool PatternView::SingleUse(const std::string& value) const {
  auto it = consumers_.find(value);
  if (it == consumers_.end() || it->second.size() != 1 || graph_.IsGraphOutput(value)) return false;
  // A node reading the value twice (Mul(x, x)) still counts as one reader.
  return true;
}

std::vector<const Node*> PatternView::Consumers(const std::string& value) const {
  std::vector<const Node*> nodes;
  auto it = consumers_.find(value);
  if (it != consumers_.end())
    for (int i : it->second) nodes.push_back(&graph_.nodes[i]);
  return nodes;
}

const Node* PatternView::Interior(const std::string& value, const std::string& op) const {
  const Node* node = Producer(value);
  if (!node || node->op != op || !SingleUse(value)) return nullptr;
  return node;
}

std::optional<double> PatternView::Scalar(const std::string& value) const {
  if (value.empty() || !graph_.IsConstant(value)) return std::nullopt;
  const Tensor& t = graph_.ConstantOf(value);
  if (t.numel() != 1 || !t.dtype().is_float()) return std::nullopt;
  return t.GetDouble(0);
}

bool PatternView::IsScalar(const std::string& value, double expected) const {
  std::optional<double> v = Scalar(value);
  return v && NearlyEqual(*v, expected);
}

void PatternView::ExpandProduct(const std::string& value, bool root, Product* p) const {
  const Node* node = Producer(value);
  bool expand = node && node->outputs.size() == 1 && (root || SingleUse(value));
  if (expand && node->op == "Mul" && node->inputs.size() == 2) {
    p->nodes.push_back(node);
    for (const std::string& in : node->inputs) {
      if (std::optional<double> c = Scalar(in)) {
        p->constant *= *c;
      } else {
        ExpandProduct(in, false, p);
      }
    }
    return;
  }
  if (expand && node->op == "Div" && node->inputs.size() == 2) {
    std::optional<double> c = Scalar(node->inputs[1]);
    if (c && *c != 0.0 && !Scalar(node->inputs[0])) {
      p->nodes.push_back(node);
      p->constant /= *c;
      ExpandProduct(node->inputs[0], false, p);
      return;
    }
  }
  if (expand && node->op == "Neg") {
    p->nodes.push_back(node);
    p->constant = -p->constant;
    ExpandProduct(node->inputs[0], false, p);
    return;
  }
  p->factors.push_back(value);
}

PatternView::Product PatternView::Factors(const std::string& value) const {
  Product p;
  ExpandProduct(value, true, &p);
  return p;
}

void PatternView::ExpandSum(const std::string& value, bool root, Sum* s) const {
  const Node* node = Producer(value);
  bool expand = node && node->outputs.size() == 1 && (root || SingleUse(value));
  if (expand && node->op == "Add" && node->inputs.size() == 2) {
    s->nodes.push_back(node);
    for (const std::string& in : node->inputs) {
      if (std::optional<double> c = Scalar(in)) {
        s->constant += *c;
      } else {
        ExpandSum(in, false, s);
      }
    }
    return;
  }
  if (expand && node->op == "Sub" && node->inputs.size() == 2) {
    std::optional<double> c = Scalar(node->inputs[1]);
    if (c && !Scalar(node->inputs[0])) {
      s->nodes.push_back(node);
      s->constant -= *c;
      ExpandSum(node->inputs[0], false, s);
      return;
    }
  }
  s->terms.push_back(value);
}

PatternView::Sum PatternView::Terms(const std::string& value) const {
  Sum s;
  ExpandSum(value, true, &s);
  return s;
}

bool PatternRewriter::Available(const std::vector<const Node*>& nodes) const {
  for (const Node* n : nodes)
    if (claimed_.count(n)) return false;
  return true;
}

bool PatternRewriter::Replace(const Node* root, const std::vector<const Node*>& matched, Node replacement) {
  if (claimed_.count(root)) return false;
  for (const Node* n : matched)
    if (claimed_.count(n)) return false;
  claimed_.insert(root);
  claimed_.insert(matched.begin(), matched.end());
  AGATE_CHECK(replacement.outputs == root->outputs) << "a pattern replacement must write the root's outputs";
  if (replacement.name.empty()) replacement.name = root->name;
  replacements_[root] = std::move(replacement);
  return true;
}

std::string PatternRewriter::FreshName(const std::string& base) {
  std::string name = graph_.FreshName(base);
  for (int i = 1; taken_.count(name); ++i) name = graph_.FreshName(base + "_" + std::to_string(i));
  taken_.insert(name);
  return name;
}

std::string PatternRewriter::AddConstant(const std::string& base, Tensor value) {
  std::string name = FreshName(base);
  constants_[name] = std::move(value);
  return name;
}

void PatternRewriter::AddNodeBefore(const Node* root, Node node) {
  node.name = FreshName(node.name);
  inserted_[root].push_back(std::move(node));
}

Graph PatternRewriter::Finish() const {
  if (replacements_.empty() && inserted_.empty()) return graph_;
  Graph result = WithoutNodes(graph_);
  for (const auto& [name, value] : constants_) result.AddConstant(name, value);
  for (const Node& node : graph_.nodes) {
    auto ins = inserted_.find(&node);
    if (ins != inserted_.end())
      for (const Node& n : ins->second) result.nodes.push_back(n);
    auto it = replacements_.find(&node);
    result.nodes.push_back(it == replacements_.end() ? node : it->second);
  }
  return EliminateDeadCode(InferShapes(result));
}

}  // namespace graph
}  // namespace agate
