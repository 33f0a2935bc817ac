#include "core/fusion/union_find.h"

#include <gtest/gtest.h>

namespace agate {
namespace fusion {
namespace {

TEST(UnionFindTest, StartsWithSingletons) {
  UnionFind sets(3);
  EXPECT_EQ(sets.Sets(), (std::vector<std::vector<int>>{{0}, {1}, {2}}));
}

TEST(UnionFindTest, AMergeKeepsTheRootOfTheIntoSide) {
  UnionFind sets(5);
  sets.Merge(0, 3);
  EXPECT_EQ(sets.Find(0), 3);
  sets.Merge(3, 1);  // {0, 3} joins {1}: 1 is the root now
  EXPECT_EQ(sets.Find(0), 1);
  EXPECT_EQ(sets.Find(3), 1);
  sets.Merge(1, 0);  // already one set: nothing changes
  EXPECT_EQ(sets.Find(1), 1);
}

TEST(UnionFindTest, SetsAreOrderedByRootWithNodesAscending) {
  UnionFind sets(6);
  sets.Merge(5, 0);
  sets.Merge(2, 4);
  sets.Merge(1, 4);
  // Roots 0 {0, 5}, 3 {3}, 4 {1, 2, 4}: ordered by root, not by smallest node.
  EXPECT_EQ(sets.Sets(), (std::vector<std::vector<int>>{{0, 5}, {3}, {1, 2, 4}}));
}

}  // namespace
}  // namespace fusion
}  // namespace agate
