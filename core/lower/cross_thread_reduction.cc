// Reductions across the threads of a GPU block, part of ScheduleLowerer
// (schedule_lowerer.h).
//
// A reduce leaf bound to threadIdx.x: every thread accumulates its share in a
// local buffer (the serial reduce loops), a thread_allreduce marker combines
// the threads' buffers (core/lower/gpu_allreduce.h), and thread 0 writes the
// result. The thread loop is hoisted outside the serial reduce loops so that
// every thread reaches the combine step.

#include "core/lower/schedule_lowerer.h"

#include <string>
#include <vector>

#include "core/ir/printer.h"
#include "core/support/error.h"

namespace agate {
namespace lower {
namespace schedule_ops_detail {

using namespace ir;  // NOLINT
using te::AttachType;

// The index of the reduce leaf bound to threadIdx.x, or -1.
int ScheduleLowerer::CrossThreadLeaf(const StageState* s) const {
  for (size_t i = 0; i < s->leaves().size(); ++i) {
    const IterVar& iv = s->leaves()[i];
    const IterVarAttr* attr = AttrOf(s, iv);
    if (iv.kind() == IterVarKind::kCommReduce && attr && attr->for_kind == ForKind::kThreadBinding) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

Stmt ScheduleLowerer::MakeCrossThreadReduction(StageState* s) {
  int n = static_cast<int>(s->leaves().size());
  int thread_leaf = CrossThreadLeaf(s);
  const IterVar& tv = s->leaves()[thread_leaf];
  int p = n;
  for (int i = 0; i < n; ++i) {
    if (s->leaves()[i].kind() == IterVarKind::kCommReduce) {
      p = i;
      break;
    }
  }
  for (int i = p; i < n; ++i) {
    AGATE_REQUIRE(s->leaves()[i].kind() == IterVarKind::kCommReduce, kIllegalSchedule)
        << "stage " << s->name() << ": the reduction across threads (axis " << tv.name()
        << " bound to threadIdx.x) needs its reduction loops innermost, but data axis " << s->leaves()[i].name()
        << " is inside them";
  }
  int64_t threads = 0;
  AGATE_REQUIRE(is_const_int(s->extent.at(tv.get()), &threads) && threads >= 1 && threads <= 1024 &&
                    (threads & (threads - 1)) == 0,
                kIllegalSchedule)
      << "stage " << s->name() << ": the reduction across threads binds axis " << tv.name() << " of extent "
      << s->extent.at(tv.get()) << " to threadIdx.x; it must be a power of two up to 1024";
  const Reduce* r = s->body[0].as<Reduce>();
  std::vector<Tensor> outs = Outputs(s);
  std::vector<Expr> idx = OutputIndex(s);
  // One accumulator per output of the (tuple) reduction, private to each thread.
  std::vector<Buffer> acc;
  std::vector<Expr> lhs, rhs;
  for (size_t i = 0; i < outs.size(); ++i) {
    acc.push_back(CreateBuffer(outs[i].name() + ".red", outs[i].dtype(), {Expr(int64_t{1})}, MemoryScope::kLocal));
    lhs.push_back(Load::make(acc[i], Expr(int64_t{0})));
    rhs.push_back(Bind(s, r->source[i]));
  }
  auto assign = [&](const std::vector<Expr>& values) {
    std::vector<Stmt> stores;
    std::vector<Var> temps;
    for (size_t i = 0; i < acc.size(); ++i) {
      temps.push_back(Var(acc[i]->name + ".new", values[i].dtype()));
      stores.push_back(Store::make(acc[i], acc.size() == 1 ? values[i] : Expr(temps[i]), Expr(int64_t{0})));
    }
    Stmt st = Seq::make(stores);
    if (acc.size() > 1) {
      for (size_t i = acc.size(); i-- > 0;) st = LetStmt::make(temps[i], values[i], st);
    }
    return st;
  };
  std::vector<Expr> init;
  for (size_t i = 0; i < outs.size(); ++i) {
    init.push_back(r->init.empty() ? r->combiner.identity_element[i] : Bind(s, r->init[i]));
  }
  Stmt update = assign(r->combiner.Combine(lhs, rhs));
  Expr cond = an_.Simplify(Bind(s, r->condition));
  if (!is_one(cond)) update = IfThenElse::make(cond, update);
  // The guards of every reduce level (they may use the thread's index) wrap the update only.
  for (const Guard& g : s->guards) {
    if (g.level >= p) update = IfThenElse::make(g.condition, update);
  }
  for (int l = n - 1; l >= p; --l) {
    if (l == thread_leaf) continue;
    const IterVar& iv = s->leaves()[l];
    update = AttachChildren(s, l, update);
    const IterVarAttr* attr = AttrOf(s, iv);
    update = For::make(iv.var(), make_zero(DType::Index()), s->extent.at(iv.get()),
                       attr ? attr->for_kind : ForKind::kSerial, update, "");
  }
  std::vector<Expr> shuffled;
  for (const Expr& l : lhs) shuffled.push_back(Call::make(l.dtype(), CallOp::kShuffleXor, {l, Expr(0), Expr(0)}));
  Stmt combine = AttrStmt::make(attr::kThreadAllReduce, "threadIdx.x", Expr(threads),
                                assign(r->combiner.Combine(lhs, shuffled)));
  std::vector<Stmt> writes;
  for (size_t i = 0; i < outs.size(); ++i) writes.push_back(Provide::make(outs[i].node_ptr(), lhs[i], idx));
  Stmt write = IfThenElse::make(tv.var() == Expr(int64_t{0}), Seq::make(writes));
  Stmt body = Seq::make({assign(init), update, combine, write});
  for (size_t i = acc.size(); i-- > 0;) body = Allocate::make(acc[i], {Expr(int64_t{1})}, 16, MemoryScope::kLocal, body);
  AGATE_REQUIRE(!HasChildren(s, thread_leaf), kIllegalSchedule)
      << "stage " << s->name() << ": a stage is computed at axis " << tv.name()
      << ", which is bound to threadIdx.x for a reduction across threads";
  body = For::make(tv.var(), make_zero(DType::Index()), s->extent.at(tv.get()), ForKind::kThreadBinding, body,
                   "threadIdx.x");
  for (int l = p - 1; l >= 0; --l) body = WrapLevel(s, l, body, false);
  return body;
}

bool ScheduleLowerer::HasChildren(StageState* s, int level) const {
  const IterVar& iv = s->leaves()[level];
  for (auto& c : states_) {
    if (c->stage->attach_type == AttachType::kScope && c->stage->attach_stage.same_as(s->stage) &&
        c->stage->attach_ivar.same_as(iv))
      return true;
  }
  return false;
}

}  // namespace schedule_ops_detail
}  // namespace lower
}  // namespace agate
