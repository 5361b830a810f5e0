// The CPU references the GPU results are judged against.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "reference.hpp"

namespace fr = fastreduce;

TEST(Reference, IntegerSumWrapsLikeTheGpu) {
  const std::vector<std::int32_t> v = {std::numeric_limits<std::int32_t>::max(), 1, 5};
  EXPECT_EQ(fr::reference::reduce(v.data(), v.size(), fr::Sum{}), std::numeric_limits<std::int32_t>::min() + 5);
  const std::vector<std::uint32_t> u = {0xffffffffu, 2u};
  EXPECT_EQ(fr::reference::reduce(u.data(), u.size(), fr::Sum{}), 1u);
}

TEST(Reference, IntegerProductWraps) {
  const std::vector<std::int32_t> v = {65536, 65536, 3};
  EXPECT_EQ(fr::reference::reduce(v.data(), v.size(), fr::Prod{}), 0);
  const std::vector<std::int64_t> w = {-3, 5, 7};
  EXPECT_EQ(fr::reference::reduce(w.data(), w.size(), fr::Prod{}), -105);
}

TEST(Reference, EmptyInputGivesTheIdentity) {
  EXPECT_EQ(fr::reference::reduce<std::int32_t>(nullptr, 0, fr::Min{}), std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(fr::reference::reduce<std::uint32_t>(nullptr, 0, fr::BitAnd{}), 0xffffffffu);
  EXPECT_EQ(fr::reference::reduce<float>(nullptr, 0, fr::Max{}), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(fr::reference::compensated_sum<float>(nullptr, 0), 0.0L);
  EXPECT_EQ(fr::reference::exact_sum<double>(nullptr, 0), 0.0);
}

TEST(Reference, MinMaxPropagateNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> v = {1.0f, nan, -3.0f};
  EXPECT_TRUE(std::isnan(fr::reference::reduce(v.data(), v.size(), fr::Max{})));
  EXPECT_TRUE(std::isnan(fr::reference::reduce(v.data(), v.size(), fr::Min{})));
  const std::vector<float> first = {nan, 2.0f};
  EXPECT_TRUE(std::isnan(fr::reference::reduce(first.data(), first.size(), fr::Min{})));
}

TEST(Reference, CompensatedSumRecoversWhatAFloatLoopLoses) {
  // 1 + 2^-24 * k: a float loop drops every small term, the compensated sum keeps them.
  std::vector<float> v(1 << 16, std::ldexp(1.0f, -24));
  v.insert(v.begin(), 1.0f);
  float plain = 0.0f;
  for (float x : v) plain += x;
  const long double exact = 1.0L + std::ldexp(1.0L, -24) * (1 << 16);
  EXPECT_EQ(plain, 1.0f);
  EXPECT_EQ(fr::reference::compensated_sum(v.data(), v.size()), exact);
}

TEST(Reference, ExactSumIsCorrectlyRounded) {
  const std::vector<double> cancel = {1e100, 1.0, -1e100, 1e-100};
  EXPECT_EQ(fr::reference::exact_sum(cancel.data(), cancel.size()), 1.0 + 1e-100);
  // Half-way case: 1 + 2^-53 + 2^-106 must round up (a plain double sum rounds to 1).
  const std::vector<double> tie = {1.0, std::ldexp(1.0, -53), std::ldexp(1.0, -106)};
  EXPECT_EQ(fr::reference::exact_sum(tie.data(), tie.size()), std::nextafter(1.0, 2.0));
  // Random integers: exact in double, any order.
  std::mt19937_64 rng(7);
  std::vector<double> ints(10000);
  double plain = 0;
  for (auto& x : ints) {
    x = static_cast<double>(static_cast<std::int64_t>(rng() % 2000001) - 1000000);
    plain += x;
  }
  EXPECT_EQ(fr::reference::exact_sum(ints.data(), ints.size()), plain);
}
