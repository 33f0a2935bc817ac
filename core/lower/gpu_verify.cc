#include "core/lower/gpu_verify.h"

#include <set>

#include "core/ir/functor.h"
#include "core/ir/gpu_launch.h"
#include "core/ir/printer.h"
#include "core/support/error.h"

namespace agate {
namespace lower {

using namespace ir;  // NOLINT

namespace {

bool IsBound(const For* f, bool* is_block = nullptr, int* dim = nullptr) {
  bool b = false;
  int d = 0;
  if (f->for_kind != ForKind::kThreadBinding || !ParseThreadTag(f->thread_tag, &b, &d)) return false;
  if (is_block) *is_block = b;
  if (dim) *dim = d;
  return true;
}

bool Contains(const Stmt& s, const std::function<bool(const Stmt&)>& pred) {
  bool found = false;
  PostOrderVisit(s, [&](const Expr*, const Stmt* x) {
    if (x && !found && pred(*x)) found = true;
  });
  return found;
}

bool HasBoundLoop(const Stmt& s, bool blocks_only = false) {
  return Contains(s, [&](const Stmt& x) {
    bool is_block = false;
    return x.as<For>() && IsBound(x.as<For>(), &is_block) && (is_block || !blocks_only);
  });
}

// The tensors a statement writes, for messages: "stage 'C'" or "stages 'A', 'B'".
std::string Stages(const Stmt& s) {
  std::vector<std::string> names;
  PostOrderVisit(s, [&](const Expr*, const Stmt* x) {
    const Store* st = x ? x->as<Store>() : nullptr;
    if (!st || st->buffer->scope == MemoryScope::kLocal) return;
    if (std::find(names.begin(), names.end(), st->buffer->name) == names.end()) names.push_back(st->buffer->name);
  });
  if (names.empty()) return "a stage that writes nothing";
  std::string out = names.size() == 1 ? "stage '" : "stages '";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? "', '" : "") + names[i];
  return out + "'";
}

class Verifier : public IRVisitor {
 public:
  explicit Verifier(const std::string& kernel) : kernel_(kernel) {}

  void Root(const Stmt& s) {
    switch (s.kind()) {
      case StmtKind::kSeq:
        for (const Stmt& x : s.as<Seq>()->stmts) Root(x);
        return;
      case StmtKind::kAllocate: {
        const Allocate* a = s.as<Allocate>();
        AGATE_REQUIRE(a->scope != MemoryScope::kShared, kIllegalSchedule)
            << "kernel " << kernel_ << ": shared buffer '" << a->buffer->name
            << "' is computed outside the GPU-bound loops; shared memory belongs to one thread block, so compute it "
               "at a loop bound to blockIdx (compute_at)";
        if (a->scope == MemoryScope::kWorkspace) return Root(a->body);
        break;
      }
      case StmtKind::kLetStmt: return Root(s.as<LetStmt>()->body);
      case StmtKind::kAttrStmt:
        if (s.as<AttrStmt>()->key.compare(0, 7, attr::kPragmaPrefix) == 0) return Root(s.as<AttrStmt>()->body);
        break;
      default: break;
    }
    LaunchRoot(s);
  }

  void VisitStmt_(const For* op, const Stmt& self) override {
    bool is_block = false;
    int dim = 0;
    if (op->for_kind == ForKind::kParallel) {
      AGATE_THROW(kIllegalSchedule) << "kernel " << kernel_ << ": loop '" << op->var->name << "' of " << Stages(self)
                                    << " is marked parallel, which means CPU threads; on a GPU target bind it to "
                                       "blockIdx/threadIdx instead";
    }
    if (!IsBound(op, &is_block, &dim)) return IRVisitor::VisitStmt_(op, self);
    AGATE_REQUIRE(is_const_int(op->extent), kIllegalSchedule)
        << "kernel " << kernel_ << ": loop '" << op->var->name << "' of " << Stages(self) << " is bound to "
        << op->thread_tag << " but its extent " << op->extent
        << " is known only at run time; a launch's grid and block are fixed when it is compiled";
    if (is_block) {
      AGATE_REQUIRE(thread_depth_ == 0, kIllegalSchedule)
          << "kernel " << kernel_ << ": loop '" << op->var->name << "' of " << Stages(self) << " is bound to "
          << op->thread_tag << " inside a loop bound to threadIdx; block loops must enclose thread loops";
      AGATE_REQUIRE(!block_axes_.count(dim), kIllegalSchedule)
          << "kernel " << kernel_ << ": loop '" << op->var->name << "' of " << Stages(self) << " is bound to "
          << op->thread_tag << " inside another loop bound to it";
      block_axes_.insert(dim);
      IRVisitor::VisitStmt_(op, self);
      block_axes_.erase(dim);
      return;
    }
    ++thread_depth_;
    IRVisitor::VisitStmt_(op, self);
    --thread_depth_;
  }

  void VisitStmt_(const Allocate* op, const Stmt& self) override {
    AGATE_REQUIRE(op->scope != MemoryScope::kShared || has_blocks_ == false || !block_axes_.empty(), kIllegalSchedule)
        << "kernel " << kernel_ << ": shared buffer '" << op->buffer->name
        << "' is allocated outside the loops bound to blockIdx; compute it at a block loop";
    IRVisitor::VisitStmt_(op, self);
  }

 private:
  // A statement at kernel level: a launch. Its outermost loops must be bound.
  void LaunchRoot(const Stmt& s) {
    has_blocks_ = HasBoundLoop(s, true);
    CheckSpine(s);
    VisitStmt(s);
  }

  // Above the first bound loops: no loop, and no two block-bound nests side by side.
  void CheckSpine(const Stmt& s) {
    if (!s.defined()) return;
    if (const For* f = s.as<For>()) {
      if (IsBound(f)) return;
      if (HasBoundLoop(s)) {
        AGATE_THROW(kIllegalSchedule) << "kernel " << kernel_ << ": loop '" << f->var->name << "' of " << Stages(s)
                                      << " encloses the loops bound to blockIdx/threadIdx; a GPU kernel's outermost "
                                         "loops must be bound (fuse it into the blockIdx loop, or bind it)";
      }
      AGATE_THROW(kIllegalSchedule) << "kernel " << kernel_ << ": loop '" << f->var->name << "' of " << Stages(s)
                                    << " is not bound to GPU blocks or threads, so one GPU thread would run all of "
                                       "it; bind the stage's outer loops to blockIdx/threadIdx";
    }
    switch (s.kind()) {
      case StmtKind::kSeq: {
        int with_blocks = 0;
        for (const Stmt& x : s.as<Seq>()->stmts) {
          with_blocks += HasBoundLoop(x, true);
          CheckSpine(x);
        }
        AGATE_REQUIRE(with_blocks <= 1, kIllegalSchedule)
            << "kernel " << kernel_ << ": " << Stages(s)
            << " are bound to blockIdx side by side under one condition or allocation; they cannot be separate "
               "launches (compute them at the kernel's root)";
        return;
      }
      case StmtKind::kIfThenElse:
        CheckSpine(s.as<IfThenElse>()->then_case);
        CheckSpine(s.as<IfThenElse>()->else_case);
        return;
      case StmtKind::kLetStmt: return CheckSpine(s.as<LetStmt>()->body);
      case StmtKind::kAttrStmt: return CheckSpine(s.as<AttrStmt>()->body);
      case StmtKind::kAllocate: return CheckSpine(s.as<Allocate>()->body);
      default: return;
    }
  }

  std::string kernel_;
  std::set<int> block_axes_;
  int thread_depth_ = 0;
  bool has_blocks_ = false;
};

}  // namespace

void VerifyGpuBinding(const Stmt& body, const std::string& kernel_name) {
  AGATE_CHECK(!HasGpuLaunches(body)) << "kernel " << kernel_name << " is bound already";
  Verifier v(kernel_name);
  v.Root(body);
}

}  // namespace lower
}  // namespace agate
