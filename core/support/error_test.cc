#include "core/support/error.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <type_traits>

namespace agate {
namespace {

TEST(ErrorTest, ThrowCarriesCodeAndMessage) {
  try {
    AGATE_THROW(kUnsupported) << "operator " << "Foo" << " (opset " << 13 << ")";
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported);
    EXPECT_EQ(e.message(), "operator Foo (opset 13)");
    EXPECT_STREQ(e.what(), "unsupported: operator Foo (opset 13)");
  }
}

TEST(ErrorTest, CheckFailureIsInternalWithLocation) {
  int x = 1;
  try {
    AGATE_CHECK(x == 2) << "x=" << x;
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInternal);
    EXPECT_NE(e.message().find("x == 2"), std::string::npos);
    EXPECT_NE(e.message().find("error_test.cc"), std::string::npos);
  }
}

TEST(ErrorTest, RequirePassesWhenTrue) {
  EXPECT_NO_THROW({ AGATE_REQUIRE(1 + 1 == 2, kInvalidArgument) << "never"; });
  EXPECT_THROW({ AGATE_REQUIRE(false, kInvalidArgument) << "bad"; }, Error);
}

// Streams into an error message and throws while doing so (as an operator<< may, e.g. bad_alloc).
struct ThrowsWhenStreamed {};
std::ostream& operator<<(std::ostream& os, const ThrowsWhenStreamed&) { throw std::runtime_error("streaming failed"); }

// The message under construction is destroyed while the first exception unwinds; a
// destructor that throws there (the old ErrorThrower) calls std::terminate.
TEST(ErrorTest, ExceptionWhileStreamingTheMessagePropagates) {
  static_assert(std::is_nothrow_destructible<detail::ErrorMessage>::value, "no throwing destructor");
  EXPECT_THROW({ AGATE_THROW(kInvalidArgument) << "value " << ThrowsWhenStreamed{}; }, std::runtime_error);
}

}  // namespace
}  // namespace agate
