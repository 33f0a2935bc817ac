// ScheduleOps, step 1: collect the stages, inline the compute_inline ones into their
// consumers, and refuse illegal schedules (free variables, misplaced vectorize, attachments).
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

namespace {

// Substitutes inlined stages into a body.
class Inliner : public IRMutator {
 public:
  struct Inlined {
    std::vector<IterVar> axis;
    std::vector<Expr> body;
  };
  explicit Inliner(const std::map<const OperationNode*, Inlined>& inlined) : inlined_(inlined) {}
  Expr VisitExpr_(const TensorRead* op, const Expr& self) override {
    Expr e = IRMutator::VisitExpr_(op, self);
    const TensorRead* r = e.as<TensorRead>();
    Tensor t = te::AsTensor(r->producer);
    auto it = inlined_.find(t.op().get());
    if (it == inlined_.end()) return e;
    VarMap map;
    for (size_t d = 0; d < it->second.axis.size(); ++d) map[it->second.axis[d].var().get()] = r->indices[d];
    return Substitute(it->second.body.at(t.value_index()), map);
  }

 private:
  const std::map<const OperationNode*, Inlined>& inlined_;
};

std::string AxisList(const std::vector<IterVar>& ivs) {
  std::string s;
  for (const IterVar& iv : ivs) s += (s.empty() ? "" : ", ") + iv.name();
  return s;
}

}  // namespace

void ScheduleLowerer::CollectStages() {
  std::map<const OperationNode*, Inliner::Inlined> inlined;
  for (const te::Stage& stage : sch_->stages) {
    if (stage->op->kind != te::OpKind::kCompute) continue;
    const auto* op = static_cast<const ComputeOpNode*>(stage->op.get());
    Inliner inliner(inlined);
    std::vector<Expr> body;
    for (const Expr& b : op->body) body.push_back(inliner.VisitExpr(b));
    if (stage->attach_type == AttachType::kInline) {
      AGATE_REQUIRE(!arg_ops_.count(stage->origin_op.get()), kIllegalSchedule)
          << "compute_inline on stage " << stage.name() << ": it is a kernel argument, so it must be stored";
      inlined[stage->origin_op.get()] = {op->axis, body};
      continue;
    }
    auto state = std::make_unique<StageState>();
    state->stage = stage;
    state->op = op;
    state->body = body;
    state->is_arg = stage->is_output || arg_ops_.count(stage->origin_op.get()) > 0;
    for (const auto& [iv, attr] : stage->iter_var_attrs) {
      if (attr.for_kind == ForKind::kThreadBinding) thread_tag_[iv] = attr.thread_tag;
    }
    by_stage_[stage.get()] = state.get();
    by_origin_[stage->origin_op.get()] = state.get();
    states_.push_back(std::move(state));
  }
  CheckFreeVariables();
  for (auto& s : states_) {
    for (const Expr& b : s->body) {
      PostOrderVisit(b, [&](const Expr* e, const Stmt*) {
        if (!e || !e->as<TensorRead>()) return;
        Tensor t = te::AsTensor(e->as<TensorRead>()->producer);
        auto it = by_origin_.find(t.op().get());
        if (it == by_origin_.end()) return;
        auto& cons = it->second->consumers;
        if (std::find(cons.begin(), cons.end(), s.get()) == cons.end()) cons.push_back(s.get());
      });
    }
  }
}

// A compute body may use its own axes, its reduction axes and symbolic shape
// variables; anything else (a reduce_axis used outside its reduction, an axis
// of another compute) has no value in the loop nest.
void ScheduleLowerer::CheckFreeVariables() {
  std::set<const VarNode*> shape_vars;
  auto collect = [&](const Expr& e) {
    if (!e.defined()) return;
    PostOrderVisit(e, [&](const Expr* x, const Stmt*) {
      if (x && x->as<VarNode>()) shape_vars.insert(x->as<VarNode>());
    });
  };
  for (const te::Stage& stage : sch_->stages) {
    for (const Expr& e : stage->op->output_shape(0)) collect(e);
    if (const auto* c = dynamic_cast<const ComputeOpNode*>(stage->op.get())) {
      for (const IterVar& iv : c->reduce_axis) {
        collect(iv.dom().min);
        collect(iv.dom().extent);
      }
    }
  }
  for (auto& s : states_) {
    std::set<const VarNode*> allowed = shape_vars;
    for (const IterVar& iv : s->op->root_iter_vars()) allowed.insert(iv.var().get());
    for (const Expr& b : s->body) {
      std::set<const VarNode*> bound;  // combiner operands of reductions
      if (const Reduce* r = b.as<Reduce>()) {
        for (const Var& v : r->combiner.lhs) bound.insert(v.get());
        for (const Var& v : r->combiner.rhs) bound.insert(v.get());
      }
      PostOrderVisit(b, [&](const Expr* e, const Stmt*) {
        if (!e) return;
        if (const Let* let = e->as<Let>()) bound.insert(let->var.get());
      });
      PostOrderVisit(b, [&](const Expr* e, const Stmt*) {
        const VarNode* v = e ? e->as<VarNode>() : nullptr;
        if (!v || allowed.count(v) || bound.count(v)) return;
        AGATE_THROW(kInvalidArgument) << "compute " << s->name() << " uses variable " << v->name
                                      << ", which is neither one of its axes nor a shape variable (a reduce_axis "
                                         "used outside its reduction?)";
      });
    }
  }
}

const IterVarAttr* ScheduleLowerer::AttrOf(const StageState* s, const IterVar& iv) const {
  auto it = s->stage->iter_var_attrs.find(iv.get());
  return it == s->stage->iter_var_attrs.end() ? nullptr : &it->second;
}

int ScheduleLowerer::LeafIndex(const StageState* s, const IterVar& iv) const {
  for (size_t i = 0; i < s->leaves().size(); ++i)
    if (s->leaves()[i].same_as(iv)) return static_cast<int>(i);
  return -1;
}

void ScheduleLowerer::Validate() {
  for (auto& s : states_) {
    const te::StageNode* st = s->stage.get();
    for (const auto& [ivnode, attr] : st->iter_var_attrs) {
      const IterVar* iv = nullptr;
      for (const IterVar& v : st->all_iter_vars)
        if (v.get() == ivnode) iv = &v;
      AGATE_CHECK(iv != nullptr) << "attribute on an axis outside stage " << s->name();
      int idx = LeafIndex(s.get(), *iv);
      bool marked = attr.for_kind != ForKind::kSerial || !attr.pragmas.empty() || attr.tensor_intrin;
      AGATE_REQUIRE(idx >= 0 || !marked, kIllegalSchedule)
          << "stage " << s->name() << ": axis " << iv->name()
          << " was marked (" << ForKindName(attr.for_kind) << ") but then split or fused; mark its new loops instead";
      if (attr.for_kind == ForKind::kVectorized) {
        AGATE_REQUIRE(idx == static_cast<int>(s->leaves().size()) - 1, kIllegalSchedule)
            << "vectorize on stage " << s->name() << ": axis " << iv->name()
            << " is not the innermost loop (loop order: " << AxisList(s->leaves()) << ")";
      }
    }
    if (st->attach_type == AttachType::kScope) {
      AGATE_REQUIRE(!s->is_arg, kIllegalSchedule)
          << "compute_at of stage " << s->name() << ": it is a kernel argument, so the whole tensor is "
          << "computed; compute it at the root";
      const te::StageNode* parent = st->attach_stage.get();
      auto it = by_stage_.find(parent);
      AGATE_REQUIRE(it != by_stage_.end(), kIllegalSchedule)
          << "compute_at of stage " << s->name() << " at stage " << st->attach_stage.name()
          << ": that stage is inlined, so it has no loops";
      int idx = LeafIndex(it->second, st->attach_ivar);
      AGATE_REQUIRE(idx >= 0, kIllegalSchedule)
          << "compute_at of stage " << s->name() << " at " << st->attach_stage.name() << "."
          << st->attach_ivar.name() << ": that axis is no longer a loop (it was split or fused)";
      const IterVarAttr* attr = AttrOf(it->second, st->attach_ivar);
      AGATE_REQUIRE(!attr || attr->for_kind != ForKind::kVectorized, kIllegalSchedule)
          << "vectorize on stage " << st->attach_stage.name() << ": axis " << st->attach_ivar.name()
          << " is not the innermost loop (stage " << s->name() << " is computed inside it)";
    }
  }
}

}  // namespace schedule_ops_detail
}  // namespace lower
}  // namespace agate
