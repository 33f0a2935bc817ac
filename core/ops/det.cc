#include "core/ops/det.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/ir/function.h"
#include "core/ops/composed_kernel.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using composed::I;
using composed::Load;
using composed::Loop;
using composed::RoundUp;
using composed::Store;
using ir::Buffer;
using ir::Expr;
using ir::Stmt;
using ir::Var;

const ir::DType kF64 = ir::DType::Float(64);
const ir::DType kI64 = ir::DType::Int(64);

// A serial loop over [begin, end) (empty when end <= begin).
Stmt LoopFrom(const Var& v, const Expr& begin, const Expr& end, const Stmt& body) {
  return ir::For::make(v, begin, ir::max(end - begin, I(0)), ir::ForKind::kSerial, body);
}

}  // namespace

bool IsDetOp(const std::string& op) { return op == "Det"; }

GroupKernel LowerDetGroup(const graph::Graph& graph, const graph::FusedGroup& group, const target::Target& target,
                          const std::string& kernel_name) {
  ComposedKernel built = BeginComposedKernel(graph, group, target, kernel_name, "a serial elimination: CPU targets only");
  const graph::Node& node = graph.nodes.at(group.nodes[0]);
  const graph::TensorType& x_type = graph.TypeOf(node.inputs[0]);
  AGATE_REQUIRE(x_type.dtype.is_float(), kUnsupported)
      << node.Describe() << ": Det of " << x_type.dtype << graph::ShapeToString(x_type.shape)
      << " (floating-point matrices only)";
  const ComposedParams& params = built.params;
  AGATE_REQUIRE(params.outputs.count(0), kInternal) << node.Describe() << ": its output is not the kernel's";
  const Buffer& x = params.inputs.at(node.inputs[0]);
  const Buffer& out = params.outputs.at(0);
  const ir::DType out_dtype = graph.TypeOf(node.outputs[0]).dtype;
  const int64_t n = x_type.shape.back();
  const int64_t matrices = graph::NumElements(graph.TypeOf(node.outputs[0]).shape);

  // Scratch: the matrix being eliminated (workspace), the determinant so far, and the pivot row
  // and whether the matrix was found singular (on the stack).
  const int64_t elements = std::max<int64_t>(n * n, 1);
  Buffer a = ir::CreateBuffer("det_matrix", kF64, {I(elements)}, ir::MemoryScope::kWorkspace);
  Buffer det = ir::CreateBuffer("det_value", kF64, {I(1)}, ir::MemoryScope::kLocal);
  Buffer state = ir::CreateBuffer("det_state", kI64, {I(2)}, ir::MemoryScope::kLocal);
  enum Slot : int64_t { kPivot, kSingular };
  auto at = [&](const Expr& row, const Expr& column) { return Load(a, row * I(n) + column); };
  auto set_det = [&](const Expr& v) { return Store(det, v, I(0)); };
  Expr det_value = Load(det, I(0));

  Var m("det_batch"), e("det_element"), col("det_column"), r("det_row"), k("det_k"), p("det_pivot"), f("det_factor", kF64);
  Var t("det_swapped", kF64), r2("det_row_below"), k2("det_k_eliminate");
  // The pivot row lies in [col, n) whatever the values; the clamp says so to the code.
  Expr pivot_row = ir::max(ir::min(Load(state, I(kPivot)), I(n - 1)), Expr(col));
  Stmt copy = Loop(e, I(n * n), Store(a, ir::cast(kF64, Load(x, Expr(m) * I(n * n) + e)), e));
  // The pivot: the first row at or below the diagonal whose magnitude no later row exceeds.
  Stmt search = ir::Seq::make({
      Store(state, Expr(col), I(kPivot)),
      LoopFrom(r, Expr(col) + I(1), I(n),
               composed::If(ir::abs(at(r, col)) > ir::abs(at(pivot_row, col)),
                            Store(state, Expr(r), I(kPivot)))),
  });
  // Swap rows p and col (p > col: the determinant changes sign).
  Stmt swap = composed::If(Expr(p) != Expr(col), ir::Seq::make({
      Loop(k, I(n), ir::LetStmt::make(t, at(p, k), ir::Seq::make({
          Store(a, at(col, k), Expr(p) * I(n) + k),
          Store(a, Expr(t), Expr(col) * I(n) + k),
      }))),
      set_det(-det_value),
  }));
  Stmt eliminate = LoopFrom(r2, Expr(col) + I(1), I(n), ir::LetStmt::make(f, at(r2, col) / at(col, col),
      LoopFrom(k2, Expr(col) + I(1), I(n), Store(a, at(r2, k2) - Expr(f) * at(col, k2), Expr(r2) * I(n) + k2))));
  Stmt step = ir::Seq::make({
      search,
      ir::LetStmt::make(p, pivot_row, ir::IfThenElse::make(at(p, col) == ir::make_zero(kF64),
          ir::Seq::make({set_det(ir::make_zero(kF64)), Store(state, I(1), I(kSingular))}),
          ir::Seq::make({swap, set_det(det_value * at(col, col)), eliminate}))),
  });
  Stmt per_matrix = ir::Seq::make({
      copy,
      set_det(ir::make_const(kF64, 1.0)),
      Store(state, I(0), I(kSingular)),
      Loop(col, I(n), composed::If(Load(state, I(kSingular)) == I(0), step)),
      Store(out, ir::cast(out_dtype, det_value), m),
  });
  Stmt stmt = Loop(m, I(matrices), per_matrix);
  stmt = ir::Allocate::make(state, {I(2)}, 64, ir::MemoryScope::kLocal, stmt);
  stmt = ir::Allocate::make(det, {I(1)}, 64, ir::MemoryScope::kLocal, stmt);
  stmt = ir::Allocate::make(a, {I(elements)}, 64, ir::MemoryScope::kWorkspace, stmt, 0);
  return FinishComposedKernel(std::move(built), stmt, RoundUp(elements * 8, 64),
                              "Det of " + std::to_string(matrices) + " matrices " + std::to_string(n) + "x" +
                                  std::to_string(n) + ": serial elimination with partial pivoting in float64 [" +
                                  node.op + "]");
}

}  // namespace ops
}  // namespace agate
