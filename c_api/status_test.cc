// agate_status_t values are agate::StatusCode values: one status vocabulary for
// the compiler's exceptions and the runtime's return codes.
#include <gtest/gtest.h>

#include "agate/status.h"
#include "core/support/error.h"

namespace agate {
namespace {

#define AGATE_EXPECT_SAME(c_name, cpp_name) \
  static_assert(c_name == static_cast<int>(StatusCode::cpp_name), #c_name " differs from StatusCode::" #cpp_name)

AGATE_EXPECT_SAME(AGATE_OK, kOk);
AGATE_EXPECT_SAME(AGATE_INVALID_ARGUMENT, kInvalidArgument);
AGATE_EXPECT_SAME(AGATE_NOT_FOUND, kNotFound);
AGATE_EXPECT_SAME(AGATE_UNSUPPORTED, kUnsupported);
AGATE_EXPECT_SAME(AGATE_OUT_OF_RANGE, kOutOfRange);
AGATE_EXPECT_SAME(AGATE_CORRUPT, kCorrupt);
AGATE_EXPECT_SAME(AGATE_VERSION_MISMATCH, kVersionMismatch);
AGATE_EXPECT_SAME(AGATE_ILLEGAL_SCHEDULE, kIllegalSchedule);
AGATE_EXPECT_SAME(AGATE_RESOURCE_EXHAUSTED, kResourceExhausted);
AGATE_EXPECT_SAME(AGATE_IO, kIo);
AGATE_EXPECT_SAME(AGATE_UNAVAILABLE, kUnavailable);
AGATE_EXPECT_SAME(AGATE_INTERNAL, kInternal);

TEST(StatusTest, StatusIsAFixedWidthInteger) { EXPECT_EQ(sizeof(agate_status_t), 4u); }

}  // namespace
}  // namespace agate
