#include "core/support/parse_int.h"

#include <gtest/gtest.h>

#include "core/support/error.h"

namespace agate {
namespace {

TEST(ParseIntTest, AcceptsDecimalIntegersThatFit) {
  int64_t v = 0;
  EXPECT_TRUE(ParseInt64("0", &v));
  EXPECT_EQ(v, 0);
  EXPECT_TRUE(ParseInt64("-42", &v));
  EXPECT_EQ(v, -42);
  EXPECT_TRUE(ParseInt64("9223372036854775807", &v));
  EXPECT_EQ(v, INT64_MAX);
  EXPECT_TRUE(ParseInt64("-9223372036854775808", &v));
  EXPECT_EQ(v, INT64_MIN);
}

TEST(ParseIntTest, RefusesWhatStollWouldThrowOnOrMisread) {
  int64_t v = 7;
  for (const char* bad : {"", " 1", "1 ", "+1", "12abc", "abc", "0x10", "9223372036854775808",
                          "99999999999999999999999999", "-", "1e3"}) {
    EXPECT_FALSE(ParseInt64(bad, &v)) << bad;
    EXPECT_EQ(v, 7) << bad;
  }
}

TEST(ParseIntTest, OrThrowNamesTheField) {
  try {
    ParseInt64OrThrow("99999999999999999999", "external data offset");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.message().find("external data offset"), std::string::npos);
  }
}

}  // namespace
}  // namespace agate
