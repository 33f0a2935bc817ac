// Reductions: Reduce{Sum,Mean,Max,Min,Prod,L1,L2,LogSum,LogSumExp,SumSquare}, ArgMax, ArgMin.
#include "core/graph/op_registry.h"
#include "core/graph/run_time_shape_operand.h"
#include "core/graph/shape_rules.h"

namespace agate {
namespace graph {

void RegisterReduceOps(OpRegistry* r) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    OpDef def;
    def.op = op;
    def.kind = OpKind::kReduction;
    def.min_inputs = 1;
    def.max_inputs = 2;  // a run-time axes operand (run_time_shape_operand.h) is input 1
    def.attributes = {"axes", "keepdims", "noop_with_empty_axes", kRunTimeOperandAttr};
    def.static_operands = {{1, "axes"}};
    def.infer = [](const InferContext& ctx) {
      const TensorType& in = ctx.input(0);
      std::vector<int> axes = ReduceAxes(ctx.node(), in.rank());
      bool keepdims = ctx.attrs().GetInt("keepdims", 1) != 0;
      return std::vector<TensorType>{TensorType{in.dtype, ReducedShape(in.shape, axes, keepdims)}};
    };
    r->Register(def);
  }
  for (const char* op : {"ArgMax", "ArgMin"}) {
    OpDef def;
    def.op = op;
    def.kind = OpKind::kReduction;
    def.attributes = {"axis", "keepdims", "select_last_index"};
    def.infer = [](const InferContext& ctx) {
      const TensorType& in = ctx.input(0);
      int axis = NormalizeAxis(ctx.attrs().GetInt("axis", 0), in.rank(), ctx.node().Describe());
      bool keepdims = ctx.attrs().GetInt("keepdims", 1) != 0;
      return std::vector<TensorType>{TensorType{DType::Int(64), ReducedShape(in.shape, {axis}, keepdims)}};
    };
    r->Register(def);
  }
}

}  // namespace graph
}  // namespace agate
