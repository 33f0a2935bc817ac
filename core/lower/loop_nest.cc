// ScheduleOps, step 3: loop-nest construction. Each stage's loops, init and update nests,
// its attached children at their levels, and the Realize of its region.
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

std::vector<Tensor> ScheduleLowerer::Outputs(const StageState* s) const {
  std::vector<Tensor> outs;
  for (int i = 0; i < s->stage->origin_op->num_outputs(); ++i) outs.push_back(s->stage->origin_op->output(i));
  return outs;
}

std::vector<Expr> ScheduleLowerer::OutputIndex(const StageState* s) const {
  std::vector<Expr> idx;
  for (const IterVar& iv : s->op->axis) idx.push_back(s->root_value.at(iv.var().get()));
  return idx;
}

Expr ScheduleLowerer::Bind(const StageState* s, const Expr& e) { return Substitute(e, s->root_value); }

Stmt ScheduleLowerer::MakeCompute(const StageState* s) {
  std::vector<Tensor> outs = Outputs(s);
  std::vector<Expr> idx = OutputIndex(s);
  std::vector<Stmt> provides;
  for (size_t i = 0; i < outs.size(); ++i) provides.push_back(Provide::make(outs[i].node_ptr(), Bind(s, s->body[i]), idx));
  return Seq::make(provides);
}

Stmt ScheduleLowerer::MakeInit(const StageState* s) {
  const Reduce* r = s->body[0].as<Reduce>();
  std::vector<Tensor> outs = Outputs(s);
  std::vector<Expr> idx = OutputIndex(s);
  std::vector<Stmt> provides;
  for (size_t i = 0; i < outs.size(); ++i) {
    Expr init = r->init.empty() ? r->combiner.identity_element[i] : Bind(s, r->init[i]);
    provides.push_back(Provide::make(outs[i].node_ptr(), init, idx));
  }
  return Seq::make(provides);
}

Stmt ScheduleLowerer::MakeUpdate(const StageState* s) {
  const Reduce* r = s->body[0].as<Reduce>();
  std::vector<Tensor> outs = Outputs(s);
  std::vector<Expr> idx = OutputIndex(s);
  std::vector<Expr> lhs, rhs;
  for (size_t i = 0; i < outs.size(); ++i) {
    lhs.push_back(TensorRead::make(outs[i].node_ptr(), idx));
    rhs.push_back(Bind(s, r->source[i]));
  }
  std::vector<Expr> values = r->combiner.Combine(lhs, rhs);
  Stmt update;
  if (outs.size() == 1) {
    update = Provide::make(outs[0].node_ptr(), values[0], idx);
  } else {
    // A tuple combiner reads every accumulator before writing any.
    std::vector<Var> temps;
    std::vector<Stmt> provides;
    for (size_t i = 0; i < outs.size(); ++i) {
      temps.push_back(Var(outs[i].name() + ".new", values[i].dtype()));
      provides.push_back(Provide::make(outs[i].node_ptr(), temps[i], idx));
    }
    update = Seq::make(provides);
    for (size_t i = outs.size(); i-- > 0;) update = LetStmt::make(temps[i], values[i], update);
  }
  Expr cond = an_.Simplify(Bind(s, r->condition));
  if (!is_one(cond)) update = IfThenElse::make(cond, update);
  return update;
}

Stmt ScheduleLowerer::WrapLevel(StageState* s, int level, Stmt body, bool init_nest) {
  for (const Guard& g : s->guards) {
    if (g.level != level || (init_nest && g.uses_reduce)) continue;
    body = IfThenElse::make(g.condition, body);
  }
  if (level < 0) return body;
  if (!init_nest) body = AttachChildren(s, level, body);
  const IterVar& iv = s->leaves()[level];
  const IterVarAttr* attr = AttrOf(s, iv);
  ForKind kind = attr ? attr->for_kind : ForKind::kSerial;
  body = For::make(iv.var(), make_zero(DType::Index()), s->extent.at(iv.get()), kind, body,
                   attr ? attr->thread_tag : "");
  if (attr) {
    for (auto it = attr->pragmas.rbegin(); it != attr->pragmas.rend(); ++it)
      body = AttrStmt::make(std::string(attr::kPragmaPrefix) + it->first, s->name(), it->second, body);
  }
  return body;
}

Stmt ScheduleLowerer::AttachChildren(StageState* s, int level, Stmt body) {
  const IterVar& iv = s->leaves()[level];
  std::vector<StageState*> children;
  for (auto& c : states_) {
    if (c->stage->attach_type == AttachType::kScope && c->stage->attach_stage.same_as(s->stage) &&
        c->stage->attach_ivar.same_as(iv))
      children.push_back(c.get());
  }
  if (children.empty()) return body;
  std::vector<Stmt> seq;
  for (StageState* c : children) seq.push_back(MakeNest(c));
  seq.push_back(body);
  body = Seq::make(seq);
  for (auto it = children.rbegin(); it != children.rend(); ++it) body = RealizeStage(*it, body);
  return body;
}

Stmt ScheduleLowerer::RealizeStage(StageState* s, Stmt body) {
  if (s->is_arg) return body;
  std::vector<Tensor> outs = Outputs(s);
  for (auto it = outs.rbegin(); it != outs.rend(); ++it)
    body = Realize::make(it->node_ptr(), s->region, s->stage->scope, body);
  return body;
}

Stmt ScheduleLowerer::MakeNest(StageState* s) {
  int n = static_cast<int>(s->leaves().size());
  for (int l = 0; l < n; ++l) {
    const IterVarAttr* attr = AttrOf(s, s->leaves()[l]);
    if (attr && attr->tensor_intrin) return MakeTensorizedNest(s, l, attr->tensor_intrin);
  }
  Stmt body;
  if (s->op->is_reduction() && CrossThreadLeaf(s) >= 0) {
    body = MakeCrossThreadReduction(s);
  } else if (s->op->is_reduction()) {
    int p = n;
    for (int i = 0; i < n; ++i) {
      if (s->leaves()[i].kind() == IterVarKind::kCommReduce) {
        p = i;
        break;
      }
    }
    Stmt update = MakeUpdate(s);
    for (int l = n - 1; l >= p; --l) update = WrapLevel(s, l, update, false);
    Stmt init = MakeInit(s);
    for (int l = n - 1; l >= p; --l) {
      if (s->leaves()[l].kind() == IterVarKind::kCommReduce) {
        for (const Guard& g : s->guards)
          if (g.level == l && !g.uses_reduce) init = IfThenElse::make(g.condition, init);
        continue;
      }
      init = WrapLevel(s, l, init, true);
    }
    body = Seq::make({init, update});
    for (int l = p - 1; l >= 0; --l) body = WrapLevel(s, l, body, false);
  } else {
    body = MakeCompute(s);
    for (int l = n - 1; l >= 0; --l) body = WrapLevel(s, l, body, false);
  }
  return WrapLevel(s, -1, body, false);
}

}  // namespace schedule_ops_detail
}  // namespace lower
}  // namespace agate
