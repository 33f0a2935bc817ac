#include "core/ir/stmt.h"

#include "core/ir/printer.h"
#include "core/support/error.h"

namespace agate {
namespace ir {

const char* StmtKindName(StmtKind kind) {
  switch (kind) {
    case StmtKind::kLetStmt: return "LetStmt";
    case StmtKind::kAttrStmt: return "AttrStmt";
    case StmtKind::kAssert: return "AssertStmt";
    case StmtKind::kFor: return "For";
    case StmtKind::kIfThenElse: return "IfThenElse";
    case StmtKind::kStore: return "Store";
    case StmtKind::kAllocate: return "Allocate";
    case StmtKind::kSeq: return "Seq";
    case StmtKind::kEvaluate: return "Evaluate";
    case StmtKind::kProvide: return "Provide";
    case StmtKind::kRealize: return "Realize";
  }
  return "?";
}

const char* ForKindName(ForKind kind) {
  switch (kind) {
    case ForKind::kSerial: return "serial";
    case ForKind::kParallel: return "parallel";
    case ForKind::kVectorized: return "vectorized";
    case ForKind::kUnrolled: return "unrolled";
    case ForKind::kThreadBinding: return "thread_binding";
  }
  return "?";
}

namespace {
template <typename T, typename... Args>
Stmt MakeStmt(Args&&... args) {
  return Stmt(std::make_shared<T>(std::forward<Args>(args)...));
}
void RequireBody(const Stmt& body, const char* node) {
  AGATE_REQUIRE(body.defined(), kInvalidArgument) << node << ": undefined body";
}
void RequireExpr(const Expr& e, const char* what, const char* node) {
  AGATE_REQUIRE(e.defined(), kInvalidArgument) << node << ": undefined " << what;
}
}  // namespace

Stmt LetStmt::make(Var var, Expr value, Stmt body) {
  RequireExpr(value, "value", "LetStmt");
  RequireBody(body, "LetStmt");
  AGATE_REQUIRE(var.dtype() == value.dtype(), kInvalidArgument)
      << "LetStmt " << var.name() << ": variable dtype " << var.dtype() << " differs from value " << value.dtype();
  return MakeStmt<LetStmt>(std::move(var), std::move(value), std::move(body));
}

Stmt AttrStmt::make(std::string key, std::string node_name, Expr value, Stmt body) {
  RequireBody(body, "AttrStmt");
  return MakeStmt<AttrStmt>(std::move(key), std::move(node_name), std::move(value), std::move(body));
}

Stmt AssertStmt::make(Expr condition, std::string message) {
  RequireExpr(condition, "condition", "AssertStmt");
  AGATE_REQUIRE(condition.dtype() == DType::Bool(), kInvalidArgument)
      << "AssertStmt: condition must be a scalar bool, got " << condition.dtype();
  return MakeStmt<AssertStmt>(std::move(condition), std::move(message));
}

Stmt For::make(Var var, Expr min, Expr extent, ForKind kind, Stmt body, std::string thread_tag) {
  RequireExpr(min, "min", "For");
  RequireExpr(extent, "extent", "For");
  RequireBody(body, "For");
  AGATE_REQUIRE(var.dtype().is_integer() && var.dtype().is_scalar(), kInvalidArgument)
      << "For " << var.name() << ": loop variable must be a scalar integer, got " << var.dtype();
  min = cast(var.dtype(), min);
  extent = cast(var.dtype(), extent);
  AGATE_REQUIRE(kind != ForKind::kThreadBinding || !thread_tag.empty(), kInvalidArgument)
      << "For " << var.name() << ": a thread binding needs a thread tag";
  return MakeStmt<For>(std::move(var), std::move(min), std::move(extent), kind, std::move(body), std::move(thread_tag));
}

Stmt IfThenElse::make(Expr condition, Stmt then_case, Stmt else_case) {
  RequireExpr(condition, "condition", "IfThenElse");
  RequireBody(then_case, "IfThenElse");
  AGATE_REQUIRE(condition.dtype() == DType::Bool(), kInvalidArgument)
      << "IfThenElse: condition must be a scalar bool, got " << condition.dtype() << " in " << condition;
  return MakeStmt<IfThenElse>(std::move(condition), std::move(then_case), std::move(else_case));
}

Stmt Store::make(Buffer buffer, Expr value, Expr index, Expr predicate) {
  AGATE_REQUIRE(buffer.defined(), kInvalidArgument) << "Store: undefined buffer";
  RequireExpr(value, "value", "Store");
  RequireExpr(index, "index", "Store");
  AGATE_REQUIRE(index.dtype().is_integer(), kInvalidArgument)
      << "Store to " << buffer->name << ": index must be an integer, got " << index.dtype();
  AGATE_REQUIRE(value.dtype() == buffer->dtype.with_lanes(index.dtype().lanes()), kInvalidArgument)
      << "Store to " << buffer->name << ": value " << value << " is " << value.dtype() << ", buffer holds "
      << buffer->dtype << " and the index has " << index.dtype().lanes() << " lane(s)";
  if (predicate.defined()) {
    AGATE_REQUIRE(predicate.dtype() == DType::Bool(index.dtype().lanes()), kInvalidArgument)
        << "Store to " << buffer->name << ": predicate " << predicate.dtype() << " does not match index lanes";
  }
  return MakeStmt<Store>(std::move(buffer), std::move(value), std::move(index), std::move(predicate));
}

Stmt Allocate::make(Buffer buffer, std::vector<Expr> extents, int alignment, MemoryScope scope, Stmt body,
                    int64_t workspace_offset) {
  AGATE_REQUIRE(buffer.defined(), kInvalidArgument) << "Allocate: undefined buffer";
  RequireBody(body, "Allocate");
  for (Expr& e : extents) {
    AGATE_REQUIRE(e.defined() && e.dtype().is_integer(), kInvalidArgument)
        << "Allocate " << buffer->name << ": extents must be integers";
    e = cast(DType::Index(), e);
  }
  AGATE_REQUIRE(scope != MemoryScope::kWorkspace || workspace_offset >= 0, kInvalidArgument)
      << "Allocate " << buffer->name << ": a workspace allocation needs an offset";
  return MakeStmt<Allocate>(std::move(buffer), std::move(extents), alignment, scope, workspace_offset, std::move(body));
}

Expr Allocate::NumElements() const {
  Expr n = IntImm::make(DType::Index(), 1);
  for (const Expr& e : extents) n = n * e;
  return n;
}

Stmt Seq::make(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (Stmt& s : stmts) {
    if (!s.defined()) continue;
    if (const Seq* inner = s.as<Seq>()) {
      flat.insert(flat.end(), inner->stmts.begin(), inner->stmts.end());
    } else {
      flat.push_back(std::move(s));
    }
  }
  if (flat.size() == 1) return flat[0];
  return MakeStmt<Seq>(std::move(flat));
}

Stmt Evaluate::make(Expr value) {
  RequireExpr(value, "value", "Evaluate");
  return MakeStmt<Evaluate>(std::move(value));
}

Stmt Provide::make(Producer producer, Expr value, std::vector<Expr> indices) {
  AGATE_REQUIRE(producer != nullptr, kInvalidArgument) << "Provide: undefined tensor";
  RequireExpr(value, "value", "Provide");
  AGATE_REQUIRE(indices.size() == producer->producer_shape().size(), kInvalidArgument)
      << "Provide " << producer->producer_name() << ": " << indices.size() << " indices for "
      << producer->producer_shape().size() << " dimensions";
  AGATE_REQUIRE(value.dtype() == producer->producer_dtype(), kInvalidArgument)
      << "Provide " << producer->producer_name() << ": value is " << value.dtype() << ", tensor holds "
      << producer->producer_dtype();
  return MakeStmt<Provide>(std::move(producer), std::move(value), std::move(indices));
}

Stmt Realize::make(Producer producer, std::vector<Range> bounds, MemoryScope scope, Stmt body) {
  AGATE_REQUIRE(producer != nullptr, kInvalidArgument) << "Realize: undefined tensor";
  RequireBody(body, "Realize");
  AGATE_REQUIRE(bounds.size() == producer->producer_shape().size(), kInvalidArgument)
      << "Realize " << producer->producer_name() << ": " << bounds.size() << " bounds for "
      << producer->producer_shape().size() << " dimensions";
  return MakeStmt<Realize>(std::move(producer), std::move(bounds), scope, std::move(body));
}

}  // namespace ir
}  // namespace agate
