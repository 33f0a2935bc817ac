// RunTimeSlice and RunTimeSplit: a Slice whose starts, ends, axes or steps, or a Split whose
// sizes, arrive when the model runs (core/graph/ops_tensor.cc: each output's type is the
// input's, an upper bound on every extent; Graph::run_time_extents says which output holds the
// extents).
//
// Why one kernel over the input's size: which input axis each operand entry slices, where it
// starts, its step and its extent are expressions of the operands (select chains over the
// entries, the last entry naming an axis winning, as in the reference's ComputeSlice; a part of
// a split starts after the sizes before it), so the kernel walks each output compactly at its
// run-time extents and reads the input element each output element comes from. Indices are
// clamped into the input, so whatever the operands hold the kernel reads in bounds; axes out of
// range, zero steps and sizes that do not add up fail its run-time check.
#include <string>
#include <vector>

#include "core/graph/shape_rules.h"
#include "core/ops/op_context.h"
#include "core/ops/registry.h"
#include "core/ops/run_time_extents.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using te::Expr;
using te::Tensor;
using te::Var;

Expr I(int64_t v) { return Expr(v); }
Expr Clamp(const Expr& v, int64_t lo, int64_t hi) { return ir::min(ir::max(v, I(lo)), I(hi)); }

// Per input axis: the first index, the step and the extent of the slice, and the condition under
// which the operands are valid.
struct SlicePlan {
  std::vector<Expr> start, step, extent;
  Expr valid;
};

// `axes` and `steps` may be null (absent: axes 0, 1, ...; steps 1).
SlicePlan PlanSlice(const graph::Shape& input, int64_t count, const ElementReader& starts, const ElementReader& ends,
                    const ElementReader* axes, const ElementReader* steps) {
  int rank = static_cast<int>(input.size());
  SlicePlan p;
  p.valid = I(0) == I(0);
  for (int d = 0; d < rank; ++d) {
    p.start.push_back(I(0));
    p.step.push_back(I(1));
    p.extent.push_back(I(input[d]));
  }
  for (int64_t j = 0; j < count; ++j) {
    Expr axis = axes ? (*axes)(j) : I(j);
    p.valid = p.valid && axis >= I(-rank) && axis < I(rank);
    axis = ir::select(axis < I(0), axis + I(rank), axis);
    Expr step = steps ? (*steps)(j) : I(1);
    p.valid = p.valid && step != I(0);
    for (int d = 0; d < rank; ++d) {
      int64_t dim = input[d];
      Expr s = starts(j), e = ends(j);
      s = ir::select(s < I(0), s + I(dim), s);
      e = ir::select(e < I(0), e + I(dim), e);
      // step > 0: [start, end) inside [0, dim]; step < 0: (end, start] inside [-1, dim - 1].
      Expr s_up = Clamp(s, 0, dim), e_up = Clamp(e, 0, dim);
      Expr n_up = ir::select(e_up > s_up, ir::floordiv(e_up - s_up - I(1), ir::max(step, I(1))) + I(1), I(0));
      Expr s_down = Clamp(s, 0, dim - 1), e_down = Clamp(e, -1, dim - 1);
      Expr n_down = ir::select(s_down > e_down, ir::floordiv(s_down - e_down - I(1), ir::max(I(0) - step, I(1))) + I(1),
                               I(0));
      Expr on = axis == I(d);
      p.start[d] = ir::select(on, ir::select(step > I(0), s_up, s_down), p.start[d]);
      p.step[d] = ir::select(on, step, p.step[d]);
      p.extent[d] = ir::select(on, ir::select(step > I(0), n_up, n_down), p.extent[d]);
    }
  }
  return p;
}

// Inputs 1 to 4 as readers; absent ones null.
struct SliceOperands {
  std::vector<int> inputs;  // the present operand inputs, 1 and 2 first
  int axes = -1, steps = -1;  // their positions in `inputs`, or -1
};

SliceOperands OperandsOf(const OpContext& ctx) {
  SliceOperands o;
  o.inputs = {1, 2};
  if (ctx.has_input(3)) {
    o.axes = static_cast<int>(o.inputs.size());
    o.inputs.push_back(3);
  }
  if (ctx.has_input(4)) {
    o.steps = static_cast<int>(o.inputs.size());
    o.inputs.push_back(4);
  }
  return o;
}

SlicePlan PlanOf(const graph::Shape& input, int64_t count, const SliceOperands& o,
                 const std::vector<ElementReader>& readers) {
  return PlanSlice(input, count, readers[0], readers[1], o.axes >= 0 ? &readers[o.axes] : nullptr,
                   o.steps >= 0 ? &readers[o.steps] : nullptr);
}

std::vector<Tensor> RunTimeSliceOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const graph::Shape input = ctx.input_type(0).shape;
  const int64_t count = ctx.input_type(1).numel();
  const SliceOperands operands = OperandsOf(ctx);
  ctx.CheckAtRunTime(operands.inputs,
                     [input, count, operands](const std::vector<ElementReader>& readers) {
                       return PlanOf(input, count, operands, readers).valid;
                     },
                     "its axes (read when the model runs) must lie in [-rank, rank) and its steps must not be 0, for "
                     "the input " + ctx.input_type(0).ToString());
  std::vector<ElementReader> readers;
  for (int i : operands.inputs) {
    const Tensor& operand = ctx.input(i);
    readers.push_back([operand](int64_t j) { return ir::cast(ir::DType::Index(), operand(I(j))); });
  }
  SlicePlan plan = PlanOf(input, count, operands, readers);
  int rank = static_cast<int>(input.size());
  // Output element f, compact at the run-time extents, reads input element start + i * step.
  Tensor data = te::compute({I(graph::NumElements(input))}, [&](const std::vector<Var>& o) {
    Expr rest = o[0];
    std::vector<Expr> index(rank);
    for (int d = rank - 1; d >= 0; --d) {
      Expr extent = ir::max(plan.extent[d], I(1));
      Expr i = ir::floormod(rest, extent);
      rest = ir::floordiv(rest, extent);
      index[d] = Clamp(plan.start[d] + i * plan.step[d], 0, input[d] - 1);
    }
    return x(index);
  }, ctx.node().outputs[0], tag::kInjective);
  return {data, ExtentsTensor(plan.extent, ctx.node().outputs[1])};
}

// RunTimeSplit: part i is the slice [offset_i, offset_i + split[i]) of the axis, offset_i the
// sum of the sizes before it; the sizes must be non-negative and add up to the axis's extent.
std::vector<Tensor> RunTimeSplitOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const graph::Shape input = ctx.input_type(0).shape;
  const int rank = static_cast<int>(input.size());
  const int axis = graph::NormalizeAxis(ctx.attrs().GetInt("axis", 0), rank, ctx.Describe());
  const int64_t n = input[axis];
  const int64_t parts = ctx.input_type(1).numel();
  ctx.CheckAtRunTime({1},
                     [n, parts](const std::vector<ElementReader>& split) {
                       Expr valid = I(0) == I(0), total = I(0);
                       for (int64_t i = 0; i < parts; ++i) {
                         valid = valid && split[0](i) >= I(0) && split[0](i) <= I(n);
                         total = total + Clamp(split[0](i), 0, n + 1);
                       }
                       return valid && total == I(n);
                     },
                     "the split sizes (input 1, read when the model runs) must be non-negative and add up to " +
                         std::to_string(n));
  const Tensor& split = ctx.input(1);
  std::vector<Tensor> out;
  Expr offset = I(0);
  for (int64_t i = 0; i < parts; ++i) {
    Expr size = Clamp(ir::cast(ir::DType::Index(), split(I(i))), 0, n);
    std::vector<Expr> extents;
    for (int d = 0; d < rank; ++d) extents.push_back(d == axis ? size : I(input[d]));
    out.push_back(te::compute({I(graph::NumElements(input))}, [&](const std::vector<Var>& o) {
      Expr rest = o[0];
      std::vector<Expr> index(rank);
      for (int d = rank - 1; d >= 0; --d) {
        Expr extent = ir::max(extents[d], I(1));
        index[d] = ir::floormod(rest, extent);
        rest = ir::floordiv(rest, extent);
      }
      index[axis] = Clamp(index[axis] + offset, 0, n - 1);
      return x(index);
    }, ctx.node().outputs[2 * i], tag::kInjective));
    out.push_back(ExtentsTensor(extents, ctx.node().outputs[2 * i + 1]));
    offset = offset + size;
  }
  return out;
}

}  // namespace

void RegisterRunTimeSliceOps(OpTable* t) {
  t->Register("RunTimeSlice", RunTimeSliceOp);
  t->Register("RunTimeSplit", RunTimeSplitOp);
}

}  // namespace ops
}  // namespace agate
