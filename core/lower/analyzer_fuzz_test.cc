// Randomized check of the simplifier: for random integer expressions and
// random variable values inside the bound ranges, the simplified expression
// evaluates (with the reference evaluator) to the same value as the original.
#include <gtest/gtest.h>

#include <random>

#include "core/loop_eval/evaluator.h"
#include "core/ir/printer.h"
#include "core/lower/analyzer.h"

namespace agate {
namespace lower {
namespace {

using namespace ir;  // NOLINT

class ExprGen {
 public:
  ExprGen(std::mt19937* rng, const std::vector<Var>& vars) : rng_(rng), vars_(vars) {}
  Expr Gen(int depth) {
    if (depth == 0 || Pick(0, 5) == 0) {
      return Pick(0, 2) == 0 ? Expr(int64_t{Pick(-9, 9)}) : Expr(vars_[Pick(0, static_cast<int>(vars_.size()) - 1)]);
    }
    Expr a = Gen(depth - 1);
    switch (Pick(0, 10)) {
      case 0: return a + Gen(depth - 1);
      case 1: return a - Gen(depth - 1);
      case 2: return a * Expr(int64_t{Pick(-4, 4)});
      case 3: return floordiv(a, Expr(int64_t{Pick(1, 9)}));
      case 4: return floormod(a, Expr(int64_t{Pick(1, 9)}));
      case 5: return min(a, Gen(depth - 1));
      case 6: return max(a, Gen(depth - 1));
      case 7: return select(a < Gen(depth - 1), Gen(depth - 1), a);
      case 8: return a * Gen(depth - 1);
      case 9: return select(a <= Gen(depth - 1) && a != Expr(int64_t{3}), a, Gen(depth - 1));
      default: return a + Expr(int64_t{Pick(-20, 20)});
    }
  }
  int Pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(*rng_); }

 private:
  std::mt19937* rng_;
  std::vector<Var> vars_;
};

int64_t Evaluate(const Expr& e, const std::vector<Var>& vars, const std::vector<int64_t>& values) {
  Buffer out = CreateBuffer("out", DType::Int(64), {Expr(1)});
  Stmt body = Store::make(out, e, Expr(int64_t{0}));
  for (size_t i = vars.size(); i-- > 0;) body = LetStmt::make(vars[i], Expr(values[i]), body);
  LoweredFunc f{"f", {out}, body, 0};
  int64_t result = 0;
  EXPECT_EQ(loop_eval::Run(f, {{&result, sizeof(result)}}), 0);
  return result;
}

TEST(AnalyzerFuzzTest, SimplifiedExpressionsKeepTheirValue) {
  std::mt19937 rng(2024);
  std::vector<Var> vars = {Var("x"), Var("y"), Var("z")};
  const int64_t lo[3] = {0, -5, 3}, ext[3] = {8, 11, 4};
  for (int trial = 0; trial < 400; ++trial) {
    ExprGen gen(&rng, vars);
    Expr e = gen.Gen(4);
    Analyzer an;
    for (int v = 0; v < 3; ++v) an.Bind(vars[v], Expr(lo[v]), Expr(ext[v]));
    Expr s = an.Simplify(e);
    for (int point = 0; point < 6; ++point) {
      std::vector<int64_t> values;
      for (int v = 0; v < 3; ++v) values.push_back(lo[v] + gen.Pick(0, static_cast<int>(ext[v]) - 1));
      ASSERT_EQ(Evaluate(e, vars, values), Evaluate(s, vars, values))
          << "original:   " << e << "\nsimplified: " << s << "\nat x=" << values[0] << " y=" << values[1]
          << " z=" << values[2];
    }
    // Bounds must contain every value.
    ConstIntBound b = an.ConstBound(e);
    std::vector<int64_t> values;
    for (int v = 0; v < 3; ++v) values.push_back(lo[v] + gen.Pick(0, static_cast<int>(ext[v]) - 1));
    int64_t val = Evaluate(e, vars, values);
    ASSERT_TRUE(val >= b.min && val <= b.max) << e << " = " << val << " outside [" << b.min << ", " << b.max << "]";
  }
}

// Bound inference relies on EvalSet: the interval it returns for an
// expression with relaxed variables must contain every value.
TEST(AnalyzerFuzzTest, EvalSetContainsEveryValue) {
  std::mt19937 rng(77);
  std::vector<Var> vars = {Var("x"), Var("y"), Var("z")};
  for (int trial = 0; trial < 400; ++trial) {
    ExprGen gen(&rng, vars);
    Expr e = gen.Gen(3);
    Analyzer an;
    an.Bind(vars[2], Expr(int64_t{0}), Expr(int64_t{5}));  // z stays symbolic (fixed), bounded
    std::unordered_map<const VarNode*, IntervalSet> relax;
    relax[vars[0].get()] = {Expr(int64_t{0}), Expr(int64_t{7})};
    relax[vars[1].get()] = {vars[2] * 2, vars[2] * 2 + 3};  // a range that depends on the fixed z
    IntervalSet set = an.EvalSet(e, relax);
    for (int point = 0; point < 6; ++point) {
      int64_t z = gen.Pick(0, 4);
      std::vector<int64_t> values = {gen.Pick(0, 7), 2 * z + gen.Pick(0, 3), z};
      int64_t v = Evaluate(e, vars, values);
      if (set.min.defined()) {
        ASSERT_LE(Evaluate(set.min, vars, values), v) << e << " min " << set.min << " at z=" << z;
      }
      if (set.max.defined()) {
        ASSERT_GE(Evaluate(set.max, vars, values), v) << e << " max " << set.max << " at z=" << z;
      }
    }
  }
}

}  // namespace
}  // namespace lower
}  // namespace agate
