#include "core/ir/float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace agate {
namespace ir {
namespace {

uint32_t Bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}

TEST(Float16Test, EveryHalfSurvivesTheRoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_EQ(FloatToHalf(f) & 0x7fffu, 0x7e00u) << std::hex << h;  // the quiet NaN, sign kept
      EXPECT_EQ(FloatToHalf(f) & 0x8000u, h & 0x8000u) << std::hex << h;
    } else {
      EXPECT_EQ(FloatToHalf(f), h) << std::hex << h;
    }
  }
}

TEST(Float16Test, HalfRoundsToNearestEven) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(1.0f + 1.0f / 2048), 0x3c00);            // a tie: down to the even mantissa
  EXPECT_EQ(FloatToHalf(1.0f + 3.0f / 2048), 0x3c02);            // a tie: up to the even mantissa
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);                      // the largest half
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);                      // rounds to infinity
  EXPECT_EQ(FloatToHalf(-INFINITY), 0xfc00);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);         // the smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);         // half of it: a tie, to even (zero)
  EXPECT_EQ(FloatToHalf(std::ldexp(3.0f, -25)), 0x0002);         // 1.5 units: a tie, to even
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(Bits(HalfToFloat(0x8000)), 0x80000000u);             // negative zero
}

TEST(Float16Test, BFloat16RoundsToNearestEvenAndKeepsNaN) {
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBFloat16(BFloat16ToFloat(0x3f80) + std::ldexp(1.0f, -8)), 0x3f80);  // tie, to even
  EXPECT_EQ(FloatToBFloat16(BFloat16ToFloat(0x3f81) + std::ldexp(1.0f, -8)), 0x3f82);  // tie, to even
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(NAN))));
  for (uint32_t b = 0; b < 65536; ++b) {
    float f = BFloat16ToFloat(static_cast<uint16_t>(b));
    if (!std::isnan(f)) EXPECT_EQ(FloatToBFloat16(f), b) << std::hex << b;
  }
}

}  // namespace
}  // namespace ir
}  // namespace agate
