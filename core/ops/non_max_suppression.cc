#include "core/ops/non_max_suppression.h"

#include <algorithm>
#include <array>
#include <map>
#include <utility>

#include "core/graph/value_selection.h"
#include "core/ir/function.h"
#include "core/ops/composed_kernel.h"
#include "core/ops/op_context.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using ir::Buffer;
using ir::Expr;
using ir::Stmt;
using ir::Var;

const ir::DType kF32 = ir::DType::Float(32);
const ir::DType kI64 = ir::DType::Int(64);

using composed::I;
using composed::If;
using composed::Load;
using composed::Loop;
using composed::RoundUp;
using composed::Store;

Expr F(double v) { return ir::make_const(kF32, v); }
Expr IsNaN(const Expr& v) { return !(v == v); }

// ------------------------------------------------------------ IoU, as NmsSuppresses

// Python's min and max of two values (the first unless the second is strictly smaller / larger).
Expr PyMin(const Expr& a, const Expr& b) { return ir::select(b < a, b, a); }
Expr PyMax(const Expr& a, const Expr& b) { return ir::select(b > a, b, a); }

struct Span {
  Expr lo, hi;
};
using Box = std::array<Expr, 4>;

// A box's extent on axis 0 (x) or 1 (y).
Span BoxSpan(const Box& box, bool center_point_box, int axis) {
  if (center_point_box) {
    Expr half = box[2 + axis] / F(2.0);
    return {box[axis] - half, box[axis] + half};
  }
  const int first = axis == 0 ? 1 : 0;  // [y1, x1, y2, x2], in either order
  Expr a = box[first], b = box[first + 2];
  return {ir::select(a >= b, b, a), ir::select(a >= b, a, b)};
}

// True when box `a` (the candidate) is suppressed by box `b` (one kept before it): each step of
// graph::NmsSuppresses in the same order, so every float32 rounding matches the reference's.
Expr Suppresses(const Box& a, const Box& b, bool center_point_box, const Expr& iou_threshold) {
  Span ax = BoxSpan(a, center_point_box, 0), bx = BoxSpan(b, center_point_box, 0);
  Span ay = BoxSpan(a, center_point_box, 1), by = BoxSpan(b, center_point_box, 1);
  Expr x_lo = PyMax(ax.lo, bx.lo), x_hi = PyMin(ax.hi, bx.hi);
  Expr y_lo = PyMax(ay.lo, by.lo), y_hi = PyMin(ay.hi, by.hi);
  Expr intersection = (x_hi - x_lo) * (y_hi - y_lo);
  Expr area_a = (ax.hi - ax.lo) * (ay.hi - ay.lo);
  Expr area_b = (bx.hi - bx.lo) * (by.hi - by.lo);
  Expr union_area = area_a + area_b - intersection;
  Expr zero = F(0.0);
  Expr overlaps = !(x_hi <= x_lo) && !(y_hi <= y_lo) && !(intersection <= zero);
  Expr proper = !(area_a <= zero) && !(area_b <= zero) && !(union_area <= zero);
  return overlaps && proper && intersection / union_area > iou_threshold;
}

// ------------------------------------------------------------ the node's settings

// The operands as expressions: attributes (constants) or loads of the run-time inputs.
struct Settings {
  bool center_point_box = false;
  Expr max_per_class;    // int64 in [0, N]
  Expr iou_threshold;    // float32
  Expr score_threshold;  // float32; undefined: none given
  Stmt checks;           // the run-time operands' checks, or undefined
};

Settings ReadSettings(const graph::Graph& graph, const graph::Node& node, const std::map<std::string, Buffer>& values,
                      int64_t n) {
  const graph::Attributes& a = node.attrs;
  // Run-time operand k (input 2 + k) with its one element, or nullptr.
  auto operand = [&](int k) -> const Buffer* {
    size_t input = static_cast<size_t>(2 + k);
    if (input >= node.inputs.size() || node.inputs[input].empty()) return nullptr;
    if (graph.TypeOf(node.inputs[input]).numel() == 0) return nullptr;  // empty: absent (ONNX's reference)
    return &values.at(node.inputs[input]);
  };
  Settings s;
  s.center_point_box = a.GetInt("center_point_box", 0) != 0;
  const char* const* names = graph::kNmsOperands;
  if (a.Has(names[0])) {
    s.max_per_class = I(std::clamp<int64_t>(a.GetInt(names[0]), 0, n));
  } else if (operand(0) != nullptr) {
    s.max_per_class = ir::min(ir::max(Load(*operand(0), I(0)), I(0)), I(n));  // negative: none (the reference)
  } else {
    s.max_per_class = I(0);
  }
  if (a.Has(names[1])) {
    s.iou_threshold = F(static_cast<float>(a.GetFloat(names[1])));
  } else if (operand(1) != nullptr) {
    s.iou_threshold = Load(*operand(1), I(0));
    // The one operand with invalid values: the spec's range for the threshold (NaN is outside it).
    s.checks = ir::AssertStmt::make(s.iou_threshold >= F(0.0) && s.iou_threshold <= F(1.0),
                                    node.Describe() + ": the iou_threshold (input 3, read when the model runs) is "
                                                      "outside [0, 1]");
  } else {
    s.iou_threshold = F(0.0);
  }
  if (a.Has(names[2])) {
    s.score_threshold = F(static_cast<float>(a.GetFloat(names[2])));
  } else if (operand(2) != nullptr) {
    s.score_threshold = Load(*operand(2), I(0));
  }
  return s;
}

}  // namespace

bool IsNonMaxSuppressionOp(const std::string& op) { return op == "RunTimeNonMaxSuppression"; }

GroupKernel LowerNonMaxSuppressionGroup(const graph::Graph& graph, const graph::FusedGroup& group,
                                        const target::Target& target, const std::string& kernel_name) {
  ComposedKernel built = BeginComposedKernel(
      graph, group, target, kernel_name, "its output extents are known only when the model runs: CPU targets only");
  const graph::Node& node = graph.nodes.at(group.nodes[0]);
  // Parameters: the group's inputs (every one an input of the node), then its outputs (0 the
  // rows, 1 their extents).
  ComposedParams& params = built.params;
  std::map<std::string, Buffer>& values = params.inputs;
  std::map<int, Buffer>& outputs = params.outputs;

  const graph::Shape& box_shape = graph.TypeOf(node.inputs[0]).shape;
  const int64_t batches = box_shape[0], n = box_shape[1], classes = graph.TypeOf(node.inputs[1]).shape[1];
  const int64_t rows_bound = graph.TypeOf(node.outputs[0]).shape[0];
  const Buffer& boxes = values.at(node.inputs[0]);
  const Buffer& scores = values.at(node.inputs[1]);
  Settings settings = ReadSettings(graph, node, values, n);

  // Scratch: each class's candidates in selection order and the boxes it kept (workspace), and the
  // counters (on the stack).
  const int64_t slots = std::max<int64_t>(n, 1);
  Buffer order = ir::CreateBuffer("nms_order", kI64, {I(slots)}, ir::MemoryScope::kWorkspace);
  Buffer kept = ir::CreateBuffer("nms_kept", kI64, {I(slots)}, ir::MemoryScope::kWorkspace);
  Buffer count = ir::CreateBuffer("nms_count", kI64, {I(5)}, ir::MemoryScope::kLocal);
  enum Counter : int64_t { kRows, kCandidates, kKeptInClass, kAhead, kClear };
  auto counter = [&](Counter c) { return Load(count, I(c)); };
  auto set = [&](Counter c, const Expr& v) { return Store(count, v, I(c)); };
  auto bump = [&](Counter c) { return set(c, counter(c) + I(1)); };

  Var b("nms_batch"), c("nms_class"), i("nms_box"), j("nms_other"), k("nms_position"), s("nms_kept_box");
  Var box("nms_candidate");
  auto score = [&](const Expr& index) { return Load(scores, (Expr(b) * I(classes) + c) * I(n) + index); };
  auto corners = [&](const Expr& index) {
    Box corner;
    for (int e = 0; e < 4; ++e) corner[e] = Load(boxes, (Expr(b) * I(n) + index) * I(4) + I(e));
    return corner;
  };
  // Whether a box is a candidate (its score passes), and whether box `x` comes before box `y` in
  // the selection order (graph::NmsScoreBefore, ties by index: a strict total order, so the
  // counts below are a permutation of the candidates).
  auto candidate = [&](const Expr& index, const Expr& also) {
    return settings.score_threshold.defined() ? score(index) > settings.score_threshold && also : also;
  };
  auto ahead = [&](const Expr& x, const Expr& y) {
    Expr sx = score(x), sy = score(y);
    Expr before = !IsNaN(sx) && (IsNaN(sy) || sx > sy);
    Expr same = sx == sy || (IsNaN(sx) && IsNaN(sy));
    return before || (same && x < y);
  };

  // The candidates in index order (in `kept`, which the walk only fills after the ranking), then
  // in selection order: each one at the count of candidates ahead of it. Ranking among the
  // candidates alone makes a score threshold cut the quadratic step to K^2 for K candidates.
  Stmt gather = Loop(i, I(n), If(candidate(i, ir::make_const(ir::DType::Bool(), 1)), ir::Seq::make({
      Store(kept, Expr(i), ir::min(counter(kCandidates), I(slots - 1))),
      bump(kCandidates),
  })));
  Var position("nms_rank_slot"), ranked("nms_ranked");
  Stmt rank = Loop(position, counter(kCandidates), ir::LetStmt::make(ranked, Load(kept, position), ir::Seq::make({
      set(kAhead, I(0)),
      Loop(j, counter(kCandidates), If(ahead(Load(kept, j), ranked), bump(kAhead))),
      Store(order, Expr(ranked), ir::min(counter(kAhead), I(slots - 1))),
  })));
  // The greedy walk: a candidate is kept unless a box kept before it suppresses it.
  std::vector<Stmt> keep = {Store(kept, Expr(box), ir::min(counter(kKeptInClass), I(slots - 1)))};
  if (outputs.count(0)) {
    Expr row = counter(kRows) * I(3);
    keep.push_back(Store(outputs[0], Expr(b), row));
    keep.push_back(Store(outputs[0], Expr(c), row + I(1)));
    keep.push_back(Store(outputs[0], Expr(box), row + I(2)));
  }
  keep.push_back(bump(kKeptInClass));
  keep.push_back(bump(kRows));
  Box mine = corners(box), theirs = corners(Load(kept, s));
  Stmt walk = Loop(k, I(n), If(Expr(k) < counter(kCandidates) && counter(kKeptInClass) < settings.max_per_class,
      ir::LetStmt::make(box, ir::min(Load(order, k), I(slots - 1)), ir::Seq::make({
          set(kClear, I(1)),
          Loop(s, counter(kKeptInClass),
               If(Suppresses(mine, theirs, settings.center_point_box, settings.iou_threshold), set(kClear, I(0)))),
          // The row bound holds whatever the values; the test keeps the write provably in bounds.
          If(counter(kClear) == I(1) && counter(kRows) < I(rows_bound), ir::Seq::make(keep)),
      }))));
  Stmt per_class = ir::Seq::make({set(kCandidates, I(0)), gather, rank, set(kKeptInClass, I(0)), walk});
  std::vector<Stmt> body = {settings.checks, set(kRows, I(0)),
                            Loop(b, I(batches), Loop(c, I(classes), per_class))};
  if (outputs.count(1)) {
    body.push_back(Store(outputs[1], counter(kRows), I(0)));
    body.push_back(Store(outputs[1], I(3), I(1)));
  }
  Stmt stmt = ir::Seq::make(body);
  stmt = ir::Allocate::make(count, {I(5)}, 64, ir::MemoryScope::kLocal, stmt);
  const int64_t scratch = RoundUp(slots * 8, 64);
  stmt = ir::Allocate::make(kept, {I(slots)}, 64, ir::MemoryScope::kWorkspace, stmt, scratch);
  stmt = ir::Allocate::make(order, {I(slots)}, 64, ir::MemoryScope::kWorkspace, stmt, 0);
  return FinishComposedKernel(std::move(built), stmt, 2 * scratch,
                              "NonMaxSuppression B=" + std::to_string(batches) + " C=" + std::to_string(classes) +
                                  " N=" + std::to_string(n) + ": serial greedy suppression in the kernel [" + node.op +
                                  "]");
}

}  // namespace ops
}  // namespace agate
