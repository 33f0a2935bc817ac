#include "core/ops/tfidf_vectorizer.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/graph/tfidf_vectorizer.h"
#include "core/ir/function.h"
#include "core/ops/composed_kernel.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using composed::I;
using composed::Load;
using composed::Loop;
using composed::Store;
using graph::TfIdfVectorizerSpec;
using ir::Buffer;
using ir::Expr;
using ir::Stmt;
using ir::Var;

const ir::DType kF32 = ir::DType::Float(32);
const ir::DType kI64 = ir::DType::Int(64);

// The pool's entries of one length, as the kernel's constant tables.
struct LengthTables {
  int64_t n = 0;
  int64_t entries = 0;
  Buffer tokens;   // [entries * n] int64
  Buffer columns;  // [entries] int64
};

std::vector<LengthTables> AddPoolTables(const TfIdfVectorizerSpec& spec, const std::string& prefix,
                                        ComposedKernel* built) {
  // Per length, the entries sorted by their tokens (the kernel's binary search needs that order).
  std::map<int64_t, std::vector<const TfIdfVectorizerSpec::Entry*>> sorted;
  for (const TfIdfVectorizerSpec::Entry& e : spec.entries) sorted[static_cast<int64_t>(e.tokens.size())].push_back(&e);
  std::map<int64_t, std::pair<std::vector<int64_t>, std::vector<int64_t>>> by_length;
  for (auto& [n, entries] : sorted) {
    std::sort(entries.begin(), entries.end(), [](const auto* a, const auto* b) { return a->tokens < b->tokens; });
    auto& [tokens, columns] = by_length[n];
    for (const TfIdfVectorizerSpec::Entry* e : entries) {
      tokens.insert(tokens.end(), e->tokens.begin(), e->tokens.end());
      columns.push_back(e->column);
    }
  }
  std::vector<LengthTables> out;
  for (auto& [n, tables] : by_length) {
    LengthTables t;
    t.n = n;
    t.entries = static_cast<int64_t>(tables.second.size());
    const std::string name = prefix + "_" + std::to_string(n) + "grams";
    t.tokens = AddComposedConstant(built, name,
                                   graph::Tensor::FromInts(kI64, {t.entries * n}, tables.first));
    t.columns = AddComposedConstant(built, name + "_columns",
                                    graph::Tensor::FromInts(kI64, {t.entries}, tables.second));
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

bool IsTfIdfVectorizerOp(const std::string& op) { return op == "TfIdfVectorizer"; }

GroupKernel LowerTfIdfVectorizerGroup(const graph::Graph& graph, const graph::FusedGroup& group,
                                      const target::Target& target, const std::string& kernel_name) {
  ComposedKernel built = BeginComposedKernel(graph, group, target, kernel_name, "a serial n-gram scan: CPU targets only");
  const graph::Node& node = graph.nodes.at(group.nodes[0]);
  const TfIdfVectorizerSpec spec = graph::ParseTfIdfVectorizer(node.attrs, node.Describe());
  const graph::TensorType& x_type = graph.TypeOf(node.inputs[0]);
  AGATE_REQUIRE(built.params.outputs.count(0), kInternal) << node.Describe() << ": its output is not the kernel's";
  const Buffer x = built.params.inputs.at(node.inputs[0]);
  const Buffer out = built.params.outputs.at(0);
  const int64_t rows = x_type.rank() == 2 ? x_type.shape[0] : 1;
  const int64_t length = x_type.shape.back();
  const int64_t columns = spec.columns;
  const std::string prefix = IdentifierOf(node.name);
  std::vector<LengthTables> tables = AddPoolTables(spec, prefix, &built);

  Var b("tfidf_row"), c("tfidf_column");
  auto token = [&](const Expr& i) { return ir::cast(kI64, Load(x, Expr(b) * I(length) + i)); };
  auto out_index = [&](const Expr& column) { return Expr(b) * I(columns) + column; };
  std::vector<Stmt> per_row;
  per_row.push_back(Loop(c, I(columns), Store(out, ir::make_zero(kF32), out_index(c))));
  // The bounds [lo, hi) of each binary search (on the stack).
  Buffer bounds = ir::CreateBuffer("tfidf_bounds", kI64, {I(2)}, ir::MemoryScope::kLocal);
  Expr lo = Load(bounds, I(0)), hi = Load(bounds, I(1));
  for (const LengthTables& t : tables) {
    const std::string n = std::to_string(t.n);
    Var d("tfidf_distance_" + n), i("tfidf_start_" + n), step("tfidf_halving_" + n), mid("tfidf_middle_" + n);
    Var at("tfidf_found_" + n);
    const int64_t distances = graph::UsefulDistances(spec, t.n, length);
    if (distances == 0) continue;
    // The row's n-gram at (i, d) against entry `e`: -1, 0 or 1 as it sorts before, equal to or after it.
    auto compare = [&](const Expr& e) {
      Expr order = I(0);
      for (int64_t k = t.n - 1; k >= 0; --k) {
        Expr g = token(Expr(i) + I(k) * Expr(d)), p = Load(t.tokens, e * I(t.n) + I(k));
        order = ir::select(g < p, I(-1), ir::select(g > p, I(1), order));
      }
      return order;
    };
    // Lower bound of the n-gram among the sorted entries: the interval halves each step, so
    // bit_width(E) steps leave it empty.
    int64_t steps = 0;
    for (int64_t e = t.entries; e > 0; e >>= 1) ++steps;
    Stmt halve = composed::If(lo < hi, ir::LetStmt::make(mid, ir::floordiv(lo + hi, I(2)),
        ir::IfThenElse::make(compare(mid) > I(0), Store(bounds, Expr(mid) + I(1), I(0)), Store(bounds, Expr(mid), I(1)))));
    Expr column = Load(t.columns, at);
    Stmt count = Store(out, Load(out, out_index(column)) + ir::make_const(kF32, 1.0), out_index(column));
    Stmt look_up = ir::Seq::make({
        Store(bounds, I(0), I(0)),
        Store(bounds, I(t.entries), I(1)),
        Loop(step, I(steps), halve),
        ir::LetStmt::make(at, lo, composed::If(Expr(at) < I(t.entries), composed::If(compare(at) == I(0), count))),
    });
    // Starts i with i + (n - 1) d < C: C - (n - 1) d of them (none when that is not positive).
    Expr starts = ir::max(I(length) - I(t.n - 1) * Expr(d), I(0));
    per_row.push_back(ir::For::make(d, I(1), I(distances), ir::ForKind::kSerial, Loop(i, starts, look_up)));
  }
  if (spec.mode != TfIdfVectorizerSpec::Mode::kTF) {
    std::vector<double> weights(spec.column_weight.begin(), spec.column_weight.end());
    Buffer w = AddComposedConstant(&built, prefix + "_weights", graph::Tensor::FromDoubles(kF32, {columns}, weights));
    Var c2("tfidf_weigh_column");
    Expr count = Load(out, out_index(c2));
    Expr value = spec.mode == TfIdfVectorizerSpec::Mode::kIDF
                     ? ir::select(count > ir::make_zero(kF32), Load(w, c2), ir::make_zero(kF32))
                     : count * Load(w, c2);
    per_row.push_back(Loop(c2, I(columns), Store(out, value, out_index(c2))));
  }
  Stmt stmt = Loop(b, I(rows), ir::Seq::make(per_row));
  stmt = ir::Allocate::make(bounds, {I(2)}, 64, ir::MemoryScope::kLocal, stmt);
  int64_t pool = 0;
  for (const LengthTables& t : tables) pool += t.entries;
  return FinishComposedKernel(std::move(built), stmt, 0,
                              "TfIdfVectorizer of " + std::to_string(rows) + " row(s) of " + std::to_string(length) +
                                  " tokens: binary search among " + std::to_string(pool) + " sorted n-grams into " +
                                  std::to_string(columns) + " columns [" + node.op + "]");
}

}  // namespace ops
}  // namespace agate
