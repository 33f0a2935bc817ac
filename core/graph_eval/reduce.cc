// Reference kernels of the reductions.
#include <cmath>
#include <limits>

#include "core/graph_eval/kernel.h"
#include "core/graph/run_time_shape_operand.h"
#include "core/graph/shape_rules.h"

namespace agate {
namespace graph_eval {

using namespace graph;  // the graph IR is what this layer runs
namespace {

using Tensors = std::vector<Tensor>;

KernelFn ReduceKernel(const std::string& op) {
  return [op](const KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    std::vector<int> axes;
    const int operand = RunTimeShapeOperandIndex(ctx.node);
    if (operand >= 0) {  // axes read at run time: they must give the shape the node was compiled for
      CheckRunTimeShapeOperand(ctx.node, x.shape(), ctx.in(operand), ctx.outputs[0].shape);
      axes = ReduceAxesFromOperand(ctx.node, x.rank(), ctx.in(operand));
    } else {
      axes = ReduceAxes(ctx.node, x.rank());
    }
    Shape kept = ReducedShape(x.shape(), axes, true);
    std::vector<int64_t> slot = BroadcastOffsets(x.shape(), kept);
    int64_t slots = NumElements(kept);
    bool is_max = op == "ReduceMax", is_min = op == "ReduceMin";
    std::vector<double> acc(slots, is_max  ? -std::numeric_limits<double>::infinity()
                                   : is_min ? std::numeric_limits<double>::infinity()
                                   : op == "ReduceProd" ? 1.0
                                                        : 0.0);
    std::vector<double> mx(slots, -std::numeric_limits<double>::infinity());
    if (op == "ReduceLogSumExp")
      for (int64_t i = 0; i < x.numel(); ++i) mx[slot[i]] = std::max(mx[slot[i]], x.GetDouble(i));
    int64_t count = slots == 0 ? 0 : x.numel() / slots;
    for (int64_t i = 0; i < x.numel(); ++i) {
      double v = x.GetDouble(i);
      double& a = acc[slot[i]];
      if (is_max) a = std::max(a, v);
      else if (is_min) a = std::min(a, v);
      else if (op == "ReduceProd") a *= v;
      else if (op == "ReduceL1") a += std::fabs(v);
      else if (op == "ReduceL2" || op == "ReduceSumSquare") a += v * v;
      else if (op == "ReduceLogSumExp") a += std::exp(v - mx[slot[i]]);
      else a += v;
    }
    Tensor out = ctx.NewOutput(0);
    for (int64_t s = 0; s < slots; ++s) {
      double v = acc[s];
      if (op == "ReduceMean") v /= static_cast<double>(count);
      else if (op == "ReduceL2") v = std::sqrt(v);
      else if (op == "ReduceLogSum") v = std::log(v);
      else if (op == "ReduceLogSumExp") v = mx[s] + std::log(v);
      out.SetDouble(s, v);
    }
    return Tensors{out};
  };
}

KernelFn ArgKernel(bool is_max) {
  return [is_max](const KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    int axis = NormalizeAxis(ctx.attrs().GetInt("axis", 0), x.rank(), ctx.node.Describe());
    bool last = ctx.attrs().GetInt("select_last_index", 0) != 0;
    Shape kept = ReducedShape(x.shape(), {axis}, true);
    std::vector<int64_t> strides = RowMajorStrides(x.shape());
    int64_t n = x.shape()[axis];
    Tensor out = ctx.NewOutput(0);
    ForEachIndex(kept, [&](const std::vector<int64_t>& idx, int64_t linear) {
      int64_t base = 0;
      for (size_t d = 0; d < idx.size(); ++d) base += idx[d] * strides[d];
      int64_t best = 0;
      double best_v = x.GetDouble(base);
      for (int64_t j = 1; j < n; ++j) {
        double v = x.GetDouble(base + j * strides[axis]);
        bool better = is_max ? (v > best_v || (last && v == best_v)) : (v < best_v || (last && v == best_v));
        if (better) {
          best = j;
          best_v = v;
        }
      }
      out.SetInt(linear, best);
    });
    return Tensors{out};
  };
}

}  // namespace

void RegisterReduceKernels(KernelRegistry* r) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    r->Register(op, ReduceKernel(op));
  }
  r->Register("ArgMax", ArgKernel(true));
  r->Register("ArgMin", ArgKernel(false));
}

}  // namespace graph_eval
}  // namespace agate
