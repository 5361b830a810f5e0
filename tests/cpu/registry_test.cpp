// The rung registry and the multi-level planning arithmetic.
#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <string>

#include "fastreduce/ladder.hpp"

namespace lad = fastreduce::ladder;

TEST(Registry, EveryRungIsThereOnceInOrder) {
  const auto rungs = lad::rungs();
  // 1-7, rung 8 with F = 4, 8, 16, 32, 64, then 9, 10, 11, 12, 12c, 13, 13t, 14.
  ASSERT_EQ(rungs.size(), 20u);
  std::set<std::string> ids;
  int previous = 0;
  for (const auto& r : rungs) {
    EXPECT_TRUE(ids.insert(r.id).second) << r.id;
    EXPECT_GE(r.number, previous);
    previous = r.number;
    EXPECT_EQ(lad::find_rung(r.id), &r);
  }
  EXPECT_EQ(rungs.front().number, 1);
  EXPECT_EQ(rungs.back().number, 14);
  unsigned f = 4;
  for (const auto& r : rungs) {
    if (r.number == 8) {
      EXPECT_EQ(r.items_per_thread, f);
      f *= 2;
    }
  }
  EXPECT_EQ(f, 128u);
  EXPECT_EQ(lad::find_rung("15"), nullptr);
  EXPECT_EQ(lad::find_rung("engine"), nullptr);  // a reference row, not a rung
  EXPECT_EQ(lad::find_rung(""), nullptr);
  for (const char* id : {"12", "12c", "13", "13t", "14"}) {
    ASSERT_NE(lad::find_rung(id), nullptr) << id;
    EXPECT_TRUE(lad::find_rung(id)->one_kernel) << id;
    EXPECT_TRUE(lad::find_rung(id)->grid_stride) << id;
  }
  for (const char* id : {"9", "10", "11"}) EXPECT_FALSE(lad::find_rung(id)->one_kernel) << id;
}

TEST(Plan, OneKernelRungsRunOneLaunchWhoseLastBlockFinishes) {
  lad::Limits limits;
  limits.grid_stride_blocks = 1056;
  const lad::Rung& rung = *lad::find_rung("12");
  const std::size_t n = std::size_t(1) << 28;
  const auto levels = lad::plan_for(rung, n, 256, limits);
  // The grid, then the finish inside the same launch: one block over the partials.
  ASSERT_EQ(levels.size(), 2u);
  EXPECT_EQ(levels[0].length, n);
  EXPECT_EQ(levels[0].grid, 1056u);
  EXPECT_EQ(levels[1].length, 1056u);
  EXPECT_EQ(levels[1].grid, 1u);
  EXPECT_EQ(lad::workspace_bytes(levels, 4), 1056u * 4);
  EXPECT_EQ(lad::bytes_moved(levels, 4), (n + 1056 + 1056 + 1) * 4);
  // A small n needs one block: one level.
  const auto small = lad::plan_for(rung, 1000, 256, limits);
  ASSERT_EQ(small.size(), 1u);
  EXPECT_EQ(small[0].grid, 1u);
  // Rung 7 (grid-stride, several launches) keeps its levels.
  EXPECT_EQ(lad::plan_for(*lad::find_rung("7"), n, 256, limits).size(), 3u);
}

TEST(Registry, ValidBlockSizes) {
  for (unsigned b : {32u, 64u, 128u, 256u, 512u, 1024u}) EXPECT_TRUE(lad::valid_block(b)) << b;
  for (unsigned b : {0u, 1u, 16u, 31u, 48u, 96u, 2048u}) EXPECT_FALSE(lad::valid_block(b)) << b;
}

TEST(Plan, ZeroAndOneElementNeedOneLevel) {
  const auto none = lad::plan_levels(0, 512, std::numeric_limits<std::size_t>::max());
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].length, 0u);
  EXPECT_EQ(none[0].grid, 1u);
  const auto one = lad::plan_levels(1, 512, std::numeric_limits<std::size_t>::max());
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(lad::workspace_bytes(one, 4), 0u);
}

TEST(Plan, EachLevelReducesTheLengthOfTheOneBefore) {
  // The lecture's driver passed n to every level; here each level gets its own length.
  const std::size_t n = (std::size_t(1) << 24) + 3;
  const auto levels = lad::plan_levels(n, 512, std::numeric_limits<std::size_t>::max());
  ASSERT_EQ(levels.size(), 3u);
  EXPECT_EQ(levels[0].length, n);
  EXPECT_EQ(levels[0].grid, 32769u);  // ceil(n / 512)
  EXPECT_EQ(levels[1].length, 32769u);
  EXPECT_EQ(levels[1].grid, 65u);
  EXPECT_EQ(levels[2].length, 65u);
  EXPECT_EQ(levels[2].grid, 1u);
  EXPECT_EQ(lad::workspace_bytes(levels, 4), (32769u + 65u) * 4);
  EXPECT_EQ(lad::bytes_moved(levels, 4), (n + 32769 + 32769 + 65 + 65 + 1) * 4);
}

TEST(Plan, GridStrideRungCapsTheGrid) {
  const auto levels = lad::plan_levels(std::size_t(1) << 28, 512, 1056);
  ASSERT_EQ(levels.size(), 3u);
  EXPECT_EQ(levels[0].grid, 1056u);
  EXPECT_EQ(levels[1].length, 1056u);
  EXPECT_EQ(levels[1].grid, 3u);
  EXPECT_EQ(levels[2].grid, 1u);
}

TEST(Plan, SizesAboveTwoToThe32AreCountedIn64Bits) {
  const std::size_t n = (std::size_t(1) << 33) + 17;
  const auto levels = lad::plan_levels(n, 64, std::numeric_limits<std::size_t>::max());
  EXPECT_EQ(levels[0].grid, (n + 63) / 64);
  EXPECT_GT(levels[0].grid, std::size_t(1) << 27);
  EXPECT_EQ(levels.back().grid, 1u);
}

TEST(Plan, ErrorDepthCountsSerialWorkAndTreeLevels) {
  lad::Limits limits;
  limits.grid_stride_blocks = 1000;
  // Rung 3, block 256, n = 256: one level, 1 load + 8 tree steps.
  EXPECT_EQ(lad::error_depth(*lad::find_rung("3"), 256, 256, limits), 1u + 8u);
  // Rung 8 F=16: 16 serial adds per thread plus the tree, on each level.
  const auto depth = lad::error_depth(*lad::find_rung("8f16"), std::size_t(1) << 20, 256, limits);
  EXPECT_EQ(depth, 2u * (16u + 8u));
  // Rung 12, n = 2^28, 1000 blocks of 256: ceil(2^28 / 256000) + 1 serial adds and the tree in
  // the grid, then ceil(1000 / 256) + 1 and the tree in the last block, and the vectors' 2.
  EXPECT_EQ(lad::error_depth(*lad::find_rung("12"), std::size_t(1) << 28, 256, limits), (1049u + 1 + 8) + (4u + 1 + 8) + 2);
}
