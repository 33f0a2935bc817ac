#include "core/lower/schedule_ops.h"

#include <algorithm>
#include <memory>
#include <sstream>
#include <unordered_map>

#include "core/ir/equality.h"
#include "core/ir/functor.h"
#include "core/ir/printer.h"
#include "core/ir/substitute.h"
#include "core/lower/analyzer.h"
#include "core/support/error.h"

namespace agate {
namespace lower {

using namespace ir;  // NOLINT
using te::AttachType;
using te::IterVarAttr;
using te::ComputeOpNode;
using te::OperationNode;
using te::Tensor;

namespace {

struct Guard {
  Expr condition;
  int level;          // index of the innermost own leaf it uses; -1 for none
  bool uses_reduce;   // involves a reduction leaf (not valid in the init nest)
};

struct StageState {
  te::Stage stage;
  const ComputeOpNode* op = nullptr;
  std::vector<Expr> body;  // after inlining
  bool is_arg = false;
  bool processed = false;
  std::vector<Range> region;
  std::unordered_map<const IterVarNode*, Expr> extent;
  std::unordered_map<const IterVarNode*, Expr> offset;
  VarMap root_value;
  std::vector<Guard> guards;
  std::vector<const IterVarNode*> attach_prefix;
  std::vector<const IterVarNode*> path;
  std::vector<StageState*> consumers;
  std::string name() const { return stage.name(); }
  const std::vector<IterVar>& leaves() const { return stage->leaf_iter_vars; }
};

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

class ScheduleLowerer {
 public:
  ScheduleLowerer(const te::Schedule& sch, const std::set<const OperationNode*>& arg_ops)
      : sch_(sch), arg_ops_(arg_ops) {}

  ScheduleOpsResult Run() {
    CollectStages();
    Validate();
    InferBounds();
    ScheduleOpsResult result;
    std::vector<StageState*> roots;
    for (auto& s : states_)
      if (s->stage->attach_type == AttachType::kRoot) roots.push_back(s.get());
    std::vector<Stmt> nests;
    for (StageState* s : roots) nests.push_back(MakeNest(s));
    Stmt body = Seq::make(nests);
    for (auto it = roots.rbegin(); it != roots.rend(); ++it) body = RealizeStage(*it, body);
    result.body = body;
    result.tensorize_calls = tensorize_calls_;
    for (auto& s : states_) {
      StageStorageInfo info;
      info.scope = s->stage->scope;
      info.storage_align = s->stage->storage_align;
      result.storage[s->stage->origin_op.get()] = info;
    }
    return result;
  }

 private:
  // ---- stages and inlining
  void CollectStages() {
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
  void CheckFreeVariables() {
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

  const IterVarAttr* AttrOf(const StageState* s, const IterVar& iv) const {
    auto it = s->stage->iter_var_attrs.find(iv.get());
    return it == s->stage->iter_var_attrs.end() ? nullptr : &it->second;
  }

  int LeafIndex(const StageState* s, const IterVar& iv) const {
    for (size_t i = 0; i < s->leaves().size(); ++i)
      if (s->leaves()[i].same_as(iv)) return static_cast<int>(i);
    return -1;
  }

  void Validate() {
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

  // ---- bound inference
  void InferBounds() {
    size_t done = 0;
    while (done < states_.size()) {
      bool progress = false;
      for (auto it = states_.rbegin(); it != states_.rend(); ++it) {
        StageState* s = it->get();
        if (s->processed || !Ready(s)) continue;
        InferStage(s);
        s->processed = true;
        ++done;
        progress = true;
      }
      if (!progress) {
        std::string names;
        for (auto& s : states_)
          if (!s->processed) names += (names.empty() ? "" : ", ") + s->name();
        AGATE_THROW(kIllegalSchedule) << "compute_at creates a cycle among stages " << names
                                      << " (a stage is computed inside a loop of a stage that it consumes)";
      }
    }
  }

  bool Ready(const StageState* s) const {
    for (const StageState* c : s->consumers)
      if (!c->processed) return false;
    if (s->stage->attach_type == AttachType::kScope) return by_stage_.at(s->stage->attach_stage.get())->processed;
    return true;
  }

  std::vector<Range> FullDomain(const StageState* s) const {
    std::vector<Range> r;
    for (const IterVar& iv : s->op->axis) r.push_back(iv.dom());
    return r;
  }

  void InferStage(StageState* s) {
    // Attach prefix: the loops enclosing this stage.
    if (s->stage->attach_type == AttachType::kScope) {
      StageState* parent = by_stage_.at(s->stage->attach_stage.get());
      int idx = LeafIndex(parent, s->stage->attach_ivar);
      s->attach_prefix = parent->attach_prefix;
      for (int i = 0; i <= idx; ++i) s->attach_prefix.push_back(parent->leaves()[i].get());
    }
    s->path = s->attach_prefix;
    for (const IterVar& iv : s->leaves()) s->path.push_back(iv.get());

    s->region = s->is_arg ? FullDomain(s) : InferRegion(s);
    PassDown(s);
    PassUp(s);
  }

  std::vector<Range> InferRegion(StageState* s) {
    size_t ndim = s->op->axis.size();
    std::vector<IntervalSet> region(ndim);
    std::vector<bool> seen(ndim, false), unbounded(ndim, false);
    if (s->consumers.empty()) return FullDomain(s);
    for (StageState* c : s->consumers) {
      CheckCovers(s, c);
      std::unordered_map<const VarNode*, IntervalSet> relax;
      for (size_t i = s->attach_prefix.size(); i < c->path.size(); ++i) {
        const IterVarNode* iv = c->path[i];
        relax[iv->var.get()] = {make_zero(DType::Index()), an_.Simplify(leaf_extent_.at(iv) - 1)};
      }
      // A shared buffer serves every thread of the block: its region is what all
      // of them read, so the consumer's enclosing threadIdx loops range too.
      if (s->stage->scope == MemoryScope::kShared) {
        for (size_t i = 0; i < s->attach_prefix.size(); ++i) {
          const IterVarNode* iv = c->path[i];
          auto tag = thread_tag_.find(iv);
          if (tag == thread_tag_.end() || tag->second.compare(0, 10, "threadIdx.") != 0) continue;
          relax[iv->var.get()] = {make_zero(DType::Index()), an_.Simplify(leaf_extent_.at(iv) - 1)};
        }
      }
      std::unordered_map<const VarNode*, IntervalSet> root_sets;
      for (const IterVar& root : c->op->root_iter_vars()) {
        IntervalSet set = an_.EvalSet(c->root_value.at(root.var().get()), relax);
        root_sets[root.var().get()] = Tighten(set, root.dom());
      }
      for (const Expr& b : c->body) {
        PostOrderVisit(b, [&](const Expr* e, const Stmt*) {
          if (!e || !e->as<TensorRead>()) return;
          const TensorRead* r = e->as<TensorRead>();
          if (te::AsTensor(r->producer).op().get() != s->stage->origin_op.get()) return;
          for (size_t d = 0; d < ndim; ++d) {
            IntervalSet is = an_.EvalSet(r->indices[d], root_sets);
            if (!is.bounded()) {
              unbounded[d] = true;
              continue;
            }
            if (!seen[d]) {
              region[d] = is;
              seen[d] = true;
            } else {
              region[d] = {an_.Simplify(ir::min(region[d].min, is.min)), an_.Simplify(ir::max(region[d].max, is.max))};
            }
          }
        });
      }
    }
    std::vector<Range> full = FullDomain(s);
    std::vector<Range> out;
    for (size_t d = 0; d < ndim; ++d) {
      if (!seen[d] || unbounded[d]) {
        out.push_back(full[d]);
        continue;
      }
      IntervalSet t = Tighten(region[d], full[d]);
      out.emplace_back(t.min, an_.Simplify(t.max - t.min + 1));
    }
    return out;
  }

  // Narrows `set` to `dom` where that is provable, keeping a superset otherwise.
  IntervalSet Tighten(IntervalSet set, const Range& dom) {
    Expr dmin = dom.min, dmax = an_.Simplify(dom.min + dom.extent - 1);
    if (!set.min.defined() || an_.CanProve(set.min < dmin)) set.min = dmin;
    if (!set.max.defined() || an_.CanProve(set.max > dmax)) set.max = dmax;
    return set;
  }

  void CheckCovers(const StageState* s, const StageState* consumer) {
    bool covers = consumer->path.size() >= s->attach_prefix.size() &&
                  std::equal(s->attach_prefix.begin(), s->attach_prefix.end(), consumer->path.begin());
    if (covers) return;
    std::ostringstream where;
    if (s->stage->attach_type == AttachType::kScope) {
      where << "compute_at of stage " << s->name() << " at " << s->stage->attach_stage.name() << "."
            << s->stage->attach_ivar.name();
    } else {
      where << "stage " << s->name();
    }
    AGATE_THROW(kIllegalSchedule) << where.str() << ": that loop does not cover the region needed by consumer stage "
                                  << consumer->name() << ", which is computed outside it";
  }

  void PassDown(StageState* s) {
    const std::vector<IterVar>& roots = s->stage->root_iter_vars;
    size_t ndata = s->op->axis.size();
    for (size_t i = 0; i < roots.size(); ++i) {
      Range r = i < ndata ? s->region[i] : roots[i].dom();
      s->extent[roots[i].get()] = an_.Simplify(r.extent);
    }
    for (const te::IterVarRelation& rel : s->stage->relations) {
      if (rel.kind == te::IterVarRelation::kSplit) {
        Expr e = s->extent.at(rel.parent.get());
        if (rel.factor.defined()) {
          s->extent[rel.inner.get()] = an_.Simplify(rel.factor);
          s->extent[rel.outer.get()] = an_.Simplify(floordiv(e + rel.factor - 1, rel.factor));
        } else {
          s->extent[rel.outer.get()] = an_.Simplify(rel.nparts);
          s->extent[rel.inner.get()] = an_.Simplify(floordiv(e + rel.nparts - 1, rel.nparts));
        }
      } else {
        s->extent[rel.fused.get()] = an_.Simplify(s->extent.at(rel.outer.get()) * s->extent.at(rel.inner.get()));
      }
    }
    for (const IterVar& leaf : s->leaves()) {
      Expr ext = s->extent.at(leaf.get());
      leaf_extent_[leaf.get()] = ext;
      an_.Bind(leaf.var(), make_zero(DType::Index()), ext);
    }
  }

  void PassUp(StageState* s) {
    for (const IterVar& leaf : s->leaves()) s->offset[leaf.get()] = leaf.var();
    std::vector<Expr> conds;
    const auto& rels = s->stage->relations;
    for (auto it = rels.rbegin(); it != rels.rend(); ++it) {
      const te::IterVarRelation& rel = *it;
      if (rel.kind == te::IterVarRelation::kSplit) {
        Expr f = s->extent.at(rel.inner.get());
        Expr e = s->extent.at(rel.parent.get());
        Expr parent = an_.Simplify(s->offset.at(rel.outer.get()) * f + s->offset.at(rel.inner.get()));
        s->offset[rel.parent.get()] = parent;
        // The split loops cover outer*inner points; the parent has e. Guard the excess.
        if (!an_.CanProve(s->extent.at(rel.outer.get()) * f == e)) conds.push_back(parent < e);
      } else {
        Expr fused = s->offset.at(rel.fused.get());
        Expr ie = s->extent.at(rel.inner.get());
        s->offset[rel.outer.get()] = an_.Simplify(floordiv(fused, ie));
        s->offset[rel.inner.get()] = an_.Simplify(floormod(fused, ie));
      }
    }
    const std::vector<IterVar>& roots = s->stage->root_iter_vars;
    size_t ndata = s->op->axis.size();
    for (size_t i = 0; i < roots.size(); ++i) {
      Expr min = i < ndata ? s->region[i].min : roots[i].dom().min;
      Expr value = an_.Simplify(min + s->offset.at(roots[i].get()));
      s->root_value[roots[i].var().get()] = value;
      if (i < ndata) {
        const Range& dom = roots[i].dom();
        conds.push_back(value >= dom.min);
        conds.push_back(value < dom.min + dom.extent);
      }
    }
    // Earlier guards (split extents) often imply later ones (domain checks of
    // fused axes): assume each kept guard while deciding the next.
    for (const Expr& c : conds) {
      if (AddGuard(s, c)) an_.Assume(s->guards.back().condition);
    }
    an_.ClearAssumptions();
  }

  // Adds a guard unless it is provably true or already present; true when added.
  bool AddGuard(StageState* s, const Expr& cond) {
    Expr c = an_.Simplify(cond);
    int64_t v;
    if (is_const_int(c, &v) && v) return false;
    for (const Guard& g : s->guards)
      if (StructuralEqual(g.condition, c)) return false;
    Guard g{c, -1, false};
    for (size_t i = 0; i < s->leaves().size(); ++i) {
      const IterVar& leaf = s->leaves()[i];
      if (UsesVar(c, [&](const VarNode* x) { return x == leaf.var().get(); })) {
        g.level = static_cast<int>(i);
        if (leaf.kind() == IterVarKind::kCommReduce) g.uses_reduce = true;
      }
    }
    s->guards.push_back(g);
    return true;
  }

  // ---- loop nests
  std::vector<Tensor> Outputs(const StageState* s) const {
    std::vector<Tensor> outs;
    for (int i = 0; i < s->stage->origin_op->num_outputs(); ++i) outs.push_back(s->stage->origin_op->output(i));
    return outs;
  }

  std::vector<Expr> OutputIndex(const StageState* s) const {
    std::vector<Expr> idx;
    for (const IterVar& iv : s->op->axis) idx.push_back(s->root_value.at(iv.var().get()));
    return idx;
  }

  Expr Bind(const StageState* s, const Expr& e) { return Substitute(e, s->root_value); }

  Stmt MakeCompute(const StageState* s) {
    std::vector<Tensor> outs = Outputs(s);
    std::vector<Expr> idx = OutputIndex(s);
    std::vector<Stmt> provides;
    for (size_t i = 0; i < outs.size(); ++i) provides.push_back(Provide::make(outs[i].node_ptr(), Bind(s, s->body[i]), idx));
    return Seq::make(provides);
  }

  Stmt MakeInit(const StageState* s) {
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

  Stmt MakeUpdate(const StageState* s) {
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

  Stmt WrapLevel(StageState* s, int level, Stmt body, bool init_nest) {
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

  Stmt AttachChildren(StageState* s, int level, Stmt body) {
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

  Stmt RealizeStage(StageState* s, Stmt body) {
    if (s->is_arg) return body;
    std::vector<Tensor> outs = Outputs(s);
    for (auto it = outs.rbegin(); it != outs.rend(); ++it)
      body = Realize::make(it->node_ptr(), s->region, s->stage->scope, body);
    return body;
  }

  Stmt MakeNest(StageState* s) {
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

  // ---- cross-thread reductions
  //
  // A reduce leaf bound to threadIdx.x: every thread accumulates its share in a
  // local buffer (the serial reduce loops), a thread_allreduce marker combines
  // the threads' buffers (core/lower/gpu_allreduce.h), and thread 0 writes the
  // result. The thread loop is hoisted outside the serial reduce loops so that
  // every thread reaches the combine step.

  // The index of the reduce leaf bound to threadIdx.x, or -1.
  int CrossThreadLeaf(const StageState* s) const {
    for (size_t i = 0; i < s->leaves().size(); ++i) {
      const IterVar& iv = s->leaves()[i];
      const IterVarAttr* attr = AttrOf(s, iv);
      if (iv.kind() == IterVarKind::kCommReduce && attr && attr->for_kind == ForKind::kThreadBinding) {
        return static_cast<int>(i);
      }
    }
    return -1;
  }

  Stmt MakeCrossThreadReduction(StageState* s) {
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

  bool HasChildren(StageState* s, int level) const {
    const IterVar& iv = s->leaves()[level];
    for (auto& c : states_) {
      if (c->stage->attach_type == AttachType::kScope && c->stage->attach_stage.same_as(s->stage) &&
          c->stage->attach_ivar.same_as(iv))
        return true;
    }
    return false;
  }

  // ---- tensorize
  [[noreturn]] void TensorizeError(const StageState* s, int level, const std::string& why) {
    AGATE_THROW(kIllegalSchedule) << "tensorize on stage " << s->name() << ", axis " << s->leaves()[level].name()
                                  << ": " << why;
  }

  Stmt MakeTensorizedNest(StageState* s, int level, const std::shared_ptr<const te::TensorIntrin>& intrin) {
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
    Stmt body = AttrStmt::make(attr::kTensorize, intrin->name, Expr(id), Evaluate::make(Expr(0)));
    for (int l = level - 1; l >= 0; --l) body = WrapLevel(s, l, body, false);
    return WrapLevel(s, -1, body, false);
  }

  static std::vector<Expr> Children(const Expr& e) {
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

  std::vector<TensorizeCall> tensorize_calls_;
  te::Schedule sch_;
  std::set<const OperationNode*> arg_ops_;
  std::vector<std::unique_ptr<StageState>> states_;
  std::map<const te::StageNode*, StageState*> by_stage_;
  std::map<const OperationNode*, StageState*> by_origin_;
  std::unordered_map<const IterVarNode*, Expr> leaf_extent_;
  std::unordered_map<const IterVarNode*, std::string> thread_tag_;  // every axis bound to a GPU index
  Analyzer an_;
};

}  // namespace

ScheduleOpsResult ScheduleOps(const te::Schedule& sch, const std::set<const te::OperationNode*>& arg_ops) {
  ScheduleLowerer lowerer(sch, arg_ops);
  return lowerer.Run();
}

}  // namespace lower
}  // namespace agate
