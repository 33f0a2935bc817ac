#include "core/graph/passes/testing/rewrite_check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/graph_eval/interpreter.h"
#include "core/graph/testing/graph_builder.h"

namespace agate {
namespace graph {
namespace testing {

int CountOps(const Graph& graph, const std::string& op) {
  int n = 0;
  for (const Node& node : graph.nodes) n += node.op == op;
  return n;
}

double OutputDifference(const Graph& before, const Graph& after, uint32_t seed) {
  std::map<std::string, Tensor> inputs;
  for (const std::string& in : before.inputs) {
    const TensorType& t = before.TypeOf(in);
    if (t.dtype.is_float()) {
      inputs[in] = RandomTensor(t.shape, seed++);
    } else {
      Tensor v(t.dtype, t.shape);
      for (int64_t i = 0; i < v.numel(); ++i) v.SetInt(i, (i * 7 + seed) % 3 == 0 ? 0 : 1);
      inputs[in] = v;
    }
  }
  auto a = graph_eval::Interpret(before, inputs), b = graph_eval::Interpret(after, inputs);
  double worst = 0;
  for (const std::string& out : before.outputs) {
    const Tensor &x = a.at(out), &y = b.at(out);
    if (x.shape() != y.shape()) return std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < x.numel(); ++i) {
      double p = x.GetDouble(i), q = y.GetDouble(i);
      if (std::isnan(p) || std::isnan(q)) {
        if (std::isnan(p) != std::isnan(q)) return std::numeric_limits<double>::infinity();
        continue;
      }
      if (p == q) continue;  // equal infinities
      worst = std::max(worst, std::fabs(p - q));
    }
  }
  return worst;
}

}  // namespace testing
}  // namespace graph
}  // namespace agate
