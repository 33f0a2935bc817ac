#pragma once
// Which subexpressions of one statement a C-family printer (CUDA C, C) writes once into a named
// temporary instead of repeating them.
//
// Why: the loop IR is a DAG. Lowering substitutes one expression into many places (acos(x) uses
// x / sqrt(1 - x*x) a dozen times through atan's range reduction; every index expression recurs
// in each load of a fused kernel), and a printer that writes each use out in full repeats whole
// subtrees, so source text and compile time grow exponentially with the nesting: ONNX's acos case
// printed 4 MB of CUDA C that NVRTC took 40 s to compile. LLVM's code generator does not have the
// problem (it keeps one value per node); Halide's CSE pass and TVM's printer SSA are the same
// remedy for their C printers.
//
// Warp shuffles are always named, used once or more: every lane of the warp must execute one,
// and a shuffle printed under a short-circuit && or || or a ?: arm runs on some lanes only, which
// waits forever for the others (the cross-thread argmax of Hardmax hung on an H100 that way; the
// loop-IR evaluator evaluates both sides and never saw it). Naming it evaluates it before the
// statement, on every lane that reaches the statement.
//
// What is shared: nodes that occur twice or more (structurally equal nodes count as one: the
// lowering often rebuilds the same load or index arithmetic as distinct nodes) and are worth a
// name (not a constant or variable). What is never moved: a node that reads memory
// unless some use of it is evaluated unconditionally, because the temporary is
// evaluated before the statement, and a read that only a Select arm, the right side of && or ||,
// or a store predicate guards may be out of bounds (padding). Pure arithmetic may always move.
// Nodes containing a Let are left alone (their variable is declared where the Let is printed).
//
// Use: Analyze() the expressions of a statement, print them asking ClassOf()/IsShared() per node,
// declaring each shared class once (per vector lane) before the statement. Valid until the next
// Analyze().

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/ir/expr.h"

namespace agate {
namespace codegen {

class SharedExprs {
 public:
  // One statement's expressions; `conditional` when the statement evaluates it only under a
  // condition of its own (a predicated store's index and value).
  struct Root {
    ir::Expr expr;
    bool conditional = false;
  };
  void Analyze(const std::vector<Root>& roots);

  // True when `node` (reached from the analyzed roots) is printed once into a temporary.
  bool IsShared(const ir::ExprNode* node) const;
  // The structural class of `node`: equal for structurally equal nodes (the printer's cache key).
  int64_t ClassOf(const ir::ExprNode* node) const;

 private:
  struct ClassInfo {
    int uses = 0;                  // parent edges over the DAG (and roots)
    bool reads = false;            // reads memory itself (an unpredicated load)
    bool shuffle = false;          // a warp shuffle
    bool has_let = false;          // holds a Let somewhere inside
    bool unconditional = false;    // some use is evaluated whenever the statement is
    bool risky = false;            // evaluating it early may make a read that only a condition allowed
    bool leaf = false;
    std::vector<int64_t> children;  // classes of its children, in order (a child's class < its own)
  };
  int64_t Canonicalize(const ir::Expr& e);
  void MarkUnconditional(const ir::Expr& e, bool conditional);

  std::unordered_map<const ir::ExprNode*, int64_t> nodes_;  // node -> its class
  std::vector<ClassInfo> classes_;
  std::unordered_map<uint64_t, std::vector<std::pair<const ir::ExprNode*, int64_t>>> by_hash_;
  std::unordered_set<const ir::ExprNode*> visited_unconditional_;  // nodes visited unconditionally
};

}  // namespace codegen
}  // namespace agate
