#include "core/lower/kernel_memory_plan.h"

#include <algorithm>

#include "core/ir/buffer.h"
#include "core/ir/functor.h"
#include "core/ir/printer.h"
#include "core/lower/analyzer.h"
#include "core/support/error.h"

namespace agate {
namespace lower {

using namespace ir;  // NOLINT

namespace {

class Planner : public IRMutator {
 public:
  Planner(int64_t max_local, bool gpu) : max_local_(max_local), gpu_(gpu) {}

  Stmt VisitStmt_(const For* op, const Stmt& self) override {
    bool parallel = op->for_kind == ForKind::kParallel || op->for_kind == ForKind::kThreadBinding;
    bool block = op->for_kind == ForKind::kThreadBinding && op->thread_tag.compare(0, 9, "blockIdx.") == 0;
    int& depth = gpu_ && block ? block_depth_ : parallel_depth_;
    if (parallel) ++depth;
    Stmt s = IRMutator::VisitStmt_(op, self);
    if (parallel) --depth;
    return s;
  }

  Stmt VisitStmt_(const Allocate* op, const Stmt&) override {
    int64_t elements;
    bool constant = is_const_int(Simplify(op->NumElements()), &elements);
    int64_t bytes = constant ? elements * op->buffer->dtype.element_bytes() : -1;
    MemoryScope scope;
    int64_t offset = -1;
    if (op->scope == MemoryScope::kShared || (gpu_ && block_depth_ > 0 && parallel_depth_ == 0)) {
      // On a GPU, a buffer computed per block (inside the block loops, outside
      // the thread loops) is what the block's threads share.
      AGATE_REQUIRE(constant, kUnsupported)
          << "shared buffer " << op->buffer->name << " has a size that is not a constant: " << op->NumElements();
      scope = MemoryScope::kShared;
    } else if (parallel_depth_ > 0) {
      AGATE_REQUIRE(constant, kUnsupported)
          << "buffer " << op->buffer->name << " inside a parallel loop has a size that is not a constant: "
          << op->NumElements();
      scope = MemoryScope::kLocal;
    } else if (constant && bytes <= max_local_ && op->scope != MemoryScope::kWorkspace && !gpu_) {
      scope = MemoryScope::kLocal;
    } else {
      AGATE_REQUIRE(constant, kUnsupported)
          << "buffer " << op->buffer->name << " has a size that is not a compile-time constant: " << op->NumElements();
      scope = MemoryScope::kWorkspace;
      // Allocations are scoped, so their lifetimes nest: a stack discipline lets
      // sibling allocations share the same bytes.
      offset = (stack_top_ + 63) / 64 * 64;
    }
    Buffer buf = op->buffer;
    const VarNode* data = buf->data.get();
    if (buf->scope != scope) {
      scopes_[data] = scope;
      buf = Rescope(buf);
    }
    int64_t saved_top = stack_top_;
    if (scope == MemoryScope::kWorkspace) {
      stack_top_ = offset + bytes;
      workspace_bytes = std::max(workspace_bytes, stack_top_);
    }
    Stmt body = VisitStmt(op->body);
    stack_top_ = saved_top;
    scopes_.erase(data);
    return Allocate::make(buf, op->extents, op->alignment, scope, body, offset);
  }

  // The buffer (or a view of it) with the scope decided for its allocation.
  Buffer Rescope(const Buffer& b) {
    auto sc = scopes_.find(b->data.get());
    if (sc == scopes_.end() || b->scope == sc->second) return b;
    auto it = rescoped_.find(b.get());
    if (it != rescoped_.end()) return it->second;
    auto node = std::make_shared<BufferNode>(*b.get());
    node->scope = sc->second;
    Buffer nb(node);
    rescoped_[b.get()] = nb;
    return nb;
  }
  Expr VisitExpr_(const Load* op, const Expr& self) override {
    Expr e = IRMutator::VisitExpr_(op, self);
    Buffer b = Rescope(op->buffer);
    if (b.same_as(op->buffer)) return e;
    const Load* l = e.as<Load>();
    return Load::make(b, l->index, l->predicate);
  }
  Stmt VisitStmt_(const Store* op, const Stmt& self) override {
    Stmt s = IRMutator::VisitStmt_(op, self);
    Buffer b = Rescope(op->buffer);
    if (b.same_as(op->buffer)) return s;
    const Store* st = s.as<Store>();
    return Store::make(b, st->value, st->index, st->predicate);
  }

  int64_t workspace_bytes = 0;

 private:
  int64_t max_local_;
  bool gpu_;
  int parallel_depth_ = 0;  // CPU parallel loops, or GPU thread loops
  int block_depth_ = 0;     // GPU block loops
  int64_t stack_top_ = 0;  // end of the live workspace allocations
  std::unordered_map<const VarNode*, MemoryScope> scopes_;
  std::unordered_map<const BufferNode*, Buffer> rescoped_;
};

}  // namespace

KernelMemoryPlan PlanKernelMemory(const Stmt& stmt, int64_t max_local_bytes, bool gpu) {
  Planner p(max_local_bytes, gpu);
  KernelMemoryPlan r;
  r.body = p.VisitStmt(stmt);
  r.workspace_bytes = p.workspace_bytes;
  return r;
}

}  // namespace lower
}  // namespace agate
