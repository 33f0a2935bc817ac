#include "core/codegen/c/shared_exprs.h"

#include <cstring>

#include "core/ir/buffer.h"

namespace agate {
namespace codegen {
namespace {

using ir::DType;
using ir::Expr;
using ir::ExprNode;

// A child of an expression, and whether it is evaluated only when a condition inside the parent
// holds (Select's arms, the right operand of && and ||).
struct Child {
  const Expr* expr;
  bool conditional;
};

std::vector<Child> Children(const Expr& e) {
  switch (e.kind()) {
#define AGATE_BINARY(T)                                                   \
  case ir::T::kKind: {                                                   \
    const auto* op = e.as<ir::T>();                                      \
    return {{&op->a, false}, {&op->b, false}};                           \
  }
    AGATE_BINARY(Add) AGATE_BINARY(Sub) AGATE_BINARY(Mul) AGATE_BINARY(Div) AGATE_BINARY(Mod)
    AGATE_BINARY(FloorDiv) AGATE_BINARY(FloorMod) AGATE_BINARY(Min) AGATE_BINARY(Max)
    AGATE_BINARY(EQ) AGATE_BINARY(NE) AGATE_BINARY(LT) AGATE_BINARY(LE) AGATE_BINARY(GT) AGATE_BINARY(GE)
#undef AGATE_BINARY
    case ir::ExprKind::kAnd: return {{&e.as<ir::And>()->a, false}, {&e.as<ir::And>()->b, true}};
    case ir::ExprKind::kOr: return {{&e.as<ir::Or>()->a, false}, {&e.as<ir::Or>()->b, true}};
    case ir::ExprKind::kNot: return {{&e.as<ir::Not>()->a, false}};
    case ir::ExprKind::kSelect: {
      const auto* op = e.as<ir::Select>();
      return {{&op->condition, false}, {&op->true_value, true}, {&op->false_value, true}};
    }
    case ir::ExprKind::kCast: return {{&e.as<ir::Cast>()->value, false}};
    case ir::ExprKind::kCall: {
      std::vector<Child> out;
      for (const Expr& a : e.as<ir::Call>()->args) out.push_back({&a, false});
      return out;
    }
    case ir::ExprKind::kRamp: return {{&e.as<ir::Ramp>()->base, false}, {&e.as<ir::Ramp>()->stride, false}};
    case ir::ExprKind::kBroadcast: return {{&e.as<ir::Broadcast>()->value, false}};
    case ir::ExprKind::kLet: return {{&e.as<ir::Let>()->value, false}, {&e.as<ir::Let>()->body, false}};
    case ir::ExprKind::kLoad: {
      const auto* op = e.as<ir::Load>();
      std::vector<Child> out{{&op->index, false}};
      if (op->predicate.defined()) out.push_back({&op->predicate, false});
      return out;
    }
    default: return {};  // constants, variables (and TE-level nodes, which never reach a printer)
  }
}

uint64_t Mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull + (h >> 29); }

// The node's own fields apart from its children: kind, dtype, constants, identities.
uint64_t ShallowHash(const Expr& e) {
  uint64_t h = Mix(1469598103934665603ull, static_cast<uint64_t>(e.kind()));
  const DType t = e.dtype();
  h = Mix(h, (static_cast<uint64_t>(t.code()) << 40) ^ (static_cast<uint64_t>(t.bits()) << 20) ^
                 static_cast<uint64_t>(t.lanes()));
  switch (e.kind()) {
    case ir::ExprKind::kIntImm: return Mix(h, static_cast<uint64_t>(e.as<ir::IntImm>()->value));
    case ir::ExprKind::kFloatImm: {
      uint64_t bits;
      std::memcpy(&bits, &e.as<ir::FloatImm>()->value, sizeof(bits));
      return Mix(h, bits);
    }
    case ir::ExprKind::kVar: return Mix(h, reinterpret_cast<uintptr_t>(e.get()));
    case ir::ExprKind::kCall: return Mix(h, static_cast<uint64_t>(e.as<ir::Call>()->op));
    case ir::ExprKind::kRamp: return Mix(h, static_cast<uint64_t>(e.as<ir::Ramp>()->lanes));
    case ir::ExprKind::kBroadcast: return Mix(h, static_cast<uint64_t>(e.as<ir::Broadcast>()->lanes));
    case ir::ExprKind::kLoad: return Mix(h, reinterpret_cast<uintptr_t>(e.as<ir::Load>()->buffer->data.get()));
    case ir::ExprKind::kLet: return Mix(h, reinterpret_cast<uintptr_t>(e.get()));  // never merged
    default: return h;
  }
}

bool ShallowEqual(const Expr& a, const ExprNode* b) {
  if (a.kind() != b->kind || !(a.dtype() == b->dtype)) return false;
  switch (a.kind()) {
    case ir::ExprKind::kIntImm: return a.as<ir::IntImm>()->value == static_cast<const ir::IntImm*>(b)->value;
    case ir::ExprKind::kFloatImm: {
      double x = a.as<ir::FloatImm>()->value, y = static_cast<const ir::FloatImm*>(b)->value;
      return std::memcmp(&x, &y, sizeof(x)) == 0;
    }
    case ir::ExprKind::kVar:
    case ir::ExprKind::kLet: return a.get() == b;
    case ir::ExprKind::kCall: return a.as<ir::Call>()->op == static_cast<const ir::Call*>(b)->op;
    case ir::ExprKind::kRamp: return a.as<ir::Ramp>()->lanes == static_cast<const ir::Ramp*>(b)->lanes;
    case ir::ExprKind::kBroadcast:
      return a.as<ir::Broadcast>()->lanes == static_cast<const ir::Broadcast*>(b)->lanes;
    case ir::ExprKind::kLoad:
      return a.as<ir::Load>()->buffer->data.get() == static_cast<const ir::Load*>(b)->buffer->data.get();
    default: return true;
  }
}

bool Reads(const Expr& e) {
  if (const auto* load = e.as<ir::Load>()) return !load->predicate.defined();  // a predicated load guards itself
  return false;
}

bool IsShuffle(const Expr& e) {
  const auto* call = e.as<ir::Call>();
  return call && call->op == ir::CallOp::kShuffleXor;
}

bool IsLeaf(const Expr& e) {
  switch (e.kind()) {
    case ir::ExprKind::kIntImm:
    case ir::ExprKind::kFloatImm:
    case ir::ExprKind::kVar: return true;
    case ir::ExprKind::kBroadcast: return IsLeaf(e.as<ir::Broadcast>()->value);
    default: return false;
  }
}

}  // namespace

int64_t SharedExprs::Canonicalize(const Expr& e) {
  auto found = nodes_.find(e.get());
  if (found != nodes_.end()) return found->second;
  std::vector<Child> children = Children(e);
  std::vector<int64_t> child_classes;
  uint64_t h = ShallowHash(e);
  for (const Child& c : children) {
    child_classes.push_back(Canonicalize(*c.expr));
    h = Mix(h, static_cast<uint64_t>(child_classes.back()));
  }
  int64_t cls = -1;
  for (const auto& [other, other_cls] : by_hash_[h]) {
    // Equal fields and children of equal classes: structurally equal.
    if (ShallowEqual(e, other) && classes_[other_cls].children == child_classes) {
      cls = other_cls;
      break;
    }
  }
  if (cls < 0) {
    cls = static_cast<int64_t>(classes_.size());
    ClassInfo info;
    info.leaf = IsLeaf(e);
    info.reads = Reads(e);
    info.shuffle = IsShuffle(e);
    info.has_let = e.kind() == ir::ExprKind::kLet;
    for (int64_t c : child_classes) info.has_let = info.has_let || classes_[c].has_let;
    info.children = child_classes;
    classes_.push_back(info);
    by_hash_[h].push_back({e.get(), cls});
  }
  for (int64_t c : child_classes) classes_[c].uses++;
  nodes_[e.get()] = cls;
  return cls;
}

void SharedExprs::MarkUnconditional(const Expr& e, bool conditional) {
  if (conditional) return;  // only unconditional evaluation matters
  if (!visited_unconditional_.insert(e.get()).second) return;
  classes_[nodes_.at(e.get())].unconditional = true;
  for (const Child& c : Children(e)) MarkUnconditional(*c.expr, c.conditional);
}

void SharedExprs::Analyze(const std::vector<Root>& roots) {
  nodes_.clear();
  classes_.clear();
  by_hash_.clear();
  visited_unconditional_.clear();
  for (const Root& r : roots) {
    if (!r.expr.defined()) continue;
    int64_t cls = Canonicalize(r.expr);
    classes_[cls].uses++;
  }
  for (const Root& r : roots) {
    if (r.expr.defined()) MarkUnconditional(r.expr, r.conditional);
  }
  // Children have smaller class numbers than their parents: one pass in order.
  for (ClassInfo& c : classes_) {
    c.risky = c.reads && !c.unconditional;
    for (int64_t child : c.children) c.risky = c.risky || classes_[child].risky;
  }
}

bool SharedExprs::IsShared(const ExprNode* node) const {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return false;
  const ClassInfo& c = classes_[it->second];
  if (c.shuffle && !c.has_let) return true;
  return c.uses >= 2 && !c.leaf && !c.has_let && (!c.risky || c.unconditional);
}

int64_t SharedExprs::ClassOf(const ExprNode* node) const {
  auto it = nodes_.find(node);
  return it == nodes_.end() ? -1 : it->second;
}

}  // namespace codegen
}  // namespace agate
