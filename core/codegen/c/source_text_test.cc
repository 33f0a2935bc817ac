#include "core/codegen/c/source_text.h"

#include <gtest/gtest.h>

#include "core/support/error.h"

namespace agate {
namespace codegen {
namespace {

TEST(SanitizeIdentifierTest, MakesCIdentifiersOutsideTheGeneratorsNamespaces) {
  EXPECT_EQ(SanitizeIdentifier("conv.weight:0"), "conv_weight_0");
  EXPECT_EQ(SanitizeIdentifier("3x3"), "v3x3");
  EXPECT_EQ(SanitizeIdentifier(""), "v");
  EXPECT_EQ(SanitizeIdentifier("agate_shared"), "vagate_shared");
  EXPECT_EQ(SanitizeIdentifier("__global__"), "v__global__");
  EXPECT_EQ(SanitizeIdentifier("i_outer"), "i_outer");
}

TEST(IndentedTextTest, IndentsBetweenOpenAndClose) {
  IndentedText text;
  text.Open("if (x) {");
  text.Line("y = 1;");
  text.Close("} else {");
  text.Indent();
  text.Line("y = 2;");
  text.Close();
  EXPECT_EQ(text.str(), "if (x) {\n  y = 1;\n} else {\n  y = 2;\n}\n");
}

TEST(KernelNamesTest, GivesEachVariableOneUnusedName) {
  ir::Var a("i.outer"), b("i.outer"), c("int");
  KernelNames names;
  names.Reset("k0", {"int", "k0"});
  EXPECT_EQ(names.Define(a.get(), ""), "i_outer");
  EXPECT_EQ(names.Define(b.get(), ""), "i_outer_1");  // same IR name, another variable
  EXPECT_EQ(names.Define(c.get(), ""), "int_1");      // a reserved keyword is never taken
  EXPECT_EQ(names.NameOf(b.get()), "i_outer_1");
  EXPECT_TRUE(names.IsDefined(a.get()));

  names.Reserve("tmp");
  EXPECT_EQ(names.Fresh("tmp"), "tmp_1");
  names.Release("tmp");
  EXPECT_EQ(names.Fresh("tmp"), "tmp");
}

TEST(KernelNamesTest, ResetForgetsTheLastKernelsVariables) {
  ir::Var a("x");
  KernelNames names;
  names.Reset("k0", {});
  names.Define(a.get(), "");
  names.Reset("k1", {});
  EXPECT_FALSE(names.IsDefined(a.get()));
  try {
    names.NameOf(a.get());
    FAIL() << "an unbound variable was named";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInternal);
    EXPECT_NE(e.message().find("kernel k1"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("'x'"), std::string::npos) << e.message();
  }
  EXPECT_EQ(names.Define(a.get(), ""), "x");  // a new kernel may reuse every name
}

}  // namespace
}  // namespace codegen
}  // namespace agate
