#include "core/lower/gpu_bind.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/ir/functor.h"
#include "core/ir/printer.h"
#include "core/support/error.h"

namespace agate {
namespace lower {

using namespace ir;  // NOLINT

namespace {

const char* kAxisNames[3] = {"x", "y", "z"};

std::string TagName(bool is_block, int dim) {
  return std::string(is_block ? "blockIdx." : "threadIdx.") + kAxisNames[dim];
}

bool IsBound(const For* f, bool* is_block = nullptr, int* dim = nullptr) {
  bool b = false;
  int d = 0;
  if (f->for_kind != ForKind::kThreadBinding || !ParseThreadTag(f->thread_tag, &b, &d)) return false;
  if (is_block) *is_block = b;
  if (dim) *dim = d;
  return true;
}

// The axis extents of one root nest: the largest extent bound to each axis.
class ExtentCollector : public IRVisitor {
 public:
  std::array<int64_t, 3> grid = {0, 0, 0};
  std::array<int64_t, 3> block = {0, 0, 0};
  void VisitStmt_(const For* op, const Stmt& self) override {
    bool is_block;
    int dim;
    if (IsBound(op, &is_block, &dim)) {
      int64_t extent = 0;
      AGATE_CHECK(is_const_int(op->extent, &extent)) << "loop " << op->var->name << " bound to " << op->thread_tag
                                                     << " has extent " << op->extent << " (gpu_verify admits constants only)";
      int64_t& slot = (is_block ? grid : block)[dim];
      slot = std::max(slot, extent);
    }
    IRVisitor::VisitStmt_(op, self);
  }
};

class LaunchRewriter : public IRMutator {
 public:
  LaunchRewriter(const LaunchParts& parts) : parts_(parts) {}

  std::vector<LaunchParts::SharedBuffer> shared;

  Stmt VisitStmt_(const For* op, const Stmt& self) override {
    bool is_block;
    int dim;
    if (!IsBound(op, &is_block, &dim)) return IRMutator::VisitStmt_(op, self);
    const Var& axis = (is_block ? parts_.block_vars : parts_.thread_vars)[dim];
    int64_t launch_extent = (is_block ? parts_.grid : parts_.block)[dim];
    int64_t extent = 0;
    is_const_int(op->extent, &extent);
    int key = (is_block ? 3 : 0) + dim;
    int saved = enclosing_[key];
    enclosing_[key] = 1;
    Stmt body = VisitStmt(op->body);
    enclosing_[key] = saved;
    Expr value = is_zero(op->min) ? Expr(axis) : op->min + axis;
    Stmt s = LetStmt::make(op->var, value, body);
    if (extent < launch_extent) s = IfThenElse::make(axis < Expr(extent), s);
    return s;
  }

  Stmt VisitStmt_(const Allocate* op, const Stmt& self) override {
    if (op->scope != MemoryScope::kShared) return IRMutator::VisitStmt_(op, self);
    int64_t elements = 0;
    AGATE_REQUIRE(is_const_int(op->NumElements(), &elements), kIllegalSchedule)
        << "kernel " << parts_.name << ": shared buffer " << op->buffer->name << " has a size known only at run time ("
        << op->NumElements() << ")";
    // A stack discipline over the original scopes: siblings reuse the same bytes.
    int64_t offset = (top_ + 15) / 16 * 16;
    shared.push_back({op->buffer, elements, offset});
    int64_t saved = top_;
    top_ = offset + shared.back().bytes();
    Stmt body = VisitStmt(op->body);
    top_ = saved;
    return body;
  }

  Stmt VisitStmt_(const Store* op, const Stmt& self) override {
    Stmt s = IRMutator::VisitStmt_(op, self);
    if (op->buffer->scope == MemoryScope::kLocal) return s;
    // Outside the loops of an axis, every thread (block) of that axis would store:
    // the first one does.
    Expr guard;
    for (int key = 0; key < 6; ++key) {
      bool is_block = key >= 3;
      int dim = key % 3;
      int64_t extent = (is_block ? parts_.grid : parts_.block)[dim];
      if (extent <= 1 || enclosing_[key]) continue;
      Expr first = (is_block ? parts_.block_vars : parts_.thread_vars)[dim] == Expr(int64_t{0});
      guard = guard.defined() ? (guard && first) : first;
    }
    return guard.defined() ? IfThenElse::make(guard, s) : s;
  }

 private:
  const LaunchParts& parts_;
  int enclosing_[6] = {0, 0, 0, 0, 0, 0};
  int64_t top_ = 0;
};

class Binder {
 public:
  explicit Binder(const std::string& name) : name_(name) {}

  Stmt Root(const Stmt& s) {
    switch (s.kind()) {
      case StmtKind::kSeq: {
        std::vector<Stmt> out;
        for (const Stmt& x : s.as<Seq>()->stmts) out.push_back(Root(x));
        return Seq::make(out);
      }
      case StmtKind::kAllocate: {
        const Allocate* a = s.as<Allocate>();
        if (a->scope == MemoryScope::kWorkspace) {
          return Allocate::make(a->buffer, a->extents, a->alignment, a->scope, Root(a->body), a->workspace_offset);
        }
        break;
      }
      case StmtKind::kLetStmt: {
        const LetStmt* l = s.as<LetStmt>();
        return LetStmt::make(l->var, l->value, Root(l->body));
      }
      case StmtKind::kAttrStmt: {
        const AttrStmt* a = s.as<AttrStmt>();
        if (a->key.compare(0, 7, attr::kPragmaPrefix) == 0) {
          return AttrStmt::make(a->key, a->node_name, a->value, Root(a->body));
        }
        break;
      }
      case StmtKind::kEvaluate:
        if (!s.as<Evaluate>()->value.as<Call>()) return s;  // a no-op: nothing to launch
        break;
      default: break;
    }
    return Launch(s);
  }

 private:
  Stmt Launch(const Stmt& s) {
    LaunchParts parts;
    parts.name = count_ == 0 ? name_ : name_ + "_" + std::to_string(count_);
    ++count_;
    ExtentCollector extents;
    extents.VisitStmt(s);
    for (int d = 0; d < 3; ++d) {
      if (extents.grid[d] > 0) {
        parts.grid[d] = extents.grid[d];
        parts.block_vars[d] = Var(TagName(true, d), DType::Index());
      }
      if (extents.block[d] > 0) {
        parts.block[d] = extents.block[d];
        parts.thread_vars[d] = Var(TagName(false, d), DType::Index());
      }
    }
    // Every launch has a thread loop, even of one thread (a kernel without bound loops).
    if (!parts.thread_vars[0].defined() && !parts.thread_vars[1].defined() && !parts.thread_vars[2].defined()) {
      parts.thread_vars[0] = Var(TagName(false, 0), DType::Index());
    }
    LaunchRewriter rewriter(parts);
    parts.code = rewriter.VisitStmt(s);
    parts.shared = rewriter.shared;
    return AssembleLaunch(parts);
  }

  std::string name_;
  int count_ = 0;
};

}  // namespace

Stmt AssembleLaunch(const LaunchParts& parts) {
  Stmt s = parts.code;
  for (int d = 0; d < 3; ++d) {
    if (parts.thread_vars[d].defined()) {
      s = For::make(parts.thread_vars[d], make_zero(DType::Index()), Expr(parts.block[d]), ForKind::kThreadBinding, s,
                    TagName(false, d));
    }
  }
  int64_t end = 0;
  for (const LaunchParts::SharedBuffer& b : parts.shared) {
    if (b.offset >= 0) end = std::max(end, b.offset + b.bytes());
  }
  std::vector<int64_t> offsets;
  for (const LaunchParts::SharedBuffer& b : parts.shared) {
    int64_t offset = b.offset;
    if (offset < 0) {
      offset = (end + 15) / 16 * 16;
      end = offset + b.bytes();
    }
    offsets.push_back(offset);
  }
  int64_t offset = (end + 15) / 16 * 16;  // the block's dynamic shared memory
  for (size_t i = parts.shared.size(); i-- > 0;) {
    const LaunchParts::SharedBuffer& b = parts.shared[i];
    s = Allocate::make(b.buffer, {Expr(b.elements)}, 16, MemoryScope::kShared, s, offsets[i]);
  }
  for (int d = 0; d < 3; ++d) {
    if (parts.block_vars[d].defined()) {
      s = For::make(parts.block_vars[d], make_zero(DType::Index()), Expr(parts.grid[d]), ForKind::kThreadBinding, s,
                    TagName(true, d));
    }
  }
  return AttrStmt::make(attr::kGpuLaunch, parts.name, Expr(int64_t{offset}), s);
}

LaunchParts DisassembleLaunch(const GpuLaunch& launch) {
  LaunchParts parts;
  parts.name = launch.name;
  parts.grid = launch.grid;
  parts.block = launch.block;
  parts.block_vars = launch.block_vars;
  parts.thread_vars = launch.thread_vars;
  for (const Stmt& s : launch.shared) {
    const Allocate* a = s.as<Allocate>();
    int64_t elements = 0;
    AGATE_CHECK(is_const_int(a->NumElements(), &elements)) << "shared buffer " << a->buffer->name;
    parts.shared.push_back({a->buffer, elements, a->workspace_offset});
  }
  parts.code = launch.code;
  return parts;
}

Stmt MapLaunches(const Stmt& body, const std::function<void(LaunchParts*)>& f) {
  class Mapper : public IRMutator {
   public:
    explicit Mapper(const std::function<void(LaunchParts*)>& f) : f_(f) {}
    Stmt VisitStmt_(const AttrStmt* op, const Stmt& self) override {
      if (op->key != attr::kGpuLaunch) return IRMutator::VisitStmt_(op, self);
      std::vector<GpuLaunch> launches = CollectGpuLaunches(self);
      LaunchParts parts = DisassembleLaunch(launches.at(0));
      f_(&parts);
      return AssembleLaunch(parts);
    }

   private:
    const std::function<void(LaunchParts*)>& f_;
  };
  return Mapper(f).VisitStmt(body);
}

Stmt BindThreads(const Stmt& body, const std::string& kernel_name) {
  AGATE_CHECK(!HasGpuLaunches(body)) << "kernel " << kernel_name << " is bound twice";
  Binder binder(kernel_name);
  return binder.Root(body);
}

}  // namespace lower
}  // namespace agate
