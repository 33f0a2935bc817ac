#include "core/ir/dtype.h"

#include <gtest/gtest.h>

#include "core/support/error.h"

namespace agate {
namespace ir {
namespace {

TEST(DTypeTest, RoundTripsEveryTextForm) {
  for (const char* text : {"float32", "float16", "float64", "bfloat16", "int8", "int16", "int32", "int64", "uint8",
                           "bool", "handle", "float32x8", "int8x64", "boolx4"}) {
    EXPECT_EQ(DType::Parse(text).ToString(), text);
  }
}

TEST(DTypeTest, SizesAndLanes) {
  DType f = DType::Float(32, 8);
  EXPECT_EQ(f.element_bytes(), 4);
  EXPECT_EQ(f.bytes(), 32);
  EXPECT_TRUE(f.is_vector());
  EXPECT_EQ(f.element_of(), DType::Float(32));
  EXPECT_EQ(DType::Bool().element_bytes(), 1);
  EXPECT_EQ(DType::BFloat16().bytes(), 2);
  EXPECT_TRUE(DType::BFloat16().is_float());
  EXPECT_FALSE(DType::Bool().is_integer());
  EXPECT_TRUE(DType::Void().is_void());
}

TEST(DTypeTest, EqualityAndHash) {
  EXPECT_EQ(DType::Parse("int32"), DType::Int(32));
  EXPECT_NE(DType::Int(32), DType::UInt(32));
  EXPECT_NE(DType::Float(32), DType::Float(32, 4));
  EXPECT_NE(DType::Int(32).Hash(), DType::Int(32, 4).Hash());
}

TEST(DTypeTest, RejectsMalformedText) {
  for (const char* text : {"", "float", "float31", "int7", "bfloat32", "bool8", "float32x", "float32x0", "tensor",
                           "int32 ", "float99999999"}) {
    try {
      DType::Parse(text);
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(e.message().find(std::string("'") + text + "'"), std::string::npos) << e.message();
    }
  }
}

}  // namespace
}  // namespace ir
}  // namespace agate
