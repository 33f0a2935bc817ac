#include "core/te/tensor.h"

#include <gtest/gtest.h>

#include "core/ir/printer.h"
#include "core/support/error.h"

namespace agate {
namespace te {
namespace {

TEST(TensorTest, ComputeBuildsAnOperationOverTheShape) {
  Tensor a = placeholder({Expr(4), Expr(8)}, DType::Float(32), "A");
  Tensor b = compute({Expr(4), Expr(8)}, [&](Var i, Var j) { return a(i, j) * 2.0f; }, "B");
  EXPECT_EQ(b.name(), "B");
  EXPECT_EQ(b.ndim(), 2u);
  EXPECT_EQ(b.dtype(), DType::Float(32));
  auto inputs = b.op()->InputTensors();
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_TRUE(inputs[0].same_as(a));
  const auto* c = static_cast<const ComputeOpNode*>(b.op().get());
  EXPECT_EQ(ir::ToString(c->body[0]), "A(i, j)*2.0f");
}

TEST(TensorTest, ReductionsRecordTheirAxes) {
  Var n("n");
  Tensor a = placeholder({n, Expr(16)}, DType::Float(32), "A");
  IterVar k = reduce_axis({0, 16}, "k");
  Tensor s = compute({n}, [&](Var i) { return sum(a(i, k), {k}); }, "S");
  const auto* c = static_cast<const ComputeOpNode*>(s.op().get());
  ASSERT_EQ(c->reduce_axis.size(), 1u);
  EXPECT_TRUE(c->reduce_axis[0].same_as(k));
  EXPECT_TRUE(c->shape[0].same_as(n));  // symbolic extent stays a variable
  Tensor m = compute({n}, [&](Var i) { return max(a(i, k), {k}); }, "M");
  EXPECT_NE(ir::ToString(static_cast<const ComputeOpNode*>(m.op().get())->body[0]).find("max(lhs0, rhs0)"),
            std::string::npos);
}

TEST(TensorTest, MalformedExpressionsAreRejected) {
  Tensor a = placeholder({Expr(4)}, DType::Float(32), "A");
  IterVar k = reduce_axis({0, 4}, "k");
  EXPECT_THROW(a(Expr(1), Expr(2)), Error);  // wrong rank
  EXPECT_THROW(a(Var("x", DType::Float(32))), Error);  // float index
  try {
    compute({Expr(4)}, [&](Var i) { return sum(a(k), {k}) + 1.0f; }, "Bad");
    FAIL() << "nested reduction accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.message().find("Bad"), std::string::npos);
  }
  EXPECT_THROW(compute({Expr(4), Expr(4)}, [&](Var i) { return a(i); }, "Rank"), Error);
  EXPECT_THROW(compute({Expr(4)}, [&](Var) { return Expr(); }, "Undef"), Error);
}

TEST(TensorTest, ArgmaxIsATupleReduction) {
  Tensor a = placeholder({Expr(8)}, DType::Float(32), "A");
  IterVar k = reduce_axis({0, 8}, "k");
  auto outs = compute_multi({Expr(1)}, [&](const std::vector<Var>&) { return argmax(k.var(), a(k), {k}); }, "am");
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0].dtype(), DType::Int(64));
  EXPECT_EQ(outs[1].dtype(), DType::Float(32));
}

}  // namespace
}  // namespace te
}  // namespace agate
