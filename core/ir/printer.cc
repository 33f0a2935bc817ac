#include "core/ir/printer.h"

#include <cmath>
#include <iomanip>
#include <sstream>

#include "core/ir/functor.h"

namespace agate {
namespace ir {
namespace {

// Precedence of infix forms; higher binds tighter.
enum Prec { kPrecOr = 1, kPrecAnd, kPrecCmp, kPrecAdd, kPrecMul, kPrecUnary, kPrecAtom };

class Printer : public ExprFunctor<void(const Expr&, int)>, public StmtFunctor<void(const Stmt&, int)> {
 public:
  explicit Printer(std::ostream& os) : os_(os) {}

  void Print(const Expr& e, int min_prec = 0) {
    if (!e.defined()) {
      os_ << "<undefined>";
      return;
    }
    ExprFunctor<void(const Expr&, int)>::VisitExpr(e, min_prec);
  }
  void Print(const Stmt& s, int indent) {
    if (!s.defined()) {
      Indent(indent);
      os_ << "<undefined>\n";
      return;
    }
    StmtFunctor<void(const Stmt&, int)>::VisitStmt(s, indent);
  }

  // ---- expressions
  void VisitExpr_(const IntImm* op, const Expr&, int) override {
    if (op->dtype.is_bool()) {
      os_ << (op->value ? "true" : "false");
    } else if (op->dtype == DType::Index() || op->dtype == DType::Int(32)) {
      os_ << op->value;
    } else {
      os_ << op->dtype << "(" << op->value << ")";
    }
  }
  void VisitExpr_(const FloatImm* op, const Expr&, int) override {
    std::ostringstream s;
    s << std::setprecision(9) << op->value;
    std::string text = s.str();
    if (std::isfinite(op->value) && text.find_first_of(".e") == std::string::npos) text += ".0";
    if (op->dtype == DType::Float(32)) {
      os_ << text << "f";
    } else if (op->dtype == DType::Float(64)) {
      os_ << text;
    } else {
      os_ << op->dtype << "(" << text << ")";
    }
  }
  void VisitExpr_(const VarNode* op, const Expr&, int) override { os_ << op->name; }

  void Infix(const Expr& a, const Expr& b, const char* sym, int prec, int min_prec) {
    bool paren = prec < min_prec;
    if (paren) os_ << "(";
    Print(a, prec);
    os_ << sym;
    Print(b, prec + 1);  // left-associative: a right operand of equal precedence needs parentheses
    if (paren) os_ << ")";
  }
  void CallForm(const char* name, const std::vector<Expr>& args) {
    os_ << name << "(";
    for (size_t i = 0; i < args.size(); ++i) {
      if (i) os_ << ", ";
      Print(args[i]);
    }
    os_ << ")";
  }

  void VisitExpr_(const Add* op, const Expr&, int p) override { Infix(op->a, op->b, " + ", kPrecAdd, p); }
  void VisitExpr_(const Sub* op, const Expr&, int p) override { Infix(op->a, op->b, " - ", kPrecAdd, p); }
  void VisitExpr_(const Mul* op, const Expr&, int p) override { Infix(op->a, op->b, "*", kPrecMul, p); }
  void VisitExpr_(const Div* op, const Expr&, int p) override { Infix(op->a, op->b, "/", kPrecMul, p); }
  void VisitExpr_(const Mod* op, const Expr&, int p) override { Infix(op->a, op->b, " % ", kPrecMul, p); }
  void VisitExpr_(const FloorDiv* op, const Expr&, int) override { CallForm("floordiv", {op->a, op->b}); }
  void VisitExpr_(const FloorMod* op, const Expr&, int) override { CallForm("floormod", {op->a, op->b}); }
  void VisitExpr_(const Min* op, const Expr&, int) override { CallForm("min", {op->a, op->b}); }
  void VisitExpr_(const Max* op, const Expr&, int) override { CallForm("max", {op->a, op->b}); }
  void VisitExpr_(const EQ* op, const Expr&, int p) override { Infix(op->a, op->b, " == ", kPrecCmp, p); }
  void VisitExpr_(const NE* op, const Expr&, int p) override { Infix(op->a, op->b, " != ", kPrecCmp, p); }
  void VisitExpr_(const LT* op, const Expr&, int p) override { Infix(op->a, op->b, " < ", kPrecCmp, p); }
  void VisitExpr_(const LE* op, const Expr&, int p) override { Infix(op->a, op->b, " <= ", kPrecCmp, p); }
  void VisitExpr_(const GT* op, const Expr&, int p) override { Infix(op->a, op->b, " > ", kPrecCmp, p); }
  void VisitExpr_(const GE* op, const Expr&, int p) override { Infix(op->a, op->b, " >= ", kPrecCmp, p); }
  void VisitExpr_(const And* op, const Expr&, int p) override { Infix(op->a, op->b, " && ", kPrecAnd, p); }
  void VisitExpr_(const Or* op, const Expr&, int p) override { Infix(op->a, op->b, " || ", kPrecOr, p); }
  void VisitExpr_(const Not* op, const Expr&, int) override {
    os_ << "!";
    Print(op->a, kPrecUnary);
  }
  void VisitExpr_(const Select* op, const Expr&, int) override {
    CallForm("select", {op->condition, op->true_value, op->false_value});
  }
  void VisitExpr_(const Cast* op, const Expr&, int) override {
    os_ << op->dtype << "(";
    Print(op->value);
    os_ << ")";
  }
  void VisitExpr_(const Call* op, const Expr&, int) override {
    if (op->op == CallOp::kReinterpret) {
      os_ << "reinterpret<" << op->dtype << ">";
      CallForm("", op->args);
      return;
    }
    CallForm(CallOpName(op->op), op->args);
  }
  void VisitExpr_(const Ramp* op, const Expr&, int) override {
    os_ << "ramp(";
    Print(op->base);
    os_ << ", ";
    Print(op->stride);
    os_ << ", " << op->lanes << ")";
  }
  void VisitExpr_(const Broadcast* op, const Expr&, int) override {
    os_ << "x" << op->lanes << "(";
    Print(op->value);
    os_ << ")";
  }
  void VisitExpr_(const Let* op, const Expr&, int) override {
    os_ << "(let " << op->var.name() << " = ";
    Print(op->value);
    os_ << " in ";
    Print(op->body);
    os_ << ")";
  }
  void VisitExpr_(const Load* op, const Expr&, int) override {
    os_ << op->buffer->name << "[";
    Print(op->index);
    PrintPredicate(op->predicate);
    os_ << "]";
  }
  // A lane mask prints inside the brackets: A[ramp(i, 1, 8) if mask].
  void PrintPredicate(const Expr& predicate) {
    if (!predicate.defined()) return;
    os_ << " if ";
    Print(predicate);
  }
  void VisitExpr_(const TensorRead* op, const Expr&, int) override {
    os_ << op->producer->producer_name();
    CallForm("", op->indices);
  }
  void VisitExpr_(const Reduce* op, const Expr&, int) override {
    os_ << "reduce(combiner=[";
    for (size_t i = 0; i < op->combiner.result.size(); ++i) {
      if (i) os_ << ", ";
      Print(op->combiner.result[i]);
    }
    os_ << "], source=[";
    for (size_t i = 0; i < op->source.size(); ++i) {
      if (i) os_ << ", ";
      Print(op->source[i]);
    }
    os_ << "], axis=[";
    for (size_t i = 0; i < op->axis.size(); ++i) {
      if (i) os_ << ", ";
      os_ << op->axis[i].name() << " in ";
      PrintRange(op->axis[i].dom());
    }
    os_ << "]";
    if (!is_one(op->condition)) {
      os_ << ", where=";
      Print(op->condition);
    }
    if (!op->init.empty()) CallForm(", init=", op->init);
    if (op->combiner.size() > 1) os_ << ", value_index=" << op->value_index;
    os_ << ")";
  }

  void PrintRange(const Range& r) {
    os_ << "[";
    Print(r.min);
    os_ << ", ";
    Print(r.extent);
    os_ << ")";
  }

  // ---- statements
  void Indent(int n) {
    for (int i = 0; i < n; ++i) os_ << "  ";
  }
  void VisitStmt_(const LetStmt* op, const Stmt&, int ind) override {
    Indent(ind);
    os_ << "let " << op->var.name() << " = ";
    Print(op->value);
    os_ << "\n";
    Print(op->body, ind);
  }
  void VisitStmt_(const AttrStmt* op, const Stmt&, int ind) override {
    Indent(ind);
    os_ << "// attr " << op->key;
    if (!op->node_name.empty()) os_ << " " << op->node_name;
    if (op->value.defined()) {
      os_ << " = ";
      Print(op->value);
    }
    os_ << "\n";
    Print(op->body, ind);
  }
  void VisitStmt_(const AssertStmt* op, const Stmt&, int ind) override {
    Indent(ind);
    os_ << "assert(";
    Print(op->condition);
    os_ << ", \"" << op->message << "\")\n";
  }
  void VisitStmt_(const For* op, const Stmt&, int ind) override {
    Indent(ind);
    os_ << "for (" << op->var.name() << ", ";
    Print(op->min);
    os_ << ", ";
    Print(op->extent);
    os_ << ")";
    if (op->for_kind != ForKind::kSerial) os_ << " " << ForKindName(op->for_kind);
    if (!op->thread_tag.empty()) os_ << "(" << op->thread_tag << ")";
    os_ << " {\n";
    Print(op->body, ind + 1);
    Indent(ind);
    os_ << "}\n";
  }
  void VisitStmt_(const IfThenElse* op, const Stmt&, int ind) override {
    Indent(ind);
    os_ << "if (";
    Print(op->condition);
    os_ << ") {\n";
    Print(op->then_case, ind + 1);
    if (op->else_case.defined()) {
      Indent(ind);
      os_ << "} else {\n";
      Print(op->else_case, ind + 1);
    }
    Indent(ind);
    os_ << "}\n";
  }
  void VisitStmt_(const Store* op, const Stmt&, int ind) override {
    Indent(ind);
    os_ << op->buffer->name << "[";
    Print(op->index);
    PrintPredicate(op->predicate);
    os_ << "] = ";
    Print(op->value);
    os_ << "\n";
  }
  void VisitStmt_(const Allocate* op, const Stmt&, int ind) override {
    Indent(ind);
    os_ << "allocate " << op->buffer->name << "[" << op->buffer->dtype << " * ";
    for (size_t i = 0; i < op->extents.size(); ++i) {
      if (i) os_ << " * ";
      Print(op->extents[i], kPrecMul + 1);
    }
    os_ << "], " << MemoryScopeName(op->scope) << ", align " << op->alignment;
    if (op->scope == MemoryScope::kWorkspace) os_ << ", offset " << op->workspace_offset;
    os_ << "\n";
    Print(op->body, ind);
  }
  void VisitStmt_(const Seq* op, const Stmt&, int ind) override {
    for (const Stmt& s : op->stmts) Print(s, ind);
  }
  void VisitStmt_(const Evaluate* op, const Stmt&, int ind) override {
    Indent(ind);
    Print(op->value);
    os_ << "\n";
  }
  void VisitStmt_(const Provide* op, const Stmt&, int ind) override {
    Indent(ind);
    os_ << op->producer->producer_name();
    CallForm("", op->indices);
    os_ << " = ";
    Print(op->value);
    os_ << "\n";
  }
  void VisitStmt_(const Realize* op, const Stmt&, int ind) override {
    Indent(ind);
    os_ << "realize " << op->producer->producer_name() << "(";
    for (size_t i = 0; i < op->bounds.size(); ++i) {
      if (i) os_ << ", ";
      PrintRange(op->bounds[i]);
    }
    os_ << ")";
    if (op->scope != MemoryScope::kGlobal) os_ << " " << MemoryScopeName(op->scope);
    os_ << " {\n";
    Print(op->body, ind + 1);
    Indent(ind);
    os_ << "}\n";
  }

 private:
  std::ostream& os_;
};

}  // namespace

std::ostream& operator<<(std::ostream& os, const Expr& expr) {
  Printer(os).Print(expr);
  return os;
}

std::ostream& operator<<(std::ostream& os, const Stmt& stmt) {
  Printer(os).Print(stmt, 0);
  return os;
}

std::ostream& operator<<(std::ostream& os, const Range& range) {
  Printer(os).PrintRange(range);
  return os;
}

std::ostream& operator<<(std::ostream& os, const LoweredFunc& func) {
  os << "func " << func.name << "(";
  for (size_t i = 0; i < func.params.size(); ++i) {
    if (i) os << ", ";
    const BufferNode* b = func.params[i].get();
    os << b->name << ": " << b->dtype << "[";
    for (size_t d = 0; d < b->shape.size(); ++d) {
      if (d) os << ", ";
      os << b->shape[d];
    }
    os << "]";
  }
  os << ")";
  if (func.workspace_bytes > 0) os << " workspace " << func.workspace_bytes;
  os << " {\n";
  Printer(os).Print(func.body, 1);
  os << "}\n";
  return os;
}

std::string ToString(const Expr& expr) {
  std::ostringstream s;
  s << expr;
  return s.str();
}
std::string ToString(const Stmt& stmt) {
  std::ostringstream s;
  s << stmt;
  return s.str();
}
std::string ToString(const Range& range) {
  std::ostringstream s;
  s << range;
  return s.str();
}
std::string ToString(const LoweredFunc& func) {
  std::ostringstream s;
  s << func;
  return s.str();
}

}  // namespace ir
}  // namespace agate
