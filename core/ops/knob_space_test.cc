#include "core/ops/knob_space.h"

#include <gtest/gtest.h>

#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

KnobSpace Space() {
  KnobSpace s;
  s.knobs = {{"conv_ow_block", {0, 2, 7, 14}}, {"parallel", {1, 0}}};
  return s;
}

TEST(KnobSpaceTest, PointsInMixedRadixWithTheDefaultFirst) {
  KnobSpace s = Space();
  EXPECT_EQ(s.size(), 8);
  EXPECT_EQ(s.At(0), s.Default());
  EXPECT_EQ(s.Default(), (KnobConfig{{"conv_ow_block", 0}, {"parallel", 1}}));
  EXPECT_EQ(s.At(5), (KnobConfig{{"conv_ow_block", 2}, {"parallel", 0}}));
  EXPECT_THROW(s.At(8), Error);
  EXPECT_EQ(s.ToString(), "conv_ow_block{0,2,7,14} parallel{1,0}");
}

TEST(KnobSpaceTest, ContainsOnlyLegalValuesOfItsKnobs) {
  KnobSpace s = Space();
  EXPECT_TRUE(s.Contains({{"conv_ow_block", 7}}));
  EXPECT_FALSE(s.Contains({{"conv_ow_block", 5}}));
  EXPECT_FALSE(s.Contains({{"dense_n_block", 16}}));
}

TEST(KnobSpaceTest, ApplySetsTheOptionsAndRefusesUnknownKnobs) {
  LowerGroupOptions o = ApplyKnobConfig({{"conv_ow_block", 7}, {"parallel", 0}, {"conv_winograd", 0}});
  EXPECT_EQ(o.conv_ow_block, 7);
  EXPECT_FALSE(o.allow_parallel);
  EXPECT_EQ(o.conv_winograd, 0);
  EXPECT_THROW(ApplyKnobConfig({{"no_such_knob", 1}}), Error);
  EXPECT_THROW(ApplyKnobConfig({{"parallel", 2}}), Error);
  EXPECT_EQ(KnobConfigToString({{"conv_ow_block", 7}, {"parallel", 0}}), "conv_ow_block=7 parallel=0");
  LowerGroupOptions q = ApplyKnobConfig({{"int8_oc_block", 6}, {"int8_pixel_vectors", 4}});
  EXPECT_EQ(q.int8_oc_block, 6);
  EXPECT_EQ(q.int8_pixel_vectors, 4);
  EXPECT_THROW(ApplyKnobConfig({{"int8_pixel_vectors", 5}}), Error);
  EXPECT_EQ(ApplyKnobConfig({{"int8_tile_order", 0}}).int8_tile_order, 0);
  EXPECT_THROW(ApplyKnobConfig({{"int8_tile_order", 2}}), Error);
}

TEST(KnobSpaceTest, ThreadSplitKnobsCanBeLeftOut) {
  EXPECT_TRUE(IsThreadSplitKnob("parallel"));
  // conv_parallel_rows also orders the loops, which one thread measures: not thread-split only.
  EXPECT_FALSE(IsThreadSplitKnob("conv_parallel_rows"));
  KnobSpace s = WithoutThreadSplitKnobs(Space());
  EXPECT_EQ(s.ToString(), "conv_ow_block{0,2,7,14}");
  EXPECT_EQ(s.size(), 4);
}

}  // namespace
}  // namespace ops
}  // namespace agate
