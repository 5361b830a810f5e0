// Mode::Exact's arithmetic, run on the CPU exactly as the GPU runs it (detail/exact_arith.hpp is
// shared by host and device), against the big-integer reference (bench/reference.hpp):
//   - add_if_exact keeps exactly the additions that round nothing;
//   - round_scaled rounds once, to nearest even, in every format, subnormals, ties, sticky bits
//     and overflow included;
//   - the exact lanes (float-valued and double) with their spills, and the double lanes' butterfly
//     of exact pairs, lose nothing on any data;
//   - divide_window gives the exact quotient's top 64 bits and sticky bit, and the mean of exact
//     limbs rounds as the reference's quotient; is_midpoint finds exactly the halfway points;
//   - the reference itself agrees with Shewchuk's partials (math.fsum) where both apply.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fastreduce/detail/exact_arith.hpp"
#include "exact_data.hpp"
#include "reference.hpp"

namespace fr = fastreduce;
namespace prim = fastreduce::primitives;
using fr::reference::ExactReference;
using fr::testing::exact_data;
using fr::testing::kExactDataSetCount;
using fr::testing::kExactDataSets;

namespace {

std::uint64_t seed_for(const char* name) {
  // Fresh data every run, replayable: FASTREDUCE_TEST_SEED fixes it.
  static const std::uint64_t base = [] {
    if (const char* s = std::getenv("FASTREDUCE_TEST_SEED")) return std::strtoull(s, nullptr, 10);
    return std::random_device{}() * 0x9E3779B97F4A7C15ull ^ std::random_device{}();
  }();
  std::uint64_t h = base;
  for (const char* p = name; *p != '\0'; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 0x100000001B3ull;
  return h;
}

#define SEED_TRACE(name)                          \
  const std::uint64_t seed = seed_for(name);      \
  SCOPED_TRACE("FASTREDUCE_TEST_SEED base; seed " + std::to_string(seed))

ExactReference exact_of(std::initializer_list<double> values) {
  ExactReference r;
  for (double v : values) r.add(v);
  return r;
}

// The exact check's order in a warp per row, on the host: lane l folds values l, l + 32, ... into
// its state with add, then the 32 states meet in the xor butterfly with join; lane 0's result.
template <class S, class Add, class Join>
S warp_fold(const std::vector<double>& values, S zero, Add add, Join join) {
  S lanes[32];
  for (std::size_t lane = 0; lane < 32; ++lane) {
    lanes[lane] = zero;
    for (std::size_t k = lane; k < values.size(); k += 32) lanes[lane] = add(lanes[lane], values[k]);
  }
  for (std::size_t offset = 16; offset > 0; offset /= 2) {
    S joined[32];
    for (std::size_t lane = 0; lane < 32; ++lane) joined[lane] = join(lanes[lane], lanes[lane ^ offset]);
    std::copy(joined, joined + 32, lanes);
  }
  return lanes[0];
}

// Doubles of every kind: ordinary, spread over the whole exponent range, subnormal, near the
// limit, exact neighbours and cancelling partners of `other`, zeros, infinities, NaN.
double any_double(std::mt19937_64& rng, double other) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double sign = unit(rng) < 0.5 ? -1.0 : 1.0;
  switch (rng() % 10) {
    case 0: return sign * unit(rng);
    case 1: return sign * std::ldexp(1.0 + unit(rng), static_cast<int>(rng() % 2046) - 1022);
    case 2: return sign * std::ldexp(static_cast<double>(rng() % (1ull << 52)), -1074);  // subnormal
    case 3: return sign * std::ldexp(1.0 + unit(rng), 1023);
    case 4: return -other * (1.0 + std::ldexp(static_cast<double>(rng() % 64), -52));
    case 5: return std::ldexp(other, static_cast<int>(rng() % 120) - 60);
    case 6: return std::nextafter(other, sign * std::numeric_limits<double>::infinity());
    case 7: return rng() % 4 == 0 ? std::numeric_limits<double>::quiet_NaN() : sign * std::numeric_limits<double>::infinity();
    case 8: return sign * 0.0;
    default: return sign * std::ldexp(static_cast<double>(rng() >> 40), static_cast<int>(rng() % 80) - 40);
  }
}

}  // namespace

TEST(ExactArith, AddIfExactKeepsExactlyTheAdditionsThatRoundNothing) {
  SEED_TRACE("AddIfExact");
  std::mt19937_64 rng(seed);
  int exact_count = 0, rounded_count = 0;
  for (int i = 0; i < 200000; ++i) {
    double a = any_double(rng, 1.0);
    if (!std::isfinite(a)) a = 1.5;  // the accumulator is always finite
    const double b = any_double(rng, a);
    const double t = a + b;
    const bool expected = std::isfinite(b) && std::isfinite(t) && exact_of({a, b}) == exact_of({t});
    double acc = a;
    const bool got = prim::add_if_exact(acc, b);
    ASSERT_EQ(got, expected) << std::hexfloat << a << " + " << b;
    if (got) EXPECT_EQ(std::bit_cast<std::uint64_t>(acc), std::bit_cast<std::uint64_t>(t));
    else EXPECT_EQ(std::bit_cast<std::uint64_t>(acc), std::bit_cast<std::uint64_t>(a)) << "acc changed";
    (got ? exact_count : rounded_count) += 1;
  }
  // The data exercise both outcomes in earnest.
  EXPECT_GT(exact_count, 20000);
  EXPECT_GT(rounded_count, 20000);
}

namespace {

template <prim::BinaryFormat F>
struct Format;
template <>
struct Format<prim::kFloatFormat> {
  using Type = float;
  static std::uint64_t bits(double v) { return std::bit_cast<std::uint32_t>(static_cast<float>(v)); }
};
template <>
struct Format<prim::kDoubleFormat> {
  using Type = double;
  static std::uint64_t bits(double v) { return std::bit_cast<std::uint64_t>(v); }
};
template <>
struct Format<prim::kHalfFormat> {
  using Type = __half;
  static std::uint64_t bits(double v) {
    const __half_raw raw = __double2half(v);  // v is a half value (or infinity): no rounding here
    return raw.x;
  }
};
template <>
struct Format<prim::kBfloat16Format> {
  using Type = __nv_bfloat16;
  static std::uint64_t bits(double v) {
    const __nv_bfloat16_raw raw = __double2bfloat16(v);
    return raw.x;
  }
};

// m * 2^scale exactly as reference additions (m in 32-bit pieces; each piece a double as long as
// scale >= -1074 and the value is below 2^1024).
ExactReference scaled(unsigned __int128 m, int scale, bool negative) {
  ExactReference r;
  for (int i = 0; i < 4; ++i) {
    const double piece = std::ldexp(static_cast<double>(static_cast<std::uint32_t>(m >> (32 * i))), scale + 32 * i);
    r.add(negative ? -piece : piece);
  }
  return r;
}

template <prim::BinaryFormat F>
void check_round_scaled(std::uint64_t seed) {
  using Info = Format<F>;
  std::mt19937_64 rng(seed);
  constexpr int p = F.precision;
  // Scales that put the value anywhere from far below the smallest subnormal to past the largest
  // finite value (double: up to 2^1023, the reference's pieces must stay doubles).
  const int lowest = std::max(-1074, F.min_exponent - p - 66);
  const int highest = F.width == 64 ? 959 : F.bias + 2;
  int ties = 0, subnormal = 0, infinite = 0;
  for (int i = 0; i < 100000; ++i) {
    const bool negative = rng() % 2 != 0;
    const int scale = lowest + static_cast<int>(rng() % static_cast<std::uint64_t>(highest - lowest + 1));
    std::uint64_t m = 0;
    switch (rng() % 4) {
      case 0: m = rng(); break;                                       // 64 random bits
      case 1: m = rng() >> (rng() % 64); break;                       // fewer bits
      case 2: m = ((rng() >> (64 - p - 1)) | 1) << (rng() % (64 - p)); break;  // p + 1 bits: a tie when normal
      default: m = (rng() | (1ull << 63)) & ~((1ull << (rng() % 40)) - 1); break;  // trailing zeros
    }
    if (m == 0) m = 1;
    const double expected = scaled(m, scale, negative).rounded(p, F.min_exponent, F.bias);
    const std::uint64_t got = prim::round_scaled<F>(m, scale, negative);
    ASSERT_EQ(got, Info::bits(expected)) << std::hex << "m 0x" << m << std::dec << " scale " << scale << " negative "
                                         << negative << " expected " << std::hexfloat << expected;
    ties += (m & (m - 1)) != 0 && std::countr_zero(m) + p + 1 == 64 - std::countl_zero(m);
    subnormal += std::isfinite(expected) && expected != 0 && std::fabs(expected) < std::ldexp(1.0, F.min_exponent);
    infinite += std::isinf(expected);
  }
  EXPECT_GT(ties, 1000);
  EXPECT_GT(subnormal, 100);
  if (F.width != 64) EXPECT_GT(infinite, 100);
}

// 128 exact bits folded into 64 with a sticky bit, as the engine's total is: rounding the folded
// value must give the correct rounding of the exact one.
template <prim::BinaryFormat F>
void check_sticky(std::uint64_t seed) {
  using Info = Format<F>;
  std::mt19937_64 rng(seed);
  constexpr int p = F.precision;
  const int lowest = std::max(-1074, F.min_exponent - p - 127 - 2);
  const int highest = F.width == 64 ? 1023 - 128 : F.bias - 127 + 2;
  for (int i = 0; i < 50000; ++i) {
    const bool negative = rng() % 2 != 0;
    const int scale = lowest + static_cast<int>(rng() % static_cast<std::uint64_t>(highest - lowest + 1));
    const std::uint64_t high = rng() | (1ull << 63);
    std::uint64_t low = 0;
    switch (rng() % 3) {
      case 0: low = rng(); break;
      case 1: low = 1ull << (rng() % 64); break;  // one far bit: exactly above a tie
      default: low = 0; break;
    }
    // A tie in the high word (bits p .. 63 kept, the next bit set, nothing else) when normal.
    const std::uint64_t tie_high = (high & ~((1ull << (64 - p)) - 1)) | (1ull << (63 - p));
    const std::uint64_t top = rng() % 2 ? high : tie_high;
    const unsigned __int128 m128 = (static_cast<unsigned __int128>(top) << 64) | low;
    const std::uint64_t m = top | (low != 0 ? 1 : 0);
    const double expected = scaled(m128, scale, negative).rounded(p, F.min_exponent, F.bias);
    const std::uint64_t got = prim::round_scaled<F>(m, scale + 64, negative);
    ASSERT_EQ(got, Info::bits(expected)) << std::hex << "top 0x" << top << " low 0x" << low << std::dec << " scale "
                                         << scale << " negative " << negative;
  }
}

}  // namespace

TEST(ExactArith, RoundScaledRoundsOnceToNearestEvenInEveryFormat) {
  SEED_TRACE("RoundScaled");
  check_round_scaled<prim::kFloatFormat>(seed);
  check_round_scaled<prim::kDoubleFormat>(seed + 1);
  check_round_scaled<prim::kHalfFormat>(seed + 2);
  check_round_scaled<prim::kBfloat16Format>(seed + 3);
}

TEST(ExactArith, RoundScaledFoldsTheBitsBelowIntoAStickyBit) {
  SEED_TRACE("Sticky");
  check_sticky<prim::kFloatFormat>(seed);
  check_sticky<prim::kDoubleFormat>(seed + 1);
  check_sticky<prim::kHalfFormat>(seed + 2);
  check_sticky<prim::kBfloat16Format>(seed + 3);
}

namespace {

// round_double: a double (any exponent, subnormals, both signs, ties of the narrow format, values
// past its range) rounded once, against the reference's rounding of the same value.
template <prim::BinaryFormat F>
void check_round_double(std::uint64_t seed) {
  using Info = Format<F>;
  std::mt19937_64 rng(seed);
  constexpr int p = F.precision;
  int rounded = 0;
  for (int i = 0; i < 100000; ++i) {
    double x = 0;
    switch (rng() % 4) {
      case 0: x = std::bit_cast<double>((rng() & ~(0x7FFull << 52)) | (std::uint64_t(rng() % 2047) << 52)); break;  // any finite
      case 1: x = std::ldexp(static_cast<double>(rng() >> 11), F.min_exponent - 70 + static_cast<int>(rng() % (F.bias + 100)) - 53); break;
      case 2: {  // a tie of F: p + 1 significant bits, the last one set
        const double m = static_cast<double>((rng() >> (64 - p)) | (1ull << (p - 1))) * 2 + 1;
        x = std::ldexp(m, F.min_exponent - p + static_cast<int>(rng() % (F.bias + 10)));
        break;
      }
      default: x = std::ldexp(static_cast<double>(rng() % 64), F.min_exponent - p - 3 + static_cast<int>(rng() % 8)); break;  // subnormals of F
    }
    if (rng() % 2) x = -x;
    if (!std::isfinite(x) || x == 0) continue;  // (the reference's sum has no signed zero: checked below)
    ExactReference r;
    r.add(x);
    const double expected = r.rounded(p, F.min_exponent, F.bias);
    ASSERT_EQ(prim::round_double<F>(x), Info::bits(expected)) << std::hexfloat << x << " expected " << expected;
    rounded += std::fabs(x) == std::fabs(expected) ? 0 : 1;
  }
  EXPECT_GT(rounded, 10000);  // most values were rounded
  EXPECT_EQ(prim::round_double<F>(-0.0), std::uint64_t(1) << (F.width - 1));  // zeros keep their sign
  EXPECT_EQ(prim::round_double<F>(0.0), 0u);
}

}  // namespace

TEST(ExactArith, RoundDoubleRoundsOnceIntoEveryNarrowerFormat) {
  SEED_TRACE("RoundDouble");
  check_round_double<prim::kFloatFormat>(seed);
  check_round_double<prim::kHalfFormat>(seed + 1);
  check_round_double<prim::kBfloat16Format>(seed + 2);
  // Against the host's own conversions: float, and _Float16 (correctly rounded in software).
  std::mt19937_64 rng(seed + 3);
  for (int i = 0; i < 100000; ++i) {
    const double x = std::ldexp(static_cast<double>(rng() >> 11) - static_cast<double>(1ull << 52), -static_cast<int>(rng() % 90));
    EXPECT_EQ(prim::round_double<prim::kFloatFormat>(x), std::bit_cast<std::uint32_t>(static_cast<float>(x)));
    EXPECT_EQ(prim::round_double<prim::kHalfFormat>(x), std::bit_cast<std::uint16_t>(static_cast<_Float16>(x)));
  }
}

TEST(ExactArith, RoundScaledAtTheEdgesOfDouble) {
  const std::uint64_t largest = std::bit_cast<std::uint64_t>(std::numeric_limits<double>::max());
  const std::uint64_t infinity = std::bit_cast<std::uint64_t>(std::numeric_limits<double>::infinity());
  const std::uint64_t max_mantissa = ((1ull << 53) - 1) << 11;  // the largest double is this * 2^960
  EXPECT_EQ(prim::round_scaled<prim::kDoubleFormat>(max_mantissa, 960, false), largest);
  EXPECT_EQ(prim::round_scaled<prim::kDoubleFormat>(max_mantissa | 0x3FF, 960, false), largest);  // below half an ulp
  EXPECT_EQ(prim::round_scaled<prim::kDoubleFormat>(max_mantissa | 0x400, 960, true), infinity | (1ull << 63));  // a tie: to even, past the range
  EXPECT_EQ(prim::round_scaled<prim::kDoubleFormat>(~0ull, 960, false), infinity);
  EXPECT_EQ(prim::round_scaled<prim::kDoubleFormat>(1ull << 63, -1074 - 64, false), 0u);  // half the smallest subnormal: to even (zero)
  EXPECT_EQ(prim::round_scaled<prim::kDoubleFormat>((1ull << 63) | 1, -1074 - 64, false), 1u);  // just above: the smallest
  EXPECT_EQ(prim::round_scaled<prim::kDoubleFormat>(0, 5, true), 1ull << 63);  // a zero keeps its sign
}

namespace {

// A divisor of every kind: 1, powers of two, small, random below 2^32, 2^32 and above, up to 2^48 - 1.
std::uint64_t any_divisor(std::mt19937_64& rng) {
  switch (rng() % 7) {
    case 0: return 1;
    case 1: return std::uint64_t(1) << (rng() % 48);
    case 2: return 1 + rng() % 1000;
    case 3: return 1 + (rng() >> 32);
    case 4: return (std::uint64_t(1) << 32) - 2 + rng() % 4;  // both sides of the two digit widths
    case 5: return (std::uint64_t(1) << 48) - 1 - rng() % 3;
    default: return 1 + (rng() >> 16);
  }
}

// The window's value times 2^96 divided by `divisor` in 32-bit digits with a 128-bit remainder:
// the quotient's top 64 bits with every bit under them (and the remainder, and `below`) folded
// into bit 0, and their scale in units of window[4]'s bit 0.
prim::Scaled reference_quotient(const std::uint32_t (&window)[5], bool below, std::uint64_t divisor) {
  std::uint32_t digits[8] = {window[0], window[1], window[2], window[3], window[4], 0, 0, 0};  // highest first
  std::uint32_t q[8];
  unsigned __int128 rest = 0;
  for (int i = 0; i < 8; ++i) {
    const unsigned __int128 current = (rest << 32) | digits[i];
    q[i] = static_cast<std::uint32_t>(current / divisor);
    rest = current % divisor;
  }
  int first = 0;
  while (q[first] == 0) ++first;  // the quotient is at least 2^(32 * 7 - 48)
  const int lz = std::countl_zero(q[first]);
  // Bits of the quotient from its top: 64 of them into m, the rest into the sticky bit.
  unsigned __int128 top = (static_cast<unsigned __int128>(q[first]) << 64) | (static_cast<unsigned __int128>(q[first + 1]) << 32) | q[first + 2];
  bool sticky = below || rest != 0;
  for (int i = first + 3; i < 8; ++i) sticky = sticky || q[i] != 0;
  // top holds 96 bits with lz leading zeros: 64 from bit 95 - lz down.
  const int shift = 32 - lz;
  sticky = sticky || (top & ((static_cast<unsigned __int128>(1) << shift) - 1)) != 0;
  const std::uint64_t m = static_cast<std::uint64_t>(top >> shift);
  // q[i] counts units of 2^(32 (7 - i) - 96) of window[4]'s bit 0.
  return {m | (sticky ? 1 : 0), 32 * (7 - (first + 2)) - 96 + shift};
}

}  // namespace

TEST(ExactArith, DivideWindowGivesTheQuotientsTopBitsAndStickyBit) {
  SEED_TRACE("DivideWindow");
  std::mt19937_64 rng(seed);
  int exact = 0, wide = 0;
  for (int i = 0; i < 200000; ++i) {
    std::uint32_t window[5];
    for (auto& w : window) {
      switch (rng() % 4) {
        case 0: w = 0; break;
        case 1: w = 0xFFFFFFFFu; break;
        default: w = static_cast<std::uint32_t>(rng()); break;
      }
    }
    if (rng() % 4 == 0) window[0] = 1 + static_cast<std::uint32_t>(rng() % 3);
    if (window[0] == 0) window[0] = 1;
    const std::uint64_t divisor = any_divisor(rng);
    bool below = rng() % 2 != 0;
    if (rng() % 4 == 0) {  // an exact multiple of the divisor, nothing below: the quotient ends in zeros
      const unsigned __int128 k = ((static_cast<unsigned __int128>(rng()) << 64 | rng()) >> (58 + rng() % 60)) + 1;
      const unsigned __int128 v = k * divisor;  // below 2^118
      for (int j = 0; j < 4; ++j) window[j] = static_cast<std::uint32_t>(v >> (32 * (3 - j)));
      window[4] = 0;
      while (window[0] == 0) {  // times 2^32 until the top limb is non-zero: still a multiple
        for (int j = 0; j < 4; ++j) window[j] = window[j + 1];
        window[4] = 0;
      }
      below = false;
      ++exact;
    }
    wide += divisor >> 32 != 0;
    const prim::Scaled got = prim::divide_window(window, below, divisor);
    const prim::Scaled expected = reference_quotient(window, below, divisor);
    ASSERT_EQ(got.m, expected.m) << std::hex << "window " << window[0] << " " << window[1] << " " << window[2] << " "
                                 << window[3] << " " << window[4] << " below " << below << " divisor " << divisor;
    ASSERT_EQ(got.scale, expected.scale) << "divisor " << divisor;
    ASSERT_NE(got.m >> 63, 0u);
  }
  EXPECT_GT(exact, 10000);
  EXPECT_GT(wide, 30000);
}

namespace {

// The mean of random exact limbs (low bit `low_bit`, as the engine's accumulators), rounded the
// engine's way (the five highest limbs, divide_window, round_scaled) against the reference's
// quotient of the same value.
template <prim::BinaryFormat F>
void check_mean_of_limbs(std::uint64_t seed, int low_bit, int limbs) {
  std::mt19937_64 rng(seed);
  int subnormal = 0, infinite = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<std::uint32_t> limb(static_cast<std::size_t>(limbs), 0);
    const int h = static_cast<int>(rng() % static_cast<std::uint64_t>(limbs));
    const int low = std::max(0, h - static_cast<int>(rng() % 8));
    for (int j = low; j <= h; ++j) limb[std::size_t(j)] = static_cast<std::uint32_t>(rng() >> (rng() % 2 == 0 ? 0 : rng() % 64));
    if (limb[std::size_t(h)] == 0) limb[std::size_t(h)] = 1;
    const std::uint64_t divisor = any_divisor(rng);
    const bool negative = rng() % 2 != 0;
    ExactReference reference;
    for (int j = 0; j < limbs; ++j) {
      const double piece = std::ldexp(static_cast<double>(limb[std::size_t(j)]), low_bit + 32 * j);
      reference.add(negative ? -piece : piece);
    }
    std::uint32_t window[5];
    for (int k = 0; k < 5; ++k) window[k] = h - k >= 0 ? limb[std::size_t(h - k)] : 0;
    bool below = false;
    for (int j = 0; j < h - 4; ++j) below = below || limb[std::size_t(j)] != 0;
    const prim::Scaled q = prim::divide_window(window, below, divisor);
    const std::uint64_t got = prim::round_scaled<F>(q.m, q.scale + low_bit + 32 * (h - 4), negative);
    const double expected = reference.rounded(F.precision, F.min_exponent, F.bias, divisor);
    ASSERT_EQ(got, Format<F>::bits(expected)) << "h " << h << " divisor " << divisor << std::hexfloat << " expected "
                                              << expected;
    subnormal += std::isfinite(expected) && expected != 0 && std::fabs(expected) < std::ldexp(1.0, F.min_exponent);
    infinite += std::isinf(expected);
  }
  EXPECT_GT(subnormal, 50);
  if (F.width != 64) EXPECT_GT(infinite, 50);
}

}  // namespace

TEST(ExactArith, MeanOfExactLimbsRoundsAsTheExactQuotient) {
  SEED_TRACE("MeanOfLimbs");
  // Float-valued sums (limbs from 2^-149) into float, half and bfloat16; double sums (from
  // 2^-1074, as far up as the reference's doubles reach) into double.
  check_mean_of_limbs<prim::kFloatFormat>(seed, -149, 32);
  check_mean_of_limbs<prim::kHalfFormat>(seed + 1, -149, 32);
  check_mean_of_limbs<prim::kBfloat16Format>(seed + 2, -149, 32);
  check_mean_of_limbs<prim::kDoubleFormat>(seed + 3, -1074, 64);
}

namespace {

// is_midpoint against the grid of F computed in doubles: x's neighbours in F below and above, and
// whether x is exactly between them.
template <prim::BinaryFormat F>
void check_midpoints(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(1.0, 2.0);
  int midpoints = 0;
  for (int i = 0; i < 100000; ++i) {
    const int e = F.min_exponent - F.precision - 2 + static_cast<int>(rng() % static_cast<std::uint64_t>(F.bias - F.min_exponent + F.precision + 4));
    const double ulp = std::ldexp(1.0, std::max(e, F.min_exponent) - (F.precision - 1));
    const double on_grid = std::floor(std::ldexp(unit(rng), e) / ulp) * ulp;
    double x = on_grid;
    switch (rng() % 4) {
      case 0: x = on_grid + ulp / 2; break;  // a midpoint (the overflow threshold among them)
      case 1: x = std::nextafter(on_grid + ulp / 2, rng() % 2 ? 0.0 : INFINITY); break;
      case 2: break;  // on the grid
      default: x = std::ldexp(unit(rng), e); break;
    }
    if (rng() % 2) x = -x;
    const double a = std::fabs(x);
    const bool beyond = a >= std::ldexp(2.0, F.bias);  // past the largest binade: nothing to round to
    const double below = std::floor(a / ulp) * ulp;
    const bool expected = !beyond && a - below == ulp / 2 && a != 0;
    EXPECT_EQ(prim::is_midpoint<F>(x), expected) << std::hexfloat << x;
    midpoints += expected;
  }
  EXPECT_GT(midpoints, 20000);
}

}  // namespace

TEST(ExactArith, IsMidpointFindsExactlyTheHalfwayPoints) {
  SEED_TRACE("Midpoints");
  check_midpoints<prim::kFloatFormat>(seed);
  check_midpoints<prim::kHalfFormat>(seed + 1);
  check_midpoints<prim::kBfloat16Format>(seed + 2);
  EXPECT_FALSE(prim::is_midpoint<prim::kFloatFormat>(0.0));
  EXPECT_TRUE(prim::is_midpoint<prim::kFloatFormat>(std::ldexp(1.0, -150)));   // half the smallest subnormal
  EXPECT_TRUE(prim::is_midpoint<prim::kFloatFormat>(std::ldexp(2.0, 127) - std::ldexp(1.0, 103)));  // the overflow threshold
  EXPECT_FALSE(prim::is_midpoint<prim::kFloatFormat>(std::ldexp(1.0, 128)));
}

// pair_to_float against the big-integer reference's rounding of sum + error to float: random pairs
// (the error from far below to as large as the sum, of either sign), and pairs built on float
// midpoints (normal, subnormal, the overflow threshold, both signs) with an error that is zero,
// just above or just below, where a double rounding would go the wrong way.
TEST(ExactArith, PairToFloatRoundsTheExactSumOnce) {
  SEED_TRACE("PairToFloat");
  std::mt19937_64 rng(seed);
  auto check = [](double sum, double error) {
    const float got = prim::pair_to_float(sum, error);
    const float want = static_cast<float>(exact_of({sum, error}).rounded<float>());
    ASSERT_EQ(std::bit_cast<std::uint32_t>(got), std::bit_cast<std::uint32_t>(want))
        << std::hexfloat << "sum " << sum << ", error " << error << ": " << got << ", expected " << want;
  };
  for (int i = 0; i < 200000; ++i) {
    const double sum = (rng() % 2 ? -1.0 : 1.0) * std::ldexp(1.0 + double(rng() >> 11) * 0x1p-53, int(rng() % 290) - 160);
    const double error = (rng() % 2 ? -1.0 : 1.0) * std::ldexp(1.0 + double(rng() >> 11) * 0x1p-53,
                                                               std::ilogb(sum) - int(rng() % 120));
    check(sum, error);
  }
  int midpoints = 0;
  for (int i = 0; i < 20000; ++i) {
    // A float midpoint: an odd multiple of half a float ulp at a random exponent (subnormal ones
    // included), or the overflow threshold.
    const int exponent = int(rng() % 275) - 149;  // the ulp's exponent is max(exponent, -126) - 23
    const double ulp = std::ldexp(1.0, std::max(exponent, -126) - 23);
    const double m = i % 100 == 0 ? std::ldexp(2.0, 127) - std::ldexp(1.0, 103)
                                  : std::ldexp(double(rng() % (1u << 23) | 1u << 23), exponent - 23) + ulp / 2;
    if (!std::isfinite(m) || !prim::is_midpoint<prim::kFloatFormat>(m)) continue;
    ++midpoints;
    const double sign = rng() % 2 ? -1.0 : 1.0;
    const double tiny = std::ldexp(1.0, std::ilogb(m) - 60 - int(rng() % 200));
    for (double error : {0.0, tiny, -tiny}) check(sign * m, sign * error);
  }
  EXPECT_GT(midpoints, 15000);
}

TEST(ExactLanes, FloatLanesAndTheirSpillsLoseNothing) {
  SEED_TRACE("FloatLanes");
  std::mt19937_64 rng(seed);
  constexpr std::size_t kChain = 64;  // a chain's elements per tile on the GPU
  for (int kind = 0; kind < kExactDataSetCount; ++kind) {
    SCOPED_TRACE(kExactDataSets[kind]);
    const std::vector<float> data = exact_data<float>(kind, kChain * 4096, rng());
    ExactReference all, parts;
    all.add_all(data.data(), data.size());
    std::size_t spills = 0;
    auto spill = [&](double x) {
      parts.add(x);
      ++spills;
    };
    for (std::size_t c = 0; c < data.size(); c += kChain) {
      prim::ExactFloatLane lane;
      for (std::size_t i = c; i < c + kChain; ++i) lane.add(data[i], spill);
      ASSERT_TRUE(std::isfinite(lane.sum));
      parts.add(lane.sum);
    }
    EXPECT_TRUE(parts == all) << "kind " << kind;
    // Uniform and normal data spill (almost) nothing: the fast path is the path.
    if (kind <= 1) EXPECT_LT(spills, data.size() / 1000) << "kind " << kind;
    if (kind == 7) EXPECT_GT(spills, data.size() / 10) << "every exponent: the spills are exercised";
  }
}

// The kernels' hot loop runs try_add and sums a batch again with add where it returned false: so
// try_add must fail exactly where add would hand something on, and agree with it bit for bit
// elsewhere (a state that try_add left after a failure is thrown away).
TEST(ExactLanes, TryAddFailsExactlyWhereAddHandsOn) {
  SEED_TRACE("TryAdd");
  std::mt19937_64 rng(seed);
  constexpr std::size_t kChain = 64;
  for (int kind = 0; kind < kExactDataSetCount; ++kind) {
    SCOPED_TRACE(kExactDataSets[kind]);
    std::size_t fails[2] = {0, 0};
    const std::vector<float> floats = exact_data<float>(kind, kChain * 512, rng());
    const std::vector<double> doubles = exact_data<double>(kind, kChain * 512, rng());
    for (std::size_t c = 0; c < floats.size(); c += kChain) {
      prim::ExactFloatLane lane;
      prim::ExactDoubleLane pair;
      for (std::size_t i = c; i < c + kChain; ++i) {
        prim::ExactFloatLane tried = lane;
        const bool ok = tried.try_add(floats[i]);
        bool spilled = false;
        auto spill = [&](double) { spilled = true; };
        lane.add(floats[i], spill);
        ASSERT_EQ(ok, !spilled) << "float element " << i;
        if (ok) ASSERT_EQ(std::bit_cast<std::uint64_t>(tried.sum), std::bit_cast<std::uint64_t>(lane.sum));
        fails[0] += !ok;

        prim::ExactDoubleLane tried_pair = pair;
        const bool pair_ok = tried_pair.try_add(doubles[i]);
        const double left = pair.add(doubles[i]);
        ASSERT_EQ(pair_ok, left == 0.0) << "double element " << i;
        if (pair_ok) {
          ASSERT_EQ(std::bit_cast<std::uint64_t>(tried_pair.sum), std::bit_cast<std::uint64_t>(pair.sum));
          ASSERT_EQ(std::bit_cast<std::uint64_t>(tried_pair.error), std::bit_cast<std::uint64_t>(pair.error));
        }
        fails[1] += !pair_ok;
      }
    }
    if (kind == 7) EXPECT_GT(fails[0], floats.size() / 10) << "every exponent: the failures are exercised";
    if (kind == 7) EXPECT_GT(fails[1], 0u) << "every exponent: the failures are exercised";
  }
  // t = sum + x finite but z = t - sum beyond the range: add hands x on whole (not a NaN error),
  // try_add fails.
  {
    prim::ExactDoubleLane lane, tried;
    lane.sum = tried.sum = -(std::ldexp(1.0, 1023) - std::ldexp(5.0, 970));
    const double x = std::numeric_limits<double>::max();
    EXPECT_FALSE(tried.try_add(x));
    EXPECT_EQ(std::bit_cast<std::uint64_t>(lane.add(x)), std::bit_cast<std::uint64_t>(x));
    EXPECT_EQ(lane.sum, -(std::ldexp(1.0, 1023) - std::ldexp(5.0, 970)));
    EXPECT_EQ(lane.error, 0.0);
  }
  // Overflow, infinity and NaN: add hands the element on, try_add fails.
  const double big = std::numeric_limits<double>::max();
  for (const double x : {big, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                         std::numeric_limits<double>::quiet_NaN()}) {
    prim::ExactDoubleLane lane, tried;
    lane.sum = tried.sum = big;
    EXPECT_FALSE(tried.try_add(x)) << x;
    EXPECT_NE(lane.add(x), 0.0) << x;
    prim::ExactFloatLane f;
    EXPECT_EQ(f.try_add(static_cast<float>(x)), std::isfinite(static_cast<float>(x))) << x;
  }
}

namespace {

// Patterns aimed at the lanes of the simulation below (element i of a tile goes to lane i % 32, chain
// (i / 32) % 2; on the GPU lane l takes the vectors of two doubles l, l + 32, ..., chain c their
// element c, a different mapping with the same arithmetic):
std::vector<double> lane_pattern(int pattern, std::size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double sign = unit(rng) < 0.5 ? -1.0 : 1.0;
    switch (pattern) {
      case 0:  // each lane at a scale of its own, 2^35 apart: exact chains, lanes that do not fit together
        v[i] = std::ldexp(sign * (1.0 + unit(rng)), 35 * static_cast<int>(i % 32) - 500);
        break;
      case 1:  // even lanes: fractions (chains with rounding errors); odd lanes: multiples of 2^40 (exact
               // chains): where they meet, TwoSum's error does not fit with the even lane's errors
        v[i] = i % 2 == 0 ? unit(rng) : static_cast<double>(rng() % 1000) * std::ldexp(1.0, 40);
        break;
      default:  // chains alternating 2^60 with 1 (even lanes) or 2^-60 (odd lanes): exact sums that
                // meet exactly, rounding errors that do not fit together
        v[i] = (i / 64) % 2 == 0 ? std::ldexp(1.0, 60) : (i % 2 == 0 ? 1.0 : std::ldexp(1.0, -60));
        break;
    }
  }
  return v;
}

}  // namespace

// The double path as the GPU runs it: 32 lanes, two chains each of 64 elements per tile, leftovers
// spilled, the lanes' pairs joined in the xor butterfly (operands ordered by lane), the tile's
// pair taken when every addition was exact and the chains one by one otherwise.
TEST(ExactLanes, DoubleLanesAndTheirButterflyLoseNothing) {
  SEED_TRACE("DoubleLanes");
  std::mt19937_64 rng(seed);
  constexpr std::size_t kChain = 64, kTile = 32 * 2 * kChain;
  for (int kind = 0; kind < kExactDataSetCount + 3; ++kind) {  // the data sets, then the lane patterns
    SCOPED_TRACE(kind < kExactDataSetCount ? kExactDataSets[kind] : "lane pattern");
    const std::vector<double> data = kind < kExactDataSetCount ? exact_data<double>(kind, kTile * 64, rng())
                                                               : lane_pattern(kind - kExactDataSetCount, kTile * 64, rng);
    ExactReference all, parts;
    all.add_all(data.data(), data.size());
    std::size_t spills = 0, fallbacks = 0;
    for (std::size_t t = 0; t < data.size(); t += kTile) {
      prim::ExactDoubleLane chains[32][2];
      for (std::size_t k = 0; k < 2 * kChain; ++k) {
        for (std::size_t lane = 0; lane < 32; ++lane) {
          const double left = chains[lane][k % 2].add(data[t + k * 32 + lane]);
          if (left != 0.0) {
            parts.add(left);
            ++spills;
          }
        }
      }
      prim::ExactPair v[32];
      for (std::size_t lane = 0; lane < 32; ++lane) {
        v[lane] = prim::exact_pair_add({chains[lane][0].sum, chains[lane][0].error, true},
                                       {chains[lane][1].sum, chains[lane][1].error, true});
      }
      for (std::size_t offset = 16; offset > 0; offset /= 2) {
        prim::ExactPair next[32];
        for (std::size_t lane = 0; lane < 32; ++lane) {
          const prim::ExactPair& other = v[lane ^ offset];
          next[lane] = (lane & offset) ? prim::exact_pair_add(other, v[lane]) : prim::exact_pair_add(v[lane], other);
        }
        std::copy(next, next + 32, v);
      }
      for (std::size_t lane = 1; lane < 32; ++lane) {
        ASSERT_EQ(std::bit_cast<std::uint64_t>(v[lane].sum), std::bit_cast<std::uint64_t>(v[0].sum)) << "lanes disagree";
        ASSERT_EQ(v[lane].ok, v[0].ok);
      }
      if (v[0].ok) {
        parts.add(v[0].sum);
        parts.add(v[0].error);
      } else {
        ++fallbacks;
        for (auto& lane : chains) {
          for (auto& chain : lane) {
            parts.add(chain.sum);
            parts.add(chain.error);
          }
        }
      }
    }
    EXPECT_TRUE(parts == all) << "kind " << kind;
    if (kind <= 1) {
      EXPECT_EQ(fallbacks, 0u) << "kind " << kind;
      EXPECT_LT(spills, data.size() / 1000) << "kind " << kind;
    }
    if (kind == 2 || kind == 7) EXPECT_GT(spills + fallbacks, 0u) << "kind " << kind << ": the slow paths are exercised";
    if (kind >= kExactDataSetCount) EXPECT_GT(fallbacks, 0u) << "kind " << kind << ": the butterfly's fallback is exercised";
  }
}

// The exact check of short axes (detail/exact_axis.cuh) as the GPU runs it: each lane folds its
// elements with add_exact_or_nan (float-valued) or checked_pair_add (doubles), a warp's 32 lanes
// meet in the xor butterfly. A result that is not NaN must be the exact sum (then one rounding is
// the correctly rounded result); NaN marks the outputs the fix-up recomputes, and must come for
// every row with an infinity or NaN and stay NaN whatever is added to it.
TEST(ExactArith, ExactCheckIsExactOrNaN) {
  SEED_TRACE("ExactCheck");
  std::mt19937_64 rng(seed);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const double big = std::numeric_limits<double>::max();
  EXPECT_TRUE(std::isnan(prim::add_exact_or_nan(nan, 0.0)));
  EXPECT_TRUE(std::isnan(prim::add_exact_or_nan(1.0, inf)));
  EXPECT_TRUE(std::isnan(prim::add_exact_or_nan(big, big)));
  EXPECT_TRUE(std::isnan(prim::add_exact_or_nan(1.0, 0x1p-60)));
  EXPECT_EQ(prim::add_exact_or_nan(1.0, 0x1p-52), 1.0 + 0x1p-52);
  EXPECT_TRUE(std::isnan(prim::checked_pair_add({big, 0.0}, big).error));
  EXPECT_TRUE(std::isnan(prim::checked_pair_add({1.0, 0.0}, -inf).error));
  EXPECT_TRUE(std::isnan(prim::checked_pair_join({1.0, nan}, {1.0, 0.0}).error));
  EXPECT_FALSE(std::isnan(prim::checked_pair_add({1.0, 0.0}, 0x1p-80).error));  // TwoSum keeps it

  for (int kind = 0; kind < kExactDataSetCount; ++kind) {
    SCOPED_TRACE(kExactDataSets[kind]);
    for (int is_double = 0; is_double < 2; ++is_double) {
      const std::size_t rows = 300;
      std::size_t failed = 0, specials = 0;
      for (std::size_t row = 0; row < rows; ++row) {
        const std::size_t length = 1 + rng() % (is_double ? 4096 : 1024);
        std::vector<double> data(length);
        if (is_double) {
          data = exact_data<double>(kind, length, rng());
        } else {
          const std::vector<float> f = exact_data<float>(kind, length, rng());
          std::copy(f.begin(), f.end(), data.begin());
        }
        ExactReference all;
        all.add_all(data.data(), data.size());
        const bool special = std::any_of(data.begin(), data.end(), [](double x) { return !std::isfinite(x); });
        specials += special;
        const double single = warp_fold(data, 0.0, prim::add_exact_or_nan, prim::add_exact_or_nan);
        const prim::CheckedPair pair = warp_fold(data, prim::CheckedPair{0.0, 0.0}, prim::checked_pair_add,
                                                 prim::checked_pair_join);
        const bool nan_mark = is_double ? std::isnan(pair.error) : std::isnan(single);
        if (special) ASSERT_TRUE(nan_mark) << "row " << row << ": an infinity or NaN must be recomputed";
        if (nan_mark) {
          ++failed;
          continue;
        }
        if (is_double) {
          ASSERT_TRUE(std::isfinite(pair.sum));
          ASSERT_TRUE(exact_of({pair.sum, pair.error}) == all) << "row " << row << ", length " << length;
        } else {
          ASSERT_TRUE(exact_of({single}) == all) << "row " << row << ", length " << length;
        }
      }
      // Uniform and normal rows pass the check (the fast path is the path); rows of every
      // exponent fail it (the fix-up is exercised).
      if (kind <= 1) EXPECT_LT(failed, rows / 20) << (is_double ? "double" : "float");
      if (kind == 7) EXPECT_GT(failed, rows / 2) << (is_double ? "double" : "float");
      if (kind == 8) EXPECT_GT(specials, 0u) << "the data hold infinities and NaN";
    }
  }
}

// TermCheck's state (detail/exact_axis.cuh) on the host: rows of 1 to 4096 float squares, or
// products with a second float row, each exact in double, folded into 32 lanes' CheckedPairs and
// joined in the xor butterfly. A result that is not NaN must be the exact sum of the terms; rows
// with an infinity or NaN must be marked; uniform and normal rows (of one binade or two) must
// mostly pass (the check is the fast path), rows of every exponent mostly fail (the fix-up).
TEST(ExactArith, TermCheckOfSquaresAndProductsIsExactOrNaN) {
  SEED_TRACE("TermCheck");
  std::mt19937_64 rng(seed);
  for (int kind = 0; kind < kExactDataSetCount; ++kind) {
    SCOPED_TRACE(kExactDataSets[kind]);
    for (int products = 0; products < 2; ++products) {
      const std::size_t rows = 200;
      std::size_t failed = 0, specials = 0;
      for (std::size_t row = 0; row < rows; ++row) {
        const std::size_t length = 1 + rng() % 4096;
        const std::vector<float> x = exact_data<float>(kind, length, rng());
        const std::vector<float> y = exact_data<float>(0, length, rng());
        std::vector<double> terms(length);
        for (std::size_t k = 0; k < length; ++k) {
          terms[k] = double(x[k]) * (products ? double(y[k]) : double(x[k]));  // exact in double
        }
        ExactReference all;
        all.add_all(terms.data(), terms.size());
        const bool special = std::any_of(terms.begin(), terms.end(), [](double t) { return !std::isfinite(t); });
        specials += special;
        const prim::CheckedPair pair = warp_fold(terms, prim::CheckedPair{0.0, 0.0}, prim::checked_pair_add,
                                                 prim::checked_pair_join);
        if (special) ASSERT_TRUE(std::isnan(pair.error)) << "row " << row << ": an infinity or NaN must be recomputed";
        if (std::isnan(pair.error)) {
          ++failed;
          continue;
        }
        ASSERT_TRUE(std::isfinite(pair.sum));
        ASSERT_TRUE(exact_of({pair.sum, pair.error}) == all) << "row " << row << ", length " << length;
      }
      if (kind <= 1) EXPECT_LT(failed, rows / 20) << (products ? "products" : "squares");
      if (kind == 7) EXPECT_GT(failed, rows / 2) << (products ? "products" : "squares");
      if (kind == 8) EXPECT_GT(specials, 0u) << "the data hold infinities and NaN";
    }
  }
}

TEST(ExactReference, AgreesWithShewchuksPartialsAndKnownSums) {
  SEED_TRACE("Reference");
  std::mt19937_64 rng(seed);
  // Uniform, normal, wide range, subnormal: the data sets whose partial sums stay far from
  // overflow (math.fsum's method does not apply beyond; double cancellation's pairs are ~10^306).
  for (int kind : {0, 1, 2, 4}) {
    const std::vector<double> data = exact_data<double>(kind, 20011, rng());
    EXPECT_EQ(fr::reference::exact_rounded<double>(data.data(), data.size()), fr::reference::exact_sum(data.data(), data.size()))
        << "kind " << kind;
  }
  // Known sums: a tie to even, cancellation far below the result, an overflowing intermediate
  // that comes back, an overflowing total, the specials, zeros.
  const double tie[] = {1.0, std::ldexp(1.0, -53)};
  EXPECT_EQ(fr::reference::exact_rounded<double>(tie, 2), 1.0);
  const double above_tie[] = {1.0, std::ldexp(1.0, -53), std::ldexp(1.0, -1074)};
  EXPECT_EQ(fr::reference::exact_rounded<double>(above_tie, 3), std::nextafter(1.0, 2.0));
  const double back[] = {1e308, 1e308, -1e308};
  EXPECT_EQ(fr::reference::exact_rounded<double>(back, 3), 1e308);
  const double over[] = {1.7e308, 1.7e308};
  EXPECT_EQ(fr::reference::exact_rounded<double>(over, 2), INFINITY);
  EXPECT_EQ(fr::reference::exact_rounded<float>(over, 2), INFINITY);
  const double specials[] = {1.0, INFINITY, 2.0};
  EXPECT_EQ(fr::reference::exact_rounded<double>(specials, 3), INFINITY);
  const double both[] = {-INFINITY, INFINITY};
  EXPECT_TRUE(std::isnan(fr::reference::exact_rounded<double>(both, 2)));
  const float half_tie[] = {2048.0f, 1.0f};  // 2049 lies between the halves 2048 and 2050: to even
  EXPECT_EQ(fr::reference::exact_rounded<__half>(half_tie, 2), 2048.0);
  const float to_zero[] = {1.0f, -1.0f};
  EXPECT_FALSE(std::signbit(fr::reference::exact_rounded<float>(to_zero, 2)));
}

namespace {

using fr::testing::BigNatural;

// variance_numerator's inputs from |S1| and S2' (S2 in units of 2^-298): |S1|'s digits as limbs
// of 2^-149 units, S2' shifted 776 bits up into limbs of 2^-1074 units.
struct MomentLimbs {
  std::vector<unsigned long long> s1 = std::vector<unsigned long long>(32, 0);
  std::vector<unsigned long long> s2 = std::vector<unsigned long long>(96, 0);
  MomentLimbs(const BigNatural& sum, const BigNatural& squares) {
    for (std::size_t j = 0; j < 32 && j < sum.d.size(); ++j) s1[j] = sum.d[j];
    for (std::size_t j = 0; j + 24 < 96 && j < squares.d.size(); ++j) {
      s2[24 + j] |= (std::uint64_t(squares.d[j]) << 8) & 0xFFFFFFFFull;
      if (25 + j < 96) s2[25 + j] |= squares.d[j] >> 24;
    }
  }
  double numerator(std::uint64_t n) const { return prim::variance_numerator(s1.data(), 32, s2.data(), 96, n); }
};

BigNatural random_natural(int bits, std::mt19937_64& rng) {
  BigNatural x;
  for (int i = 0; i < bits; i += 32) x.d[std::size_t(i / 32)] = static_cast<std::uint32_t>(rng());
  if (bits % 32 != 0) x.d[std::size_t(bits / 32)] &= (1u << (bits % 32)) - 1;
  if (bits > 0) x.d[std::size_t((bits - 1) / 32)] |= 1u << ((bits - 1) % 32);  // exactly `bits` bits
  return x;
}

// The float nearest to num 2^scale / den (ties to even; normal results), from 128 more bits of
// quotient and a sticky remainder.
double quotient_rounded_to_float(const BigNatural& num, int scale, std::uint64_t den1, std::uint64_t den2) {
  BigNatural shifted;
  shifted.add(num, 4);
  std::uint64_t r1 = 0, r2 = 0;
  const BigNatural q = shifted.divided(den1, &r1).divided(den2, &r2);
  return q.rounded(scale - 128, 24, r1 != 0 || r2 != 0);
}

}  // namespace

// The exact variance's numerator, N = n S2 - S1^2 rounded once to double, against BigNatural's own
// arithmetic: random |S1| of 0 to 317 bits, n from 1 to 2^40 - 1 (both of its 32-bit digits), S2
// just above S1^2 / n or far above, up to the contract's 2^594; N = 0, 1, and ties of double
// rounding. Then the whole fixed rounding (N / n / (n - correction), to float) against the
// correctly rounded quotient: within one float ulp, as docs/reproducible.md says.
TEST(ExactArith, VarianceNumeratorIsNTimesS2MinusS1SquaredRoundedOnce) {
  SEED_TRACE("VarianceNumerator");
  std::mt19937_64 rng(seed);
  const std::uint64_t ns[] = {1, 2, 3, 1000003, (1ull << 32) - 1, 1ull << 32, (1ull << 32) + 5, (1ull << 40) - 1};
  int within = 0, exact = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const std::uint64_t n = trial % 2 == 0 ? ns[trial / 2 % 8] : 1 + rng() % ((1ull << 40) - 1);
    // |S1|^2 / n below 2^593, so that S2 stays within the contract.
    const int log_n = 63 - std::countl_zero(n);
    const int max_bits = std::min(317, (593 + log_n) / 2);
    const int s1_bits = trial % 7 == 0 ? max_bits : trial % 7 == 1 ? 0 : int(rng() % std::uint64_t(max_bits + 1));
    const BigNatural s1 = random_natural(s1_bits, rng);
    const BigNatural square = s1.times(s1);
    std::uint64_t rest = 0;
    BigNatural s2 = square.divided(n, &rest);
    if (rest != 0) s2.add(1, 0);  // the least S2 with n S2 >= S1^2
    const int extra = trial % 3 == 0 ? 0 : trial % 3 == 1 ? int(rng() % 64) : int(rng() % 590);
    if (s2.top_bit() < 593 && extra > 0) s2.add(random_natural(std::min(extra, 592 - std::max(s2.top_bit(), 0)), rng));
    ASSERT_LT(s2.top_bit(), 594);
    const BigNatural numerator = s2.times(n).minus(square);
    const double expected = numerator.rounded(-298);
    const MomentLimbs limbs(s1, s2);
    const double got = limbs.numerator(n);
    ASSERT_EQ(std::bit_cast<std::uint64_t>(got), std::bit_cast<std::uint64_t>(expected))
        << "n " << n << ", |S1| of " << s1_bits << " bits" << std::hexfloat << ": " << got << ", expected " << expected;
    // The fixed rounding against the correctly rounded variance (normal float results only).
    for (std::uint64_t correction : {0ull, 1ull}) {
      if (n <= correction || numerator.top_bit() < 0) continue;
      const float fixed = static_cast<float>(got / static_cast<double>(n) / static_cast<double>(n - correction));
      const double best = quotient_rounded_to_float(numerator, -298, n, n - correction);
      if (!(std::fabs(best) >= 0x1p-126 && std::fabs(best) < 0x1p127)) continue;
      const float b = static_cast<float>(best);
      ASSERT_TRUE(fixed == b || fixed == std::nextafter(b, 0.0f) || fixed == std::nextafter(b, INFINITY))
          << "n " << n << ", correction " << correction << std::hexfloat << ": " << fixed << ", correctly rounded " << b;
      ++within;
      exact += fixed == b;
    }
  }
  EXPECT_GT(within, 300);  // the ulp check ran (about a fifth of the trials land in float's normal range)
  // N = 0 (S1 = n k, S2 = n k^2), N = 1, and ties of the rounding to double: 2^53 + 1 (to 2^53),
  // 2^53 + 3 (to 2^53 + 4), 2^54 + 2 (to 2^54), 2^54 + 6 (to 2^54 + 8).
  for (std::uint64_t n : {std::uint64_t(1), std::uint64_t(7), (std::uint64_t(1) << 40) - 1}) {
    const BigNatural k = random_natural(200, rng);
    BigNatural s1 = k.times(n), s2 = k.times(k).times(n);
    EXPECT_EQ(MomentLimbs(s1, s2).numerator(n), 0.0) << n;
  }
  const BigNatural s1 = random_natural(250, rng), square = s1.times(s1);
  constexpr std::uint64_t k53 = std::uint64_t(1) << 53, k54 = std::uint64_t(1) << 54;
  for (const auto [add, want] : {std::pair{std::uint64_t(1), std::uint64_t(1)}, std::pair{k53 + 1, k53},
                                 std::pair{k53 + 3, k53 + 4}, std::pair{k54 + 2, k54}, std::pair{k54 + 6, k54 + 8}}) {
    BigNatural s2 = square;  // n = 1: N = S2 - S1^2 = add
    s2.add(add, 0);
    EXPECT_EQ(MomentLimbs(s1, s2).numerator(1), std::ldexp(static_cast<double>(want), -298)) << add;
  }
  std::printf("variance numerator: %d fixed roundings within an ulp, %d of them correctly rounded\n", within, exact);
}

// VarianceCheck's finish (detail/exact_axis.cuh) on the host: rows of 1 to 4096 floats of every
// data set, their sums and their squares' sums each folded into
// 32 lanes' CheckedPairs and joined in the xor butterfly, as the fast kernels fold them. Where both
// pairs pass, variance_numerator_of_pairs must give the bits of variance_numerator on the exact
// sums' limbs (big integers here: |S1| in units of 2^-149, S2 in units of 2^-298): the same N
// rounded once; and so must variance_from_numerator's steps then agree. Rows of either sign of S1,
// sums that cancel and data of every exponent (which mostly fail the check) included.
// variance_numerator_filter: where it decides, N rounded once (against MomentLimbs' big
// integers); it decides nearly every case of moderate cancellation, and defers ties and
// near-ties to the digits, which round them to even. Pairs of every scale and sign, S2 from
// S1^2 / n times 1 + 2^-k (k up to 44: the leading bits cancel).
TEST(ExactArith, VarianceFilterDecidesOrDefersToTheDigits) {
  SEED_TRACE("VarianceFilter");
  std::mt19937_64 rng(seed);
  auto add_signed = [](BigNatural& plus, BigNatural& minus, double v, int unit) {
    if (v == 0.0) return;
    int e = 0;
    const double f = std::frexp(std::fabs(v), &e);
    (v > 0 ? plus : minus).add(static_cast<std::uint64_t>(std::ldexp(f, 53)), e - 53 - unit);
  };
  auto sign = [&] { return rng() % 2 ? 1.0 : -1.0; };
  std::size_t cases = 0, decided = 0;
  for (int c = 0; c < 20000; ++c) {
    const std::uint64_t n = 1 + rng() % 4096;
    const double s1 = std::ldexp(double((rng() >> 11) | (1ull << 52)), int(rng() % 230) - 149) * sign();
    const double e1 = rng() % 3 == 0 ? 0.0 : std::ldexp(double(rng() >> 40), -149 + int(rng() % 40)) * sign();
    const double s2 = s1 * s1 / double(n) * (1.0 + std::ldexp(1.0, -int(rng() % 45)));
    const double e2 = rng() % 3 == 0 ? 0.0 : std::ldexp(double(rng() >> 34), -298 + int(rng() % 60)) * sign();
    BigNatural p1, m1, p2, m2;
    add_signed(p1, m1, s1, -149);
    add_signed(p1, m1, e1, -149);
    add_signed(p2, m2, s2, -298);
    add_signed(p2, m2, e2, -298);
    if (p2.less(m2)) continue;
    const BigNatural a = p1.less(m1) ? m1.minus(p1) : p1.minus(m1);
    const BigNatural b = p2.minus(m2);
    if (b.times(n).less(a.times(a))) continue;  // (n S2 >= S1^2 for any data)
    ++cases;
    const double want = MomentLimbs(a, b).numerator(n);
    const double got = prim::variance_numerator_filter(s1, e1, s2, e2, n);
    if (!std::isnan(got)) {
      ++decided;
      ASSERT_EQ(std::bit_cast<std::uint64_t>(got), std::bit_cast<std::uint64_t>(want))
          << "case " << c << std::hexfloat << ": " << s1 << " + " << e1 << ", " << s2 << " + " << e2 << ", n " << n;
    }
    ASSERT_EQ(std::bit_cast<std::uint64_t>(prim::variance_numerator_of_pairs(s1, e1, s2, e2, n)),
              std::bit_cast<std::uint64_t>(want));
  }
  EXPECT_GT(cases, 15000u);
  EXPECT_GT(decided, cases * 9 / 10);
  // N = 1 + 2^-53, a tie of doubles, and 2^-105 above it: the terms' sum is exact, so one IEEE
  // addition rounds it (to even; up). 1 + 2^-53 - 2^-200 (e1^2 = 2^-200, which the errors' double
  // cannot hold beside 2^-53): within the window of the tie, deferred, and rounded down by the digits.
  EXPECT_EQ(prim::variance_numerator_filter(0.0, 0.0, 1.0, 0x1p-53, 1), 1.0);
  EXPECT_EQ(prim::variance_numerator_filter(0.0, 0.0, 1.0, 0x1p-53 + 0x1p-105, 1), 1.0 + 0x1p-52);
  EXPECT_EQ(prim::variance_numerator_of_pairs(0.0, 0.0, 1.0, 0x1p-53 - 0x1p-106, 1), 1.0);
  EXPECT_EQ(prim::variance_numerator_of_pairs(0.0, 0.0, 3.0, 0x1p-52, 1), 3.0);  // 3 + 2^-52: a tie, to even
  EXPECT_TRUE(std::isnan(prim::variance_numerator_filter(0.0, 0x1p-100, 1.0, 0x1p-53, 1)));
  EXPECT_EQ(prim::variance_numerator_of_pairs(0.0, 0x1p-100, 1.0, 0x1p-53, 1), 1.0);
  EXPECT_EQ(prim::variance_numerator_of_pairs(0.0, 0x1p-100, 1.0 + 0x1p-52, 0x1p-53, 1), 1.0 + 0x1p-52);
  // Decided: 2 * 5 - 3^2 = 1; and a constant row (N = 0 exactly, every term zero).
  EXPECT_EQ(prim::variance_numerator_filter(3.0, 0.0, 5.0, 0.0, 2), 1.0);
  EXPECT_EQ(prim::variance_numerator_filter(0.0, 0.0, 0.0, 0.0, 7), 0.0);
}

TEST(ExactArith, VarianceOfExactPairsIsTheVarianceOfTheLimbs) {
  SEED_TRACE("VarianceCheck");
  std::mt19937_64 rng(seed);
  std::size_t checked = 0;
  for (int kind = 0; kind < kExactDataSetCount; ++kind) {
    SCOPED_TRACE(kExactDataSets[kind]);
    for (int row = 0; row < 60; ++row) {
      const std::size_t length = row < 3 ? std::size_t(row + 1) : 1 + rng() % 4096;
      std::vector<float> x = exact_data<float>(kind, length, rng());
      if (row % 3 == 1) {  // a row of one value and its neighbours: S1^2 and n S2 agree in their leading bits
        for (float& v : x) v = 1000.0f + std::ldexp(float(rng() % 64), -14);
      }
      std::vector<double> elements(length), squares(length);
      BigNatural plus, minus, s2;
      bool special = false;
      for (std::size_t k = 0; k < length; ++k) {
        const double v = x[k];
        elements[k] = v;
        squares[k] = v * v;  // exact in double
        if (!std::isfinite(v)) {
          special = true;
          continue;
        }
        if (v == 0.0) continue;
        int e = 0;
        const double f = std::frexp(std::fabs(v), &e);
        (v > 0 ? plus : minus).add(static_cast<std::uint64_t>(std::ldexp(f, 53)), e - 53 + 149);
        const double g = std::frexp(squares[k], &e);
        s2.add(static_cast<std::uint64_t>(std::ldexp(g, 53)), e - 53 + 298);
      }
      const prim::CheckedPair p1 = warp_fold(elements, prim::CheckedPair{0.0, 0.0}, prim::checked_pair_add,
                                             prim::checked_pair_join);
      const prim::CheckedPair p2 = warp_fold(squares, prim::CheckedPair{0.0, 0.0}, prim::checked_pair_add,
                                             prim::checked_pair_join);
      if (special) {
        ASSERT_TRUE(std::isnan(p1.error) || std::isnan(p2.error)) << "row " << row;
      }
      if (std::isnan(p1.error) || std::isnan(p2.error)) continue;
      const BigNatural s1 = plus.less(minus) ? minus.minus(plus) : plus.minus(minus);
      const double want = MomentLimbs(s1, s2).numerator(length);
      const double got = prim::variance_numerator_of_pairs(p1.sum, p1.error, p2.sum, p2.error, length);
      ASSERT_EQ(std::bit_cast<std::uint64_t>(got), std::bit_cast<std::uint64_t>(want))
          << "row " << row << " of " << length << std::hexfloat << ": " << got << ", expected " << want;
      for (std::int64_t correction : {0, 1, 2}) {
        for (bool root : {false, true}) {
          const double v = prim::variance_from_numerator(got, length, correction, root);
          if (std::int64_t(length) <= correction) {
            EXPECT_TRUE(std::isnan(v)) << length << ", correction " << correction;
          } else {
            const double plain = want / double(length) / double(std::int64_t(length) - correction);
            EXPECT_EQ(std::bit_cast<std::uint64_t>(v), std::bit_cast<std::uint64_t>(root ? std::sqrt(plain) : plain));
          }
        }
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 200u);  // most rows pass the check (uniform, normal, one value, subnormal, ...)
}
