#include "core/graph/tensor.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/ir/float16.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

TEST(TensorTest, ZeroFilledAndAligned) {
  Tensor t(DType::Float(32), {2, 3});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(t.GetDouble(i), 0.0);
}

TEST(TensorTest, ConvertsEveryDType) {
  for (const char* name : {"float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8",
                           "uint16", "uint32", "uint64", "bool"}) {
    DType dtype = DType::Parse(name);
    Tensor t(dtype, {3});
    t.SetInt(0, 1);
    t.SetDouble(1, 2.0);
    EXPECT_EQ(t.GetInt(0), 1) << name;
    EXPECT_EQ(t.GetDouble(1), dtype.is_bool() ? 1.0 : 2.0) << name;
  }
  Tensor i8(DType::Int(8), {1});
  i8.SetDouble(0, 300.0);  // saturates instead of wrapping
  EXPECT_EQ(i8.GetInt(0), 127);
}

TEST(TensorTest, HalfRoundTripsAndRounds) {
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f}) {
    EXPECT_EQ(ir::HalfToFloat(ir::FloatToHalf(v)), v) << v;
  }
  EXPECT_TRUE(std::isinf(ir::HalfToFloat(ir::FloatToHalf(1e6f))));
  EXPECT_TRUE(std::isnan(ir::HalfToFloat(ir::FloatToHalf(NAN))));
  EXPECT_EQ(ir::HalfToFloat(ir::FloatToHalf(1.0f + 1.0f / 4096)), 1.0f);  // below half an ulp rounds down
  EXPECT_EQ(ir::BFloat16ToFloat(ir::FloatToBFloat16(1.5f)), 1.5f);
}

TEST(TensorTest, CopiesShareUntilWritten) {
  Tensor a = Tensor::FromDoubles(DType::Float(32), {2}, {1.0, 2.0});
  Tensor b = a;
  EXPECT_EQ(a.raw_data(), b.raw_data());
  b.SetDouble(0, 5.0);
  EXPECT_NE(a.raw_data(), b.raw_data());
  EXPECT_EQ(a.GetDouble(0), 1.0);
  EXPECT_EQ(b.GetDouble(0), 5.0);
}

TEST(TensorTest, ReshapeKeepsElementCount) {
  Tensor a = Tensor::FromInts(DType::Int(64), {2, 3}, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(a.Reshaped({3, 2}).shape(), (Shape{3, 2}));
  EXPECT_THROW(a.Reshaped({4}), Error);
  EXPECT_THROW(Tensor::FromBytes(DType::Float(32), {2}, "abc", 3), Error);
}

// A declared shape of 2^39 float32 (2 TiB) with 4 bytes of data is a corrupt tensor: the byte
// count is checked before anything is allocated (it used to allocate and zero-fill first,
// failing with "resource exhausted" at best).
TEST(TensorTest, FromBytesChecksTheByteCountBeforeAllocating) {
  try {
    Tensor::FromBytes(DType::Float(32), {int64_t{1} << 20, int64_t{1} << 19}, "abcd", 4);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kCorrupt) << e.what();
    EXPECT_NE(e.message().find("got 4"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace graph
}  // namespace agate
