#include "core/graph/passes/simplification.h"

#include <set>

#include "core/graph/passes/dead_code_elimination.h"
#include "core/graph/passes/rewrite.h"

namespace agate {
namespace graph {
namespace {

bool IsReshapeLike(const std::string& op) {
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze";
}

std::vector<int64_t> PermOf(const Node& node, int rank) {
  std::vector<int64_t> perm = node.attrs.GetInts("perm", {});
  if (perm.empty())
    for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
  return perm;
}

// A node that computes its input unchanged. `unused` holds the values nothing reads.
bool IsNoOp(const Node& node, const Graph& g, const std::set<std::string>& unused) {
  if (node.op == "Identity") return true;
  // Inference Dropout; its mask output (exporters name it even when nothing reads it) must be unused.
  if (node.op == "Dropout") {
    bool training = node.attrs.GetInt("training_mode", 0) != 0 && node.attrs.GetFloat("ratio", 0.5) != 0.0;
    bool checked_at_run_time = node.inputs.size() > 1;  // its kernel checks the run-time mode and ratio
    return !training && !checked_at_run_time &&
           (node.outputs.size() == 1 || node.outputs[1].empty() || unused.count(node.outputs[1]));
  }
  // A Cast to the type it reads (PyTorch's QDQ exports cast every QuantizeLinear's uint8
  // output to uint8 before its DequantizeLinear): a copy kernel or an epilogue step.
  if (IsReshapeLike(node.op) || node.op == "Cast") return g.TypeOf(node.inputs[0]) == g.TypeOf(node.outputs[0]);
  // A Pad of nothing, a Slice of everything (unit steps, so the same extents mean the same elements).
  if (node.op == "Pad" && (node.inputs.size() < 2 || node.inputs[1].empty())) {
    for (int64_t p : node.attrs.GetInts("pads", {}))
      if (p != 0) return false;
    return g.TypeOf(node.inputs[0]) == g.TypeOf(node.outputs[0]);
  }
  if (node.op == "Slice" && node.inputs.size() == 1) {
    for (int64_t step : node.attrs.GetInts("steps", {}))
      if (step != 1) return false;
    return g.TypeOf(node.inputs[0]) == g.TypeOf(node.outputs[0]);
  }
  if (node.op == "Transpose") {
    std::vector<int64_t> perm = PermOf(node, g.TypeOf(node.inputs[0]).rank());
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != static_cast<int64_t>(i)) return false;
    return true;
  }
  return false;
}

// A zero constant Pad of only the spatial axes of an NCHW tensor, feeding a Conv
// or an AveragePool that pads nothing itself: the consumer can pad instead
// (AveragePool counting the padding, as the explicit zeros were counted).
// Returns the consumer's new pads, or empty when the fold does not apply.
std::vector<int64_t> FoldablePadding(const Node& pad, const Node& consumer, const Graph& g) {
  if (pad.op != "Pad" || (consumer.op != "Conv" && consumer.op != "AveragePool")) return {};
  if (pad.attrs.GetString("mode", "constant") != "constant" || pad.attrs.GetFloat("value", 0.0) != 0.0) return {};
  if (pad.inputs.size() > 1 && !pad.inputs[1].empty()) return {};  // a runtime pads/value input
  int rank = g.TypeOf(pad.inputs[0]).rank();
  std::vector<int64_t> pads = pad.attrs.GetInts("pads", {});
  if (rank < 3 || static_cast<int>(pads.size()) != 2 * rank) return {};
  if (pads[0] || pads[1] || pads[rank] || pads[rank + 1]) return {};
  for (int64_t p : pads)
    if (p < 0) return {};
  std::string auto_pad = consumer.attrs.GetString("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" || consumer.attrs.GetInt("ceil_mode", 0) != 0) return {};
  for (int64_t p : consumer.attrs.GetInts("pads", {}))
    if (p != 0) return {};
  std::vector<int64_t> folded;
  for (int i = 2; i < rank; ++i) folded.push_back(pads[i]);
  for (int i = 2; i < rank; ++i) folded.push_back(pads[rank + i]);
  return folded;
}

// One sweep over the nodes; sets *changed when anything was rewritten.
Graph SimplifyOnce(const Graph& graph, bool* changed) {
  Graph result = WithoutNodes(graph);
  std::map<std::string, std::string> renames;
  std::map<std::string, int> producer;  // value -> index in result.nodes
  std::map<std::string, std::vector<int>> consumers = graph.Consumers();
  std::set<std::string> unused;
  for (const Node& node : graph.nodes)
    for (const std::string& out : node.outputs)
      if (!out.empty() && !consumers.count(out) && !graph.IsGraphOutput(out)) unused.insert(out);
  for (const Node& original : graph.nodes) {
    Node node = original;
    for (std::string& in : node.inputs) {
      auto it = renames.find(in);
      if (it != renames.end()) in = it->second;
    }
    if (IsNoOp(node, result, unused)) {
      const std::string& in = node.inputs[0];
      const std::string& out = node.outputs[0];
      if (!graph.IsGraphOutput(out)) {
        renames[out] = in;
        *changed = true;
        continue;
      }
      // The result is a graph output: let the producer write it directly when nothing else reads `in`.
      auto p = producer.find(in);
      bool renamed_into_in = false;
      for (const auto& [from, to] : renames) renamed_into_in |= (to == in);
      if (p != producer.end() && !graph.IsGraphOutput(in) && consumers[in].size() == 1 && !renamed_into_in) {
        for (std::string& o : result.nodes[p->second].outputs)
          if (o == in) o = out;
        producer[out] = p->second;
        *changed = true;
        continue;
      }
    }
    auto p = node.inputs.empty() ? producer.end() : producer.find(node.inputs[0]);
    if (p != producer.end()) {
      const Node& inner = result.nodes[p->second];
      if (node.op == "Reshape" && IsReshapeLike(inner.op)) {
        Shape target = result.TypeOf(node.outputs[0]).shape;
        node.inputs[0] = inner.inputs[0];
        node.attrs.Set("shape", std::vector<int64_t>(target.begin(), target.end()));
        node.attrs.Set("allowzero", int64_t{1});
        *changed = true;
      } else if (std::vector<int64_t> pads = FoldablePadding(inner, node, result);
                 !pads.empty() && consumers[inner.outputs[0]].size() == 1 && !graph.IsGraphOutput(inner.outputs[0])) {
        node.inputs[0] = inner.inputs[0];
        node.attrs.Set("pads", pads);
        if (node.op == "AveragePool") node.attrs.Set("count_include_pad", int64_t{1});
        *changed = true;
      } else if (node.op == "Transpose" && inner.op == "Transpose") {
        int rank = result.TypeOf(node.inputs[0]).rank();
        std::vector<int64_t> outer = PermOf(node, rank), first = PermOf(inner, rank), composed(rank);
        for (int j = 0; j < rank; ++j) composed[j] = first[outer[j]];
        node.inputs[0] = inner.inputs[0];
        node.attrs.Set("perm", composed);
        *changed = true;
      }
    }
    for (const std::string& out : node.outputs)
      if (!out.empty()) producer[out] = static_cast<int>(result.nodes.size());
    result.nodes.push_back(node);
  }
  ApplyRenames(renames, &result);
  return result;
}

}  // namespace

Graph Simplify(const Graph& graph) {
  Graph current = graph;
  for (int round = 0; round < 100; ++round) {
    bool changed = false;
    current = EliminateDeadCode(SimplifyOnce(current, &changed));
    if (!changed) break;
  }
  return current;
}

}  // namespace graph
}  // namespace agate
