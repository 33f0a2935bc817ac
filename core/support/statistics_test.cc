#include "core/support/statistics.h"

#include <gtest/gtest.h>

namespace agate {
namespace {

TEST(StatisticsTest, MedianOfOddAndEvenCountsAndNone) {
  EXPECT_DOUBLE_EQ(Median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_DOUBLE_EQ(Median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_DOUBLE_EQ(Median({7.5}), 7.5);
  EXPECT_DOUBLE_EQ(Median({}), 0.0);
}

}  // namespace
}  // namespace agate
