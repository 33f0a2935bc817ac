// ScheduleOps, step 2: bound inference. From consumers to producers, the region of each stage
// that its attachment point needs, the extents and offsets of its loops, and the guards that
// keep over-approximated regions inside the operation's domain.
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

void ScheduleLowerer::InferBounds() {
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

bool ScheduleLowerer::Ready(const StageState* s) const {
  for (const StageState* c : s->consumers)
    if (!c->processed) return false;
  if (s->stage->attach_type == AttachType::kScope) return by_stage_.at(s->stage->attach_stage.get())->processed;
  return true;
}

std::vector<Range> ScheduleLowerer::FullDomain(const StageState* s) const {
  std::vector<Range> r;
  for (const IterVar& iv : s->op->axis) r.push_back(iv.dom());
  return r;
}

void ScheduleLowerer::InferStage(StageState* s) {
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

// The region of `s` that its consumers read. Each consumer's loops are relaxed
// twice: over the whole tiles its loops cover, and over the tiles cut back to
// the consumer's own domain (a tail tile needs fewer elements). Per dimension,
// the whole-tile region wins when it lies inside the stage's domain: a stage
// padded to whole tiles (a GEMM's C' over padded rows and columns) is then
// computed with constant extents, so its tail tiles run the same unguarded,
// vectorized, register-resident code as the others. Otherwise the cut-back
// region keeps the stage inside its domain.
std::vector<Range> ScheduleLowerer::InferRegion(StageState* s) {
  size_t ndim = s->op->axis.size();
  std::vector<IntervalSet> region(ndim), whole(ndim);
  std::vector<bool> seen(ndim, false), unbounded(ndim, false), whole_unbounded(ndim, false);
  if (s->consumers.empty()) return FullDomain(s);
  auto merge = [&](IntervalSet* into, const IntervalSet& is, bool first) {
    *into = first ? is : IntervalSet{an_.Simplify(ir::min(into->min, is.min)), an_.Simplify(ir::max(into->max, is.max))};
  };
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
          // The whole-tile set from the index written in the consumer's loop
          // variables: root variables that come from one fused loop stay
          // correlated (floordiv(f, 197)*197 + floormod(f, 197) is f, not [0, 196]
          // plus a multiple of 197 per root evaluated apart).
          Expr in_loops = an_.Simplify(Substitute(r->indices[d], c->root_value));
          IntervalSet ws = an_.EvalSet(in_loops, relax);
          if (!is.bounded()) {
            unbounded[d] = true;
            continue;
          }
          if (!ws.bounded()) whole_unbounded[d] = true;
          if (!whole_unbounded[d]) merge(&whole[d], ws, !seen[d]);
          merge(&region[d], is, !seen[d]);
          seen[d] = true;
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
    Expr dmax = an_.Simplify(full[d].min + full[d].extent - 1);
    bool whole_fits = !whole_unbounded[d] && an_.CanProve(whole[d].min >= full[d].min) && an_.CanProve(whole[d].max <= dmax);
    IntervalSet t = whole_fits ? whole[d] : Tighten(region[d], full[d]);
    out.emplace_back(t.min, an_.Simplify(t.max - t.min + 1));
  }
  return out;
}

// Narrows `set` to `dom` where that is provable, keeping a superset otherwise.
IntervalSet ScheduleLowerer::Tighten(IntervalSet set, const Range& dom) {
  Expr dmin = dom.min, dmax = an_.Simplify(dom.min + dom.extent - 1);
  if (!set.min.defined() || an_.CanProve(set.min < dmin)) set.min = dmin;
  if (!set.max.defined() || an_.CanProve(set.max > dmax)) set.max = dmax;
  return set;
}

void ScheduleLowerer::CheckCovers(const StageState* s, const StageState* consumer) {
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

void ScheduleLowerer::PassDown(StageState* s) {
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

void ScheduleLowerer::PassUp(StageState* s) {
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
bool ScheduleLowerer::AddGuard(StageState* s, const Expr& cond) {
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

}  // namespace schedule_ops_detail
}  // namespace lower
}  // namespace agate
