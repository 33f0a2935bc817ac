#include "core/ir/expr.h"

#include <gtest/gtest.h>

#include "core/ir/buffer.h"
#include "core/ir/functor.h"
#include "core/ir/printer.h"
#include "core/ir/stmt.h"
#include "core/ir/substitute.h"
#include "core/support/error.h"

namespace agate {
namespace ir {
namespace {

TEST(ExprTest, LiteralsAdaptToTheOtherOperand) {
  Var i("i");  // int64
  Expr e = i * 64 + 3;
  EXPECT_EQ(e.dtype(), DType::Int(64));
  Var x("x", DType::Float(32));
  Expr f = x * 2.0;
  EXPECT_EQ(f.dtype(), DType::Float(32));
  Expr g = x + 1;
  EXPECT_EQ(g.dtype(), DType::Float(32));
  // A float literal with an integer operand promotes the integer.
  Expr h = i * 0.5;
  EXPECT_TRUE(h.dtype().is_float());
}

TEST(ExprTest, MixedNonLiteralOperandsPromote) {
  Var a("a", DType::Int(32));
  Var b("b", DType::Int(64));
  EXPECT_EQ((a + b).dtype(), DType::Int(64));
  Var f("f", DType::Float(16));
  Var g("g", DType::Float(32));
  EXPECT_EQ((f * g).dtype(), DType::Float(32));
  EXPECT_EQ((a < b).dtype(), DType::Bool());
}

TEST(ExprTest, IntegerConstantsFold) {
  Expr e = Expr(2) + Expr(3) * Expr(4);
  int64_t v;
  ASSERT_TRUE(is_const_int(e, &v));
  EXPECT_EQ(v, 14);
  EXPECT_TRUE(is_const_int(floordiv(Expr(-7), Expr(2)), &v));
  EXPECT_EQ(v, -4);
  EXPECT_TRUE(is_const_int(floormod(Expr(-7), Expr(2)), &v));
  EXPECT_EQ(v, 1);
}

TEST(ExprTest, VectorScalarBroadcasts) {
  Expr r = Ramp::make(Expr(int64_t{0}), Expr(int64_t{1}), 8);
  Expr e = r * 4;
  EXPECT_EQ(e.dtype(), DType::Int(64, 8));
  EXPECT_NE(e.as<Mul>()->b.as<Broadcast>(), nullptr);
}

TEST(ExprTest, MalformedExpressionsThrowInvalidArgument) {
  Var x("x", DType::Float(32));
  Var p("p", DType::Handle());
  try {
    Expr e = x + p;
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
  }
  EXPECT_THROW(Add::make(x, Var("i")), Error);
  EXPECT_THROW(Select::make(x, x, x), Error);
  EXPECT_THROW(Call::make(DType::Float(32), CallOp::kPow, {x}), Error);
  EXPECT_THROW(floordiv(x, x), Error);
  EXPECT_THROW(Expr() + 1, Error);
  Buffer b = CreateBuffer("B", DType::Float(32), {Expr(4)});
  EXPECT_THROW(Store::make(b, Var("i"), Expr(0)), Error);
}

TEST(ExprTest, IntrinsicsTakeFloatType) {
  Var x("x", DType::Float(32));
  EXPECT_EQ(exp(x).dtype(), DType::Float(32));
  EXPECT_EQ(pow(x, 2).dtype(), DType::Float(32));
  EXPECT_EQ(exp(x).as<Call>()->op, CallOp::kExp);
  EXPECT_EQ(reinterpret(DType::Int(32), x).dtype(), DType::Int(32));
  EXPECT_THROW(reinterpret(DType::Int(64), x), Error);
}

TEST(ExprTest, SubstituteReplacesFreeVariables) {
  Var i("i"), j("j");
  Expr e = i * 4 + j;
  VarMap m{{i.get(), Expr(int64_t{2})}};
  Expr s = Substitute(e, m);
  EXPECT_EQ(ToString(s), "2*4 + j");
  EXPECT_TRUE(UsesVar(s, [&](const VarNode* v) { return v == j.get(); }));
  EXPECT_FALSE(UsesVar(s, [&](const VarNode* v) { return v == i.get(); }));
}

TEST(ExprTest, MinMaxValues) {
  EXPECT_EQ(ToString(max_value(DType::Int(8))), "int8(127)");
  EXPECT_EQ(ToString(min_value(DType::Int(32))), "-2147483648");
  EXPECT_LT(min_value(DType::Float(32)).as<FloatImm>()->value, -1e38);
}

}  // namespace
}  // namespace ir
}  // namespace agate

namespace agate {
namespace ir {
namespace {

// A mutator that changes nothing returns the very same nodes; one that changes
// a leaf rebuilds only the path to it.
class RenameI : public IRMutator {
 public:
  RenameI(const Var& from, const Var& to) : from_(from), to_(to) {}
  Expr VisitExpr_(const VarNode* op, const Expr& self) override { return op == from_.get() ? Expr(to_) : self; }

 private:
  Var from_, to_;
};

TEST(FunctorTest, MutatorSharesUnchangedSubtrees) {
  Var i("i"), j("j"), k("k");
  Expr left = j * 3 + 1;
  Expr e = left * (i + 2);
  IRMutator identity;
  EXPECT_TRUE(identity.VisitExpr(e).same_as(e));
  RenameI r(i, k);
  Expr out = r.VisitExpr(e);
  EXPECT_FALSE(out.same_as(e));
  EXPECT_TRUE(out.as<Mul>()->a.same_as(left));
  EXPECT_EQ(ToString(out), "(j*3 + 1)*(k + 2)");
}

TEST(FunctorTest, PostOrderVisitSeesChildrenFirst) {
  Var i("i");
  std::vector<std::string> order;
  PostOrderVisit(i + 1, [&](const Expr* e, const Stmt*) {
    if (e) order.push_back(ExprKindName(e->kind()));
  });
  EXPECT_EQ(order, (std::vector<std::string>{"Var", "IntImm", "Add"}));
}

}  // namespace
}  // namespace ir
}  // namespace agate
