// ScheduleOps, tensorized blocks: the inner loops of a tensorized stage become one call of its
// tensor intrinsic, recorded as a TensorizeCall that storage flattening lowers on real buffers.
#include "core/lower/schedule_lowerer.h"

#include <algorithm>
#include <memory>
#include <sstream>
#include <unordered_map>

#include "core/ir/equality.h"
#include "core/ir/functor.h"
#include "core/ir/printer.h"
#include "core/ir/substitute.h"
#include "core/support/error.h"

namespace agate {
namespace lower {
namespace schedule_ops_detail {

using namespace ir;  // NOLINT
using te::AttachType;

void ScheduleLowerer::TensorizeError(const StageState* s, int level, const std::string& why) {
  AGATE_THROW(kIllegalSchedule) << "tensorize on stage " << s->name() << ", axis " << s->leaves()[level].name()
                                << ": " << why;
}

Stmt ScheduleLowerer::MakeTensorizedNest(StageState* s, int level, const std::shared_ptr<const te::TensorIntrin>& intrin) {
  const auto* desc = dynamic_cast<const ComputeOpNode*>(intrin->desc.op().get());
  if (!desc || desc->num_outputs() != 1) TensorizeError(s, level, "intrinsic " + intrin->name + " must describe one compute");
  if (s->op->num_outputs() != 1) TensorizeError(s, level, "stages with several outputs cannot be tensorized");
  int n = static_cast<int>(s->leaves().size());
  // Inner leaves map in order onto the intrinsic's data axes, then its reduce axes.
  std::vector<IterVar> data_leaves, reduce_leaves;
  for (int l = level; l < n; ++l)
    (s->leaves()[l].kind() == IterVarKind::kCommReduce ? reduce_leaves : data_leaves).push_back(s->leaves()[l]);
  for (int l = 0; l < level; ++l) {
    if (s->leaves()[l].kind() == IterVarKind::kCommReduce)
      TensorizeError(s, level, "reduction loop " + s->leaves()[l].name() +
                                   " is outside the tensorized loops; the intrinsic must compute whole reductions");
  }
  if (data_leaves.size() != desc->axis.size() || reduce_leaves.size() != desc->reduce_axis.size()) {
    TensorizeError(s, level, "the loops inside have " + std::to_string(data_leaves.size()) + " data and " +
                                 std::to_string(reduce_leaves.size()) + " reduction axes; intrinsic " +
                                 intrin->name + " has " + std::to_string(desc->axis.size()) + " and " +
                                 std::to_string(desc->reduce_axis.size()));
  }
  VarMap leaf_to_intrin;
  auto map_axes = [&](const std::vector<IterVar>& leaves, const std::vector<IterVar>& axes) {
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (!an_.CanProve(s->extent.at(leaves[i].get()) == axes[i].dom().extent)) {
        TensorizeError(s, level, "loop " + leaves[i].name() + " has extent " + ToString(s->extent.at(leaves[i].get())) +
                                     " but intrinsic axis " + axes[i].name() + " has " + ToString(axes[i].dom().extent));
      }
      leaf_to_intrin[leaves[i].var().get()] = axes[i].var();
    }
  };
  map_axes(data_leaves, desc->axis);
  map_axes(reduce_leaves, desc->reduce_axis);
  for (const Guard& g : s->guards) {
    if (g.level >= level)
      TensorizeError(s, level, "the loops inside do not tile the domain exactly (guard " + ToString(g.condition) + ")");
  }
  VarMap bind;
  for (const auto& [var, value] : s->root_value) bind[var] = an_.Simplify(Substitute(value, leaf_to_intrin));
  Expr stage_body = Substitute(s->body[0], bind);

  TensorizeCall call;
  call.intrin = intrin;
  std::vector<Tensor> desc_inputs = intrin->desc.op()->InputTensors();
  call.inputs.resize(desc_inputs.size());
  call.input_offsets.resize(desc_inputs.size());
  std::vector<const VarNode*> intrin_vars;
  for (const IterVar& iv : desc->root_iter_vars()) intrin_vars.push_back(iv.var().get());
  auto uses_intrin_var = [&](const Expr& e) {
    return UsesVar(e, [&](const VarNode* v) {
      return std::find(intrin_vars.begin(), intrin_vars.end(), v) != intrin_vars.end();
    });
  };
  std::function<bool(const Expr&, const Expr&)> match = [&](const Expr& a, const Expr& b) -> bool {
    if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
    if (const TensorRead* ra = a.as<TensorRead>()) {
      const TensorRead* rb = b.as<TensorRead>();
      Tensor ta = te::AsTensor(ra->producer), tb = te::AsTensor(rb->producer);
      size_t slot = 0;
      while (slot < desc_inputs.size() && !desc_inputs[slot].same_as(tb)) ++slot;
      if (slot == desc_inputs.size() || ra->indices.size() != rb->indices.size()) return false;
      if (call.inputs[slot].defined() && !call.inputs[slot].same_as(ta)) return false;
      std::vector<Expr> offsets;
      for (size_t d = 0; d < ra->indices.size(); ++d) {
        Expr off = an_.Simplify(ra->indices[d] - rb->indices[d]);
        if (uses_intrin_var(off)) return false;
        offsets.push_back(off);
      }
      if (call.inputs[slot].defined()) {
        for (size_t d = 0; d < offsets.size(); ++d)
          if (!StructuralEqual(offsets[d], call.input_offsets[slot][d])) return false;
      }
      call.inputs[slot] = ta;
      call.input_offsets[slot] = offsets;
      return true;
    }
    if (const Reduce* ra = a.as<Reduce>()) {
      const Reduce* rb = b.as<Reduce>();
      if (ra->combiner.size() != rb->combiner.size() || !ra->init.empty() || !rb->init.empty()) return false;
      VarMap m;
      for (size_t i = 0; i < ra->combiner.size(); ++i) {
        m[rb->combiner.lhs[i].get()] = ra->combiner.lhs[i];
        m[rb->combiner.rhs[i].get()] = ra->combiner.rhs[i];
        if (!StructuralEqual(Substitute(rb->combiner.result[i], m), ra->combiner.result[i])) return false;
        if (!StructuralEqual(ra->combiner.identity_element[i], rb->combiner.identity_element[i])) return false;
      }
      if (!is_one(an_.Simplify(ra->condition)) || !is_one(an_.Simplify(rb->condition))) return false;
      for (size_t i = 0; i < ra->source.size(); ++i)
        if (!match(ra->source[i], rb->source[i])) return false;
      return true;
    }
    if (const IntImm* ia = a.as<IntImm>()) return ia->value == b.as<IntImm>()->value;
    if (const FloatImm* fa = a.as<FloatImm>()) return fa->value == b.as<FloatImm>()->value;
    if (a.as<VarNode>()) return a.same_as(b);
    if (const Call* ca = a.as<Call>()) {
      const Call* cb = b.as<Call>();
      if (ca->op != cb->op || ca->args.size() != cb->args.size()) return false;
      for (size_t i = 0; i < ca->args.size(); ++i)
        if (!match(ca->args[i], cb->args[i])) return false;
      return true;
    }
    std::vector<Expr> ka = Children(a), kb = Children(b);
    if (ka.empty() || ka.size() != kb.size()) return false;
    for (size_t i = 0; i < ka.size(); ++i)
      if (!match(ka[i], kb[i])) return false;
    return true;
  };
  if (!match(stage_body, desc->body[0])) {
    TensorizeError(s, level, "the computation inside does not match intrinsic " + intrin->name + " (stage computes " +
                                 ToString(stage_body) + ", intrinsic computes " + ToString(desc->body[0]) + ")");
  }
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    if (!call.inputs[i].defined()) TensorizeError(s, level, "intrinsic input " + desc_inputs[i].name() + " is not read");
  }
  call.output = s->stage->origin_op->output(0);
  for (size_t d = 0; d < s->op->axis.size(); ++d) {
    Expr off = an_.Simplify(bind.at(s->op->axis[d].var().get()) - desc->axis[d].var());
    if (uses_intrin_var(off)) TensorizeError(s, level, "the output block is not a contiguous tile of the intrinsic's shape");
    call.output_offset.push_back(off);
  }
  int64_t id = static_cast<int64_t>(tensorize_calls_.size());
  tensorize_calls_.push_back(call);
  Stmt body = AttrStmt::make(attr::kTensorize, intrin->name, Expr(id), TensorizeOffsetsStmt(call));
  for (int l = level - 1; l >= 0; --l) body = WrapLevel(s, l, body, false);
  return WrapLevel(s, -1, body, false);
}

std::vector<Expr> ScheduleLowerer::Children(const Expr& e) {
  switch (e.kind()) {
#define AGATE_BIN(T) \
  case T::kKind: return {e.as<T>()->a, e.as<T>()->b};
    AGATE_BIN(Add) AGATE_BIN(Sub) AGATE_BIN(Mul) AGATE_BIN(Div) AGATE_BIN(Mod) AGATE_BIN(FloorDiv)
    AGATE_BIN(FloorMod) AGATE_BIN(Min) AGATE_BIN(Max) AGATE_BIN(EQ) AGATE_BIN(NE) AGATE_BIN(LT) AGATE_BIN(LE)
    AGATE_BIN(GT) AGATE_BIN(GE) AGATE_BIN(And) AGATE_BIN(Or)
#undef AGATE_BIN
    case ExprKind::kNot: return {e.as<Not>()->a};
    case ExprKind::kCast: return {e.as<Cast>()->value};
    case ExprKind::kSelect: return {e.as<Select>()->condition, e.as<Select>()->true_value, e.as<Select>()->false_value};
    default: return {};
  }
}

}  // namespace schedule_ops_detail
}  // namespace lower
}  // namespace agate
