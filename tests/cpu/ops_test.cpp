// The operators' identities and NaN behaviour, on the host.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "fastreduce/ops.cuh"

namespace fr = fastreduce;

TEST(Ops, IdentitiesAreNeutral) {
  for (std::int32_t x : {-7, 0, 12345, std::numeric_limits<std::int32_t>::min()}) {
    EXPECT_EQ(fr::Sum{}(x, fr::Sum::identity<std::int32_t>()), x);
    EXPECT_EQ(fr::Prod{}(x, fr::Prod::identity<std::int32_t>()), x);
    EXPECT_EQ(fr::Min{}(x, fr::Min::identity<std::int32_t>()), x);
    EXPECT_EQ(fr::Max{}(x, fr::Max::identity<std::int32_t>()), x);
    EXPECT_EQ(fr::BitAnd{}(x, fr::BitAnd::identity<std::int32_t>()), x);
    EXPECT_EQ(fr::BitOr{}(x, fr::BitOr::identity<std::int32_t>()), x);
    EXPECT_EQ(fr::BitXor{}(x, fr::BitXor::identity<std::int32_t>()), x);
  }
  EXPECT_EQ(fr::Min{}(-1e30f, fr::Min::identity<float>()), -1e30f);
  EXPECT_EQ(fr::Max{}(-1e30f, fr::Max::identity<float>()), -1e30f);
}

TEST(Ops, MinAndMaxPropagateNanFromEitherSide) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(fr::Max{}(nan, 1.0)));
  EXPECT_TRUE(std::isnan(fr::Max{}(1.0, nan)));
  EXPECT_TRUE(std::isnan(fr::Min{}(nan, -1.0)));
  EXPECT_TRUE(std::isnan(fr::Min{}(-1.0, nan)));
  EXPECT_EQ(fr::Max{}(2.0, 3.0), 3.0);
  EXPECT_EQ(fr::Min{}(2.0, 3.0), 2.0);
}

TEST(Ops, SignedOverflowWrapsWithoutUndefinedBehaviour) {
  EXPECT_EQ(fr::Sum{}(std::numeric_limits<std::int64_t>::max(), std::int64_t{1}), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(fr::Prod{}(std::int32_t{1} << 16, std::int32_t{1} << 16), 0);
  EXPECT_EQ(fr::Prod{}(std::uint32_t{0xffffffffu}, std::uint32_t{0xffffffffu}), 1u);
}

TEST(Ops, BitwiseOpsApplyToIntegersOnly) {
  static_assert(fr::op_applies_to<std::uint32_t, fr::BitAnd>);
  static_assert(!fr::op_applies_to<float, fr::BitOr>);
  static_assert(!fr::op_applies_to<double, fr::BitXor>);
  static_assert(fr::op_applies_to<double, fr::Sum>);
  SUCCEED();
}
