// SharedExprs on hand-built IR: which nodes a printer names once.
#include "core/codegen/c/shared_exprs.h"

#include <gtest/gtest.h>

#include "core/ir/buffer.h"

namespace agate {
namespace codegen {
namespace {

using ir::DType;
using ir::Expr;

struct Fixture {
  ir::Var i{"i", DType::Int(32)};
  ir::Buffer a = ir::CreateBuffer("A", DType::Float(32), {Expr(64)});
  Expr Load(Expr index) { return ir::Load::make(a, index); }
};

TEST(SharedExprsTest, NodesUsedTwiceAreSharedLeavesAreNot) {
  Fixture f;
  Expr x = f.Load(f.i + 1);
  Expr y = x * x;  // x twice
  Expr root = y + f.i;
  SharedExprs shared;
  shared.Analyze({{root}});
  EXPECT_TRUE(shared.IsShared(x.get()));
  EXPECT_FALSE(shared.IsShared(y.get()));
  EXPECT_FALSE(shared.IsShared(root.get()));
  EXPECT_FALSE(shared.IsShared(f.i.get()));  // a variable is already a name
}

TEST(SharedExprsTest, StructurallyEqualNodesAreOneClass) {
  Fixture f;
  Expr x1 = f.Load(f.i * 4 + 1), x2 = f.Load(f.i * 4 + 1);  // rebuilt: distinct nodes
  ASSERT_NE(x1.get(), x2.get());
  SharedExprs shared;
  shared.Analyze({{x1 + x2}});
  EXPECT_EQ(shared.ClassOf(x1.get()), shared.ClassOf(x2.get()));
  EXPECT_TRUE(shared.IsShared(x1.get()));
  Expr other = f.Load(f.i * 4 + 2);
  shared.Analyze({{x1 + other}});
  EXPECT_NE(shared.ClassOf(x1.get()), shared.ClassOf(other.get()));
  EXPECT_FALSE(shared.IsShared(x1.get()));
}

TEST(SharedExprsTest, ReadsOnlyUnderAConditionStayThere) {
  Fixture f;
  Expr in_bounds = f.i < 63;
  Expr x = f.Load(f.i + 1);  // out of bounds at i = 63
  Expr guarded = ir::select(in_bounds, x * x, Expr(0.0f));
  SharedExprs shared;
  shared.Analyze({{guarded}});
  EXPECT_FALSE(shared.IsShared(x.get()));
  // The same read once unconditionally: it happens anyway, so it may be named.
  shared.Analyze({{guarded + x}});
  EXPECT_TRUE(shared.IsShared(x.get()));
  // A predicated store's value is conditional as a whole.
  shared.Analyze({{x * x, /*conditional=*/true}});
  EXPECT_FALSE(shared.IsShared(x.get()));
  // Pure arithmetic may always move.
  Expr index = f.i * 7 + 3;
  shared.Analyze({{ir::select(in_bounds, index * index, Expr(0))}});
  EXPECT_TRUE(shared.IsShared(index.get()));
}

TEST(SharedExprsTest, WarpShufflesAreAlwaysNamed) {
  // Once, and only under a short-circuit condition: still evaluated before the statement, by every lane.
  Fixture f;
  Expr value = f.Load(f.i);
  Expr shuffle = ir::Call::make(DType::Float(32), ir::CallOp::kShuffleXor, {value, Expr(16), Expr(32)});
  Expr cond = (f.i < 3) && (shuffle > value);
  SharedExprs shared;
  shared.Analyze({{ir::select(cond, Expr(1.0f), Expr(0.0f))}});
  EXPECT_TRUE(shared.IsShared(shuffle.get()));
}

TEST(SharedExprsTest, AReanalysisForgetsThePreviousStatement) {
  Fixture f;
  Expr x = f.Load(f.i);
  SharedExprs shared;
  shared.Analyze({{x * x}});
  EXPECT_TRUE(shared.IsShared(x.get()));
  shared.Analyze({{f.i + 1}});
  EXPECT_FALSE(shared.IsShared(x.get()));
  EXPECT_EQ(shared.ClassOf(x.get()), -1);
}

}  // namespace
}  // namespace codegen
}  // namespace agate
