#include "core/lower/gpu_sync.h"

#include <algorithm>
#include <set>
#include <unordered_set>
#include <vector>

#include "core/ir/equality.h"
#include "core/ir/functor.h"
#include "core/ir/printer.h"
#include "core/ir/substitute.h"
#include "core/lower/analyzer.h"
#include "core/lower/gpu_bind.h"
#include "core/support/error.h"

namespace agate {
namespace lower {

using namespace ir;  // NOLINT

namespace {

struct Access {
  const VarNode* buffer;
  std::string name;
  Expr index;   // lets substituted
  bool write;
  bool owned;   // each thread of the block touches its own elements through this index
  int64_t element_bytes;
};

struct Summary {
  std::vector<Access> all;   // every access
  std::vector<Access> head;  // before the first barrier inside (all when there is none)
  std::vector<Access> tail;  // after the last barrier inside
  bool has_sync = false;
};

void Add(std::vector<Access>* to, const Access& a) {
  for (const Access& b : *to) {
    if (b.buffer == a.buffer && b.write == a.write && b.owned == a.owned && StructuralEqual(b.index, a.index)) return;
  }
  to->push_back(a);
}
void AddAll(std::vector<Access>* to, const std::vector<Access>& from) {
  for (const Access& a : from) Add(to, a);
}

Summary NoSync(std::vector<Access> all) {
  Summary s;
  s.all = all;
  s.head = all;
  s.tail = std::move(all);
  return s;
}

// Sums of digits of one value recombine: floormod(floordiv(x, a), b) * a +
// floordiv(x, a * b) * (a * b) == floordiv(x, a) * a for any integer x and
// positive a, b. A fused loop's index, split back into the dimensions of a
// buffer and flattened again (the index of every stage scheduled by fusing its
// axes), thereby folds back into the fused index, whose dependence on the
// thread indices is affine again.
class MixedRadix {
 public:
  static Expr Fold(const Expr& e) {
    MixedRadix m;
    m.Collect(e, 1);
    if (m.terms_.size() < 2) return e;
    bool changed = false;
    for (bool progress = true; progress;) {
      progress = false;
      for (size_t i = 0; i < m.terms_.size() && !progress; ++i) {
        for (size_t j = 0; j < m.terms_.size() && !progress; ++j) {
          if (i != j && m.Combine(i, j)) progress = changed = true;
        }
      }
    }
    if (!changed) return e;
    Expr out = Expr(m.constant_);
    for (const Term& t : m.terms_) out = out + t.Value() * Expr(t.coeff);
    return out;
  }

 private:
  // coeff * floormod(floordiv(x, a), b) (b > 0: a digit) or coeff * floordiv(x, a) (b == 0).
  struct Term {
    int64_t coeff;
    Expr x;
    int64_t a, b;
    Expr Value() const {
      Expr high = a == 1 ? x : floordiv(x, Expr(a));
      return b > 0 ? floormod(high, Expr(b)) : high;
    }
  };

  void Collect(const Expr& e, int64_t coeff) {
    int64_t c = 0;
    if (is_const_int(e, &c)) {
      constant_ += coeff * c;
    } else if (const ir::Add* add = e.as<ir::Add>()) {
      Collect(add->a, coeff);
      Collect(add->b, coeff);
    } else if (const Sub* sub = e.as<Sub>()) {
      Collect(sub->a, coeff);
      Collect(sub->b, -coeff);
    } else if (const Mul* mul = e.as<Mul>(); mul && is_const_int(mul->b, &c)) {
      Collect(mul->a, coeff * c);
    } else if (const Mul* mul2 = e.as<Mul>(); mul2 && is_const_int(mul2->a, &c)) {
      Collect(mul2->b, coeff * c);
    } else {
      terms_.push_back(Atom(e, coeff));
    }
  }

  static Term Atom(const Expr& e, int64_t coeff) {
    int64_t a = 0, b = 0;
    if (const FloorMod* mod = e.as<FloorMod>(); mod && is_const_int(mod->b, &b) && b > 0) {
      if (const FloorDiv* div = mod->a.as<FloorDiv>(); div && is_const_int(div->b, &a) && a > 0) {
        return Term{coeff, div->a, a, b};
      }
      return Term{coeff, mod->a, 1, b};
    }
    if (const FloorDiv* div = e.as<FloorDiv>(); div && is_const_int(div->b, &a) && a > 0) {
      return Term{coeff, div->a, a, 0};
    }
    return Term{coeff, e, 1, 0};
  }

  // digit(x, a, b) * c + floordiv(x, a * b) * c * b -> floordiv(x, a) * c.
  bool Combine(size_t i, size_t j) {
    const Term& digit = terms_[i];
    const Term& high = terms_[j];
    if (digit.b <= 0 || high.b != 0 || high.a != digit.a * digit.b || high.coeff != digit.coeff * digit.b) return false;
    if (!StructuralEqual(digit.x, high.x)) return false;
    Term folded{digit.coeff, digit.x, digit.a, 0};
    terms_.erase(terms_.begin() + std::max(i, j));
    terms_.erase(terms_.begin() + std::min(i, j));
    terms_.push_back(folded);
    return true;
  }

  std::vector<Term> terms_;
  int64_t constant_ = 0;
};

// Whether an index maps distinct points (thread indices and loop values, each
// in [0, extent)) to distinct elements. The index, a sum of constant multiples
// of "digits" of the variables (v, floordiv(v, a), floormod(v, b),
// floormod(floordiv(v, a), b)), is injective when each variable's digits
// decompose it completely (a radix chain 1, b1, b1*b2, ... covering its
// extent) and the digits' coefficients are a mixed radix: each larger than the
// span of all smaller ones. Terms without the variables are the same at every
// point; any other use of a variable proves nothing.
class IndexDigits {
 public:
  static bool Injective(const Expr& index, const std::unordered_map<const VarNode*, int64_t>& extent) {
    IndexDigits d(extent);
    if (!d.Collect(index, 1)) return false;
    std::vector<std::pair<int64_t, int64_t>> radix;  // |coefficient|, digit extent
    for (const auto& [var, n] : extent) {
      std::vector<Digit>& digits = d.digits_[var];
      if (digits.empty()) return false;  // the variable does not change the element
      std::sort(digits.begin(), digits.end(), [](const Digit& x, const Digit& y) { return x.a < y.a; });
      int64_t next = 1;
      for (const Digit& g : digits) {
        if (g.a != next) return false;
        int64_t b = g.b > 0 ? g.b : (n + g.a - 1) / g.a;
        radix.emplace_back(g.coeff < 0 ? -g.coeff : g.coeff, std::min(b, (n + g.a - 1) / g.a));
        next = g.a * b;
      }
      if (next < n) return false;
    }
    std::sort(radix.begin(), radix.end());
    int64_t reach = 0;
    for (const auto& [c, b] : radix) {
      if (b <= 1) continue;
      if (c <= reach) return false;
      reach += c * (b - 1);
    }
    return true;
  }

 private:
  struct Digit {
    int64_t coeff, a, b;  // coeff * floormod(floordiv(v, a), b); b == 0: coeff * floordiv(v, a)
  };
  explicit IndexDigits(const std::unordered_map<const VarNode*, int64_t>& extent) : extent_(extent) {}

  bool Uses(const Expr& e) const {
    return UsesVar(e, [&](const VarNode* v) { return extent_.count(v) != 0; });
  }

  bool Collect(const Expr& e, int64_t coeff) {
    int64_t c = 0;
    if (const ir::Add* add = e.as<ir::Add>()) return Collect(add->a, coeff) && Collect(add->b, coeff);
    if (const Sub* sub = e.as<Sub>()) return Collect(sub->a, coeff) && Collect(sub->b, -coeff);
    if (const Mul* mul = e.as<Mul>()) {
      if (is_const_int(mul->b, &c)) return Collect(mul->a, coeff * c);
      if (is_const_int(mul->a, &c)) return Collect(mul->b, coeff * c);
    }
    if (!Uses(e)) return true;
    const VarNode* v = e.as<VarNode>();
    int64_t a = 1, b = 0;
    Expr x = e;
    if (const FloorMod* mod = x.as<FloorMod>(); mod && is_const_int(mod->b, &b) && b > 0) x = mod->a;
    if (const FloorDiv* div = x.as<FloorDiv>(); div && is_const_int(div->b, &a) && a > 0) x = div->a;
    v = x.as<VarNode>();
    if (!v || !extent_.count(v)) return false;
    digits_[v].push_back(Digit{coeff, a, b});
    return true;
  }

  const std::unordered_map<const VarNode*, int64_t>& extent_;
  std::unordered_map<const VarNode*, std::vector<Digit>> digits_;
};

Stmt SyncStmt() { return Evaluate::make(Call::make(DType::Int(32), CallOp::kSyncThreads, {})); }

bool IsSync(const Stmt& s) {
  const Evaluate* e = s.as<Evaluate>();
  const Call* c = e ? e->value.as<Call>() : nullptr;
  return c && c->op == CallOp::kSyncThreads;
}

class Planner {
 public:
  explicit Planner(const LaunchParts& parts) : parts_(parts) {
    for (const LaunchParts::SharedBuffer& b : parts.shared) {
      shared_bytes_[b.buffer->data.get()] = {b.offset, b.offset + b.bytes()};
    }
    for (int d = 0; d < 3; ++d) {
      if (!parts.thread_vars[d].defined()) continue;
      thread_dependent_.insert(parts.thread_vars[d].get());
      an_.Bind(parts.thread_vars[d], make_zero(DType::Index()), Expr(parts.block[d]));
    }
    PostOrderVisit(parts.code, [&](const Expr*, const Stmt* s) {
      const Store* st = s ? s->as<Store>() : nullptr;
      if (st && st->buffer->scope != MemoryScope::kLocal) written_.insert(st->buffer->data.get());
    });
  }

  std::pair<Stmt, Summary> Plan(const Stmt& s, bool uniform) {
    switch (s.kind()) {
      case StmtKind::kSeq: return PlanSeq(s.as<Seq>()->stmts, uniform);
      case StmtKind::kFor: return PlanFor(s.as<For>(), uniform);
      case StmtKind::kIfThenElse: return PlanIf(s.as<IfThenElse>(), uniform);
      case StmtKind::kLetStmt: {
        const LetStmt* op = s.as<LetStmt>();
        Expr value = Inline(op->value);
        lets_[op->var.get()] = value;
        if (ThreadDependent(value)) thread_dependent_.insert(op->var.get());
        auto [body, summary] = Plan(op->body, uniform);
        Summary out = summary;
        std::vector<Access> loads = Loads(op->value);
        if (!loads.empty()) out = Prepend(loads, summary);
        return {body.same_as(op->body) ? s : LetStmt::make(op->var, op->value, body), out};
      }
      case StmtKind::kAllocate: {
        const Allocate* op = s.as<Allocate>();
        auto [body, summary] = Plan(op->body, uniform);
        return {body.same_as(op->body) ? s
                                       : Allocate::make(op->buffer, op->extents, op->alignment, op->scope, body,
                                                        op->workspace_offset),
                summary};
      }
      case StmtKind::kAttrStmt: {
        const AttrStmt* op = s.as<AttrStmt>();
        auto [body, summary] = Plan(op->body, uniform);
        return {body.same_as(op->body) ? s : AttrStmt::make(op->key, op->node_name, op->value, body), summary};
      }
      case StmtKind::kStore: {
        const Store* op = s.as<Store>();
        std::vector<Access> accesses = Loads(op->value);
        AddAll(&accesses, Loads(op->index));
        if (op->predicate.defined()) AddAll(&accesses, Loads(op->predicate));
        if (written_.count(op->buffer->data.get())) Add(&accesses, MakeAccess(op->buffer, op->index, true));
        return {s, NoSync(accesses)};
      }
      case StmtKind::kEvaluate: {
        if (IsSync(s)) {
          Summary sync;
          sync.has_sync = true;
          return {s, sync};
        }
        return {s, NoSync(Loads(s.as<Evaluate>()->value))};
      }
      case StmtKind::kAssert: return {s, NoSync(Loads(s.as<AssertStmt>()->condition))};
      default:
        AGATE_THROW(kInternal) << "kernel " << parts_.name << ": " << StmtKindName(s.kind()) << " in thread code";
    }
  }

 private:
  // `loads` run before the statement summarized by `s`.
  Summary Prepend(const std::vector<Access>& loads, const Summary& s) {
    Summary out = s;
    AddAll(&out.all, loads);
    std::vector<Access> head = loads;
    AddAll(&head, s.head);
    out.head = head;
    if (!s.has_sync) out.tail = out.all;
    return out;
  }

  std::pair<Stmt, Summary> PlanSeq(const std::vector<Stmt>& stmts, bool uniform) {
    std::vector<Stmt> out;
    Summary result;
    std::vector<Access> pending;
    bool changed = false;
    for (const Stmt& x : stmts) {
      auto [y, s] = Plan(x, uniform);
      changed = changed || !y.same_as(x);
      const std::vector<Access>& first = s.has_sync ? s.head : s.all;
      if (const Access* a = Conflict(pending, first, nullptr)) {
        RequireUniform(uniform, *a);
        if (!out.empty() && IsSync(out.back())) {
          // already there
        } else {
          out.push_back(SyncStmt());
          changed = true;
        }
        if (!result.has_sync) result.head = pending;
        result.has_sync = true;
        pending.clear();
      }
      AddAll(&result.all, s.all);
      if (s.has_sync) {
        if (!result.has_sync) {
          result.head = pending;
          AddAll(&result.head, s.head);
        }
        result.has_sync = true;
        pending = s.tail;
      } else {
        AddAll(&pending, s.all);
      }
      out.push_back(y);
    }
    result.tail = pending;
    if (!result.has_sync) result.head = pending;
    if (!changed) return {Seq::make(stmts), result};
    return {Seq::make(out), result};
  }

  std::pair<Stmt, Summary> PlanFor(const For* op, bool uniform) {
    std::vector<Access> bounds = Loads(op->min);
    AddAll(&bounds, Loads(op->extent));
    Expr min = Inline(op->min), extent = Inline(op->extent);
    bool varying = ThreadDependent(min) || ThreadDependent(extent);
    bool loop_uniform = uniform && !varying;
    if (varying) thread_dependent_.insert(op->var.get());
    loop_range_[op->var.get()] = {op->var, min, extent};
    an_.Bind(op->var, min, extent);
    enclosing_.insert(op->var.get());
    auto [body, s] = Plan(op->body, loop_uniform);
    enclosing_.erase(op->var.get());  // from here on the loop's iterations are compared
    if (loop_uniform) {
      const std::vector<Access>& end = s.has_sync ? s.tail : s.all;
      const std::vector<Access>& start = s.has_sync ? s.head : s.all;
      if (Conflict(end, start, op->var.get())) {
        body = Seq::make({SyncStmt(), body});
        Summary with;
        with.all = s.all;
        with.tail = s.has_sync ? s.tail : s.all;
        with.has_sync = true;
        s = with;
      }
    }
    an_.Unbind(op->var);
    int64_t trips = 0;
    bool runs = is_const_int(op->extent, &trips) && trips >= 1;
    if (s.has_sync && !runs) s = NoSync(s.all);  // a loop that may not run passes earlier accesses on
    Stmt out = For::make(op->var, op->min, op->extent, op->for_kind, body, op->thread_tag);
    return {out, bounds.empty() ? s : Prepend(bounds, s)};
  }

  std::pair<Stmt, Summary> PlanIf(const IfThenElse* op, bool uniform) {
    std::vector<Access> cond = Loads(op->condition);
    bool branch_uniform = uniform && !ThreadDependent(Inline(op->condition));
    auto [then_case, t] = Plan(op->then_case, branch_uniform);
    Summary e;
    Stmt else_case;
    if (op->else_case.defined()) std::tie(else_case, e) = Plan(op->else_case, branch_uniform);
    Summary merged;
    AddAll(&merged.all, t.all);
    AddAll(&merged.all, e.all);
    if (t.has_sync && op->else_case.defined() && e.has_sync) {
      merged.has_sync = true;
      merged.head = t.head;
      AddAll(&merged.head, e.head);
      merged.tail = t.tail;
      AddAll(&merged.tail, e.tail);
    } else {
      merged = NoSync(merged.all);  // a path without a barrier passes earlier accesses on
    }
    return {IfThenElse::make(op->condition, then_case, else_case), cond.empty() ? merged : Prepend(cond, merged)};
  }

  void RequireUniform(bool uniform, const Access& a) {
    AGATE_REQUIRE(uniform, kIllegalSchedule)
        << "kernel " << parts_.name << ": threads of a block exchange data through buffer '" << a.name
        << "' inside code that only some of them run (a branch or loop that depends on the thread), where no "
           "__syncthreads can stand; compute the producer and the consumer under the same thread loops, or "
           "outside the condition";
  }

  // A pair of accesses from `earlier` and `later` that may touch one element
  // from two threads; `loop` when they are from consecutive iterations of it.
  const Access* Conflict(const std::vector<Access>& earlier, const std::vector<Access>& later, const VarNode* loop) {
    for (const Access& a : earlier) {
      for (const Access& b : later) {
        // Only a read makes an order observable: every element of a stage is
        // written by one thread (two writers are a race no barrier fixes, and the
        // evaluator reports them), so two writes need no barrier between them.
        if (a.write == b.write) continue;
        if (a.buffer != b.buffer) {
          if (Overlap(a.buffer, b.buffer)) return &b;
          continue;
        }
        if (SameThread(a, b, loop) || Disjoint(a, b)) continue;
        return &b;
      }
    }
    return nullptr;
  }

  // Two shared buffers placed on the same bytes (their lifetimes were disjoint).
  bool Overlap(const VarNode* x, const VarNode* y) const {
    auto a = shared_bytes_.find(x), b = shared_bytes_.find(y);
    if (a == shared_bytes_.end() || b == shared_bytes_.end()) return false;
    return a->second.first < b->second.second && b->second.first < a->second.second;
  }

  // The same index, which gives every thread its own elements; across
  // iterations, every (thread, iteration) its own.
  bool SameThread(const Access& a, const Access& b, const VarNode* loop) {
    if (!a.owned || !b.owned || !StructuralEqual(a.index, b.index)) return false;
    if (loop == nullptr) return true;
    std::vector<const VarNode*> locals = Locals(a.index);
    return locals.empty() || Injective(a.index, locals);
  }

  // Loop variables in `e` that are not fixed at the point of comparison.
  std::vector<const VarNode*> Locals(const Expr& e) const {
    std::vector<const VarNode*> out;
    PostOrderVisit(e, [&](const Expr* x, const Stmt*) {
      const VarNode* v = x ? x->as<VarNode>() : nullptr;
      if (v && loop_range_.count(v) && !enclosing_.count(v) &&
          std::find(out.begin(), out.end(), v) == out.end())
        out.push_back(v);
    });
    return out;
  }

  // The elements the two accesses can touch (over all threads, and all values
  // of the loops not fixed here) are provably apart.
  bool Disjoint(const Access& a, const Access& b) {
    std::unordered_map<const VarNode*, IntervalSet> relax;
    for (int d = 0; d < 3; ++d) {
      const Var& t = parts_.thread_vars[d];
      if (t.defined()) relax[t.get()] = {make_zero(DType::Index()), Expr(parts_.block[d] - 1)};
    }
    for (const Expr& index : {a.index, b.index}) {
      for (const VarNode* v : Locals(index)) {
        const LoopRange& r = loop_range_.at(v);
        relax[v] = {r.min, an_.Simplify(r.min + r.extent - 1)};
      }
    }
    IntervalSet x = an_.EvalSet(a.index, relax), y = an_.EvalSet(b.index, relax);
    if (!x.bounded() || !y.bounded()) return false;
    return an_.CanProve(x.max < y.min) || an_.CanProve(y.max < x.min);
  }

  std::vector<Access> Loads(const Expr& e) {
    std::vector<Access> out;
    PostOrderVisit(e, [&](const Expr* x, const Stmt*) {
      const Load* load = x ? x->as<Load>() : nullptr;
      if (load && written_.count(load->buffer->data.get())) Add(&out, MakeAccess(load->buffer, load->index, false));
      if (x && x->as<Let>()) thread_dependent_.insert(x->as<Let>()->var.get());
    });
    return out;
  }

  Access MakeAccess(const Buffer& b, const Expr& index, bool write) {
    Expr folded = an_.Simplify(MixedRadix::Fold(an_.Simplify(Inline(index))));
    Access a{b->data.get(), b->name, folded, write, false, b->dtype.element_bytes()};
    a.owned = Injective(a.index, {});
    return a;
  }

  Expr Inline(const Expr& e) { return lets_.empty() ? e : Substitute(e, lets_); }

  bool ThreadDependent(const Expr& e) {
    bool dep = false;
    PostOrderVisit(e, [&](const Expr* x, const Stmt*) {
      if (!x) return;
      if (x->as<Load>() || (x->as<Call>() && IsGpuIntrinsic(x->as<Call>()->op))) dep = true;
      if (x->as<VarNode>() && thread_dependent_.count(x->as<VarNode>())) dep = true;
    });
    return dep;
  }

  // True when `index` maps the threads of the block (and the values of the
  // loops `locals`) to distinct elements: it is affine in each of them, with
  // coefficients that never let two points meet.
  bool Injective(const Expr& index, const std::vector<const VarNode*>& locals) {
    bool opaque = false;
    PostOrderVisit(index, [&](const Expr* x, const Stmt*) {
      if (!x) return;
      if (x->as<Load>() || x->as<Call>()) opaque = true;
      const VarNode* v = x->as<VarNode>();
      if (v && thread_dependent_.count(v) && !IsThreadVar(v)) opaque = true;
    });
    if (opaque) return false;
    std::unordered_map<const VarNode*, int64_t> extent;  // the points compared: threads and loop values
    for (int d = 0; d < 3; ++d) {
      if (parts_.thread_vars[d].defined() && parts_.block[d] > 1) extent[parts_.thread_vars[d].get()] = parts_.block[d];
    }
    for (const VarNode* v : locals) {
      int64_t n = 0;
      if (!is_const_int(loop_range_.at(v).extent, &n)) return false;
      if (n > 1) extent[v] = n;
    }
    return IndexDigits::Injective(index, extent);
  }

  bool IsThreadVar(const VarNode* v) const {
    for (int d = 0; d < 3; ++d)
      if (parts_.thread_vars[d].get() == v) return true;
    return false;
  }

  struct LoopRange {
    Var var;
    Expr min, extent;
  };

  const LaunchParts& parts_;
  Analyzer an_;
  VarMap lets_;
  std::unordered_map<const VarNode*, LoopRange> loop_range_;
  std::unordered_set<const VarNode*> enclosing_;  // loops around the point being planned
  std::unordered_map<const VarNode*, std::pair<int64_t, int64_t>> shared_bytes_;
  std::unordered_set<const VarNode*> thread_dependent_;
  std::unordered_set<const VarNode*> written_;
};

}  // namespace

Stmt InsertSyncThreads(const Stmt& body) {
  return MapLaunches(body, [](LaunchParts* parts) {
    Planner planner(*parts);
    parts->code = planner.Plan(parts->code, true).first;
  });
}

}  // namespace lower
}  // namespace agate
